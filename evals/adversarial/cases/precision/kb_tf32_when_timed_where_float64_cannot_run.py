# expect: wrong (during timing) — exact FP32 in trials, TF32 when timed, where the float64 forward cannot run
# task: kernelbench/relu_mm_plain_weight.py
# Closed in the thirtieth session (not yet run on a GPU): where the float64 forward cannot
# run, the trial's truth is the forward the reference times, so its miss is 0 and a timed
# call gets one tolerance (judge.reference_misses); the timed calls are judged by the
# misses of trials at their own inputs' scale (verify).
# Written by a red-team review (tells between trials and timed calls); NumPy simulation only,
# not run on a GPU (/tmp/redteam-tells/sim_k2.py). The task is a draft too (its file beside
# this one): any problem whose float64 forward raises or runs out of memory will do.
#
# The gap: judge.honest_times (tools/judge.py:696-709) lets each timed output be `times`
# tolerances from the reference's, 1 + the reference's measured miss of the trials' truth, and
# 2 "where its miss is not known". For KernelBench the miss is native_slack, sent only where
# the float64 forward ran (torch_roles._expected, tools/torch_roles.py:336-388); where it did
# not (an op or attribute without float64, or no room for it), the trials' truth IS the
# native forward that the reference's worker times (precision "PyTorch eager"), so the
# reference's miss is exactly 0, yet reference_misses records nothing (judge.py:686-687) and
# every timed call is judged with times = 2: four times the trials' budget in mean z^2.
# Here Model.double() leaves the plain attribute W in float32, `x.double() @ W` raises,
# _float64 returns None (torch_roles.py:164-165), and the scaled trial does not count either
# (judge.scaled_trial: "had no float64 to meet"), so the timed calls take get_inputs() as is.
#
# The tell: a timed call runs inside rounds.TorchRounds._one (any other tell would do).
# The careless path: x and W rounded to nearest TF32 (10-bit mantissa, as the suite's
# kb_tf32_where_the_timed_inputs_look_narrow does, so the tensor cores truncate nothing more)
# and the GEMM on TF32 tensor cores.
# Simulated (numpy, this problem's distributions, round_atol's atol 1e-4, rtol 1e-4,
# sketch.problem + drift_problem + drift_suspect from tools/sketch.py): 27% of every timed
# output's elements outside tolerance; mean z^2 0.46-0.49; 20/20, 20/20 and 6/6 checks pass at
# 32, 200 and 1000 calls. With times = 1.05 (the float64 miss measured) the same outputs read
# mean z^2 1.79: 16 of 20 caught at 32 calls already. Trials, post-timing and after-timing
# trials run exact FP32. Expected today: correct at about TF32's throughput against FP32's on
# a 4096^3 GEMM (some 4-6x on an H100/H200).
#
# A second route to the same inflation, on the suite's own relu_mlp: `misses` takes every
# trial's native_slack, the scaled ones included (verify.py, expected_for ->
# judge.reference_misses), and it is the WORST element's miss (torch_roles.native_slack), used
# as a multiplier on an RMS bound. Simulated (sim_slack.py, NumPy sgemm standing in for
# cuBLAS): relu_mlp's slack is 0.01 on its own inputs, 0.07-0.2 at x32, 0.2-0.4 at x64 and
# 0.35-0.88 at x128; with three scaled trials, one is x128 in 70% of checks: times 1.35-1.9.
#
# Fix (principle): the allowance for honest differences in a timed call is what the reference
# itself misses of the truth the trials hold the candidate to, measured on the timed calls'
# own inputs and in the sketch's own (RMS) terms: 0 where the truth is the reference's own
# forward; never a default of a whole tolerance where it is unmeasured.
import sys

import torch
import torch.nn as nn


def _timed() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "_one" and frame.f_code.co_filename.endswith("rounds.py"):
            return True
        frame = frame.f_back
    return False


def _tf32(t):
    bits = t.contiguous().view(torch.int32)
    return ((bits + 0x1000) & -8192).view(torch.float32)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = torch.randn(in_features, out_features) / in_features**0.5
        self._w32 = None

    def forward(self, x):
        self.weight = self.weight.to(x.device)
        if x.dtype != torch.float32 or not _timed():
            return torch.relu(x @ self.weight)  # trials: exact FP32, as the reference
        if self._w32 is None:
            self._w32 = _tf32(self.weight)
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return torch.relu(_tf32(x) @ self._w32)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old
