# expect: correct (speedup 0-1.15) or implausible — forges samples, then leaves a GPU spin that the reference's next probe waits out, on its wall clock
# task: kernelbench/relu_mlp.py
# Written by a red-team review (twenty-eighth session, by reading the code and simulating the
# controller's statistics on the CPU; not yet run on a GPU).
#
# The controller credits the candidate's worker with the reference's harness time, round by
# round: timing.unexplained_per_round_us takes (cw - cs) - (rw - rs), and
# verdicts.clock_bound sums cw - (rw - rs). The reference's rw is the controller's clock around
# the whole message (schedule._round), and the first message of every batch carries "probe":
# serving.Worker._probe, in the reference's worker, first waits (up to 2 s) until no other
# context holds the GPU. That wait is inside rw and outside rs, so it is counted as the
# reference's harness work, and credited to the candidate's round of the same index.
#
# Work a worker queued on the GPU keeps running while the controller has the worker SIGSTOPped.
# So a candidate that queues a 20 ms spin (one block, a side stream, after its round's sketch,
# outside its own timed window) at the end of a batch that the reference's batch follows at
# once makes that batch's first reference round 20 ms longer on the clock: a 20 ms credit.
# timing_notes only notes it ("the GPU was busy for a moment"); busy-GPU refusal (verdicts.
# timing, ref_settled_us > BUSY_US) needs the GPU still busy after 2 s.
#
# Which batches are those: the order is R C C R (schedule._batches: stint_orders), so the
# candidate's batch that begins with no pause since its previous batch ended is always the
# first of a (cand, ref) pair, and the reference's follows it at once. KernelBench batches are
# 16 calls (verify._budget: batch=16); a 0.15 ms forward gets 13 calls a round, so 2 rounds a
# batch (per_batch = max(2, ceil(16 / k))): the credited round is half of that batch's rounds.
#
# It forges its samples (x0.3) in those batches and in a random 28% of the others: a majority
# of rounds forged moves the median ratio (timing.speedup) to the forged level, while the
# credited rounds plus the honest ones are still a majority of unexplained times, so the median
# charge stays 0 (verdicts.charge_us); and the 20 ms credits outweigh every forged round in the
# clock's sum, so clock_bound does not hold the ratio (it returns None once the candidate's sum
# falls to nothing). A CPU simulation of verdicts.timing with this schedule (1 and 3 processes
# a side, 20 seeds each, 0.15 ms forward, 0.35 ms harness a call) read 3.1 to 3.3x with nothing
# charged in 37 of 40 runs (the others 1.06 to 2.1x), never implausible; without the spin the
# same forging was refused as implausible in every run.
#
# Fix (principled): nothing the candidate can leave behind may lengthen the reference's clock:
# time the probe as its own message outside the walls (or have the reference's worker report
# how long it waited and subtract it, its word being trusted), and refuse the timing, as work
# left running, whenever the reference's first empty launch after a candidate batch found the
# GPU busy (ref_quiet_us > BUSY_US), not only when it never settled.
import random
import sys
import time

import torch
import torch.nn as nn

SPIN_CYCLES = 40_000_000  # about 20 ms at an H100's or H200's clocks (torch.cuda._sleep)
NO_PAUSE_S = 0.0025  # a reference batch between two of its own takes 5 ms or more
EXTRA = 0.28  # share of the other batches forged too, so that most rounds are

_state = {
    "in_batches": False,  # the first probe seen: the warm-up is over
    "last_end": 0.0,  # when its last round ended
    "count": 0,  # calls in this batch so far
    "batch_len": 0,  # calls a batch, learnt from the first whole batch
    "forge": False,
    "spin_at_end": False,
    "side": None,
}

_serving = sys.modules.get("kernelwright.tools.serving")
_timing = sys.modules.get("kernelwright.tools.timing")
_rounds = sys.modules.get("kernelwright.tools.rounds")

if _serving is not None and _timing is not None and _rounds is not None:
    _probe = _serving.Worker._probe

    def _probe_and_plan(self, cmd):
        # a batch's first call carried "probe" until the twenty-eighth session; since, a
        # message of its own does: either way, a batch begins here
        if cmd.get("probe") and cmd.get("cmd") in ("round", "probe"):
            now = time.perf_counter()
            if _state["in_batches"] and _state["count"]:
                _state["batch_len"] = _state["batch_len"] or _state["count"]
            no_pause = _state["in_batches"] and now - _state["last_end"] < NO_PAUSE_S
            _state["forge"] = no_pause or random.random() < EXTRA
            _state["spin_at_end"] = no_pause
            _state["in_batches"], _state["count"] = True, 0
        return _probe(self, cmd)

    _serving.Worker._probe = _probe_and_plan

    _timed = _timing.Clock.timed

    def _maybe_forged(self, fn):
        ms, host_ms = _timed(self, fn)
        if _state["in_batches"] and _state["forge"]:
            return ms * 0.3, host_ms * 0.3
        return ms, host_ms

    _timing.Clock.timed = _maybe_forged

    _round = _rounds.TorchRounds.round

    def _round_then_spin(self, seed, signs):
        reply = _round(self, seed, signs)  # timed, device-synchronized, sketched
        if _state["in_batches"]:
            _state["count"] += 1
            last = _state["batch_len"] and _state["count"] == _state["batch_len"]
            if last and _state["spin_at_end"]:
                if _state["side"] is None:
                    _state["side"] = torch.cuda.Stream()  # non-blocking: nothing waits on it
                with torch.cuda.stream(_state["side"]):
                    torch.cuda._sleep(SPIN_CYCLES)  # still running as the reference's probe looks
        _state["last_end"] = time.perf_counter()
        return reply

    _rounds.TorchRounds.round = _round_then_spin


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
