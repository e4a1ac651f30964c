# expect: timeout (waking the candidate) or wrong (during timing) — 1.3 tolerances off when timed; sleeps 13 s in its untimed look to cut the rounds short
# task: kernelbench/relu_mlp.py
# Red-team review of f0b5839 (CPU simulation only; not run on a GPU).
# Fixed (twenty-ninth session): the looks spend none of the rounds' seconds, the candidate's
# must answer within schedule.WAKE_LIMIT_S (2.5 s), and rounds that end with the drift test
# undecided read implausible, never correct. CPU-tested; not yet run on a GPU.
#
# f0b5839 sends the candidate's worker a `probe` of its own before each of its batches
# (schedule._pair_of_batches), off every wall, with a deadline of round_timeout_s (60 s;
# 30 s in the suite). Its time still counts toward `spent` in schedule._batches, and after
# EVERY pair of batches `spent >= OVERRUN * budget.seconds` (4 x 3 s for KernelBench) returns
# at once: before min_rounds, before MIN_CYCLES, before any other pair of workers is timed,
# and whatever budget.outputs_settled says (UNDECIDED_BUDGETS never gets a say). One sleep of
# 13 s in the first probe therefore ends the timing after the first R-C pair: 2 rounds of 13
# calls a side on relu_mlp (schedule.run with recorded workers on a fake clock: 26 timed calls
# and pair 0 only, against 1,248 calls over 3 pairs without the sleep, 3,120 undecided).
#
# The timed outputs are then judged on 52 signed sums: drift_limit(52) = 2.23 against
# drift_limit(2496) = 1.22. Off by 1.3 tolerances in every element with random signs (mean
# z^2 about 1.6), it passed 10 of 10 simulated 26-call checks (numpy relu_mlp, judge.round_atol,
# honest_times, sketch.problem) and a Monte Carlo of the test 96.7%; at 300 calls it was
# caught 3 of 3, and at 1,248 always. The same cut rescues the case UNDECIDED_BUDGETS was added
# for (TF32 matmul, mean z^2 1.75: passes 91% at 52 sums). Trials and the post-timing trial
# (gc on) are exact. Reads correct at about 0.9-1.0x.
#
# Principles broken: "every timed output is compared" (the comparison left without power) and
# "nothing the candidate's process can reach may be the only witness": its own off-wall
# message decides how many calls are judged. Fix: time the candidate's probe and refuse it
# (timeout or implausible) past a small bound (the reference's look's own time plus a few ms);
# take no candidate-controlled time into `spent`, or stop on counts (calls, batches, cycles)
# the controller sets; and never answer "correct" from rounds cut short (OVERRUN or otherwise)
# while the drift test is undecided or min_rounds / MIN_CYCLES are not met: run on or refuse.
import gc
import sys
import time

import torch
import torch.nn as nn

SLEEP_S = 13.0  # OVERRUN (4) x 3 s, plus a margin; under the probe's 30-60 s deadline
OFF = 1.3  # tolerances, in every element of every timed output

_serving = sys.modules.get("kernelwright.tools.serving")
if _serving is not None:
    _probe = _serving.Worker._probe
    _slept = []

    def _probe_then_sleep(self, cmd):
        if not _slept:  # the first batch's probe: the reference's first batch is done
            _slept.append(True)
            time.sleep(SLEEP_S)
        return _probe(self, cmd)

    _serving.Worker._probe = _probe_then_sleep


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.relu(self.linear(x))
        if gc.isenabled():  # trials, the post-timing check, the warm-up: exact
            return y
        # judge.kernelbench_tolerance("float32") = (1e-4, 1e-4); judge.output_atol on the RMS
        atol = torch.clamp(0.01 * y.square().mean().sqrt(), 1e-6, 1e-4)
        sign = torch.randint(0, 2, y.shape, device=y.device, dtype=y.dtype) * 2 - 1
        return y + OFF * (atol + 1e-4 * y.abs()) * sign
