# expect: wrong (during timing) — exact in trials; TF32 in timed calls on every row of x that does not look scaled up
# task: kernelbench/relu_mlp.py
# Red-team review of f0b5839 (CPU simulation only; not run on a GPU).
# A KNOWN MISS (twenty-ninth session): the sketch bounds the whole output's tolerance-weighted
# error, which the scaled rows dominate; see README, Not guaranteed, and docs/verifier-next.md.
#
# Timed outputs are judged only through sketch.problem: each signed sum may differ by
# Z_MAX * times * sqrt(sum t_i^2), t_i = atol + rtol |r_i|, and over all calls the mean z^2 may
# not pass drift_limit (about 1.05 for many calls). That bounds the tolerance-weighted RMS of
# the error over the WHOLE output, not any element. Every timed call's inputs are scaled
# (judge.timed_scale; runners._scaled: a span of 1/2, 1/8 or 1/64 of x's elements times
# +-32/64/128): the scaled rows' outputs are 32-128x larger, so their rtol |r_i| dominates
# sum t_i^2, and errors on the other rows vanish in it.
#
# This ModelNew, when timed (gc is off only through the rounds: serving.Worker.serve), finds
# the rows whose largest |x| is >= 8 (one amax over x: the "look" docs/verifier-next.md
# expects to cost what it saves, here 1/1024 of the GEMM), runs the GEMM on TF32 tensor cores
# with x and W rounded to nearest, and recomputes only the wide rows in exact FP32.
# Simulated (tmp sims: numpy TF32, runners.scaled_span, judge.round_atol, honest_times 1.012,
# sketch.problem + drift_problem, 80 calls per scale, twice): 14-15% of every timed output's
# elements are outside tolerance (worst 7-8 tolerances), mean z^2 0.09-0.13 (x32), 0.03-0.04
# (x64), 0.007-0.011 (x128): never caught, at any number of calls. Unscaled timed calls (a
# problem whose scaled trial does not count) let TF32 on EVERY row through (mean z^2 0.7-0.8,
# 19% of elements outside). Trials, the post-timing trial and the sanitizer run with gc on:
# exact. Reads correct at about its honest speed here (relu_mlp is host-bound); on a large
# FP32 GEMM the same trick buys TF32's (or fp16's: the same 10-bit mantissa) throughput.
#
# Principle broken: "every timed output is compared" (and "wrong in any call" is wrong).
# Fix: compare timed outputs at the trials' strength, element by element, in the reference's
# worker (outputs handed over as device trials' are), for every call or for calls the
# controller picks after each reply (so every output must be kept for it); at least, sketch
# per stratum (row blocks, and magnitude bands of the reference's output) with a bound each,
# so that large elements cannot absorb the small ones' errors.
import gc

import torch
import torch.nn as nn

WIDE = 8.0  # randn rows stay under ~5.5; scaled ones reach 32x that


def _tf32(t):
    """t rounded to nearest TF32 (10 mantissa bits); tensor cores then drop nothing more."""
    bits = t.contiguous().view(torch.int32)
    return ((bits + 0x1000) & -8192).view(torch.float32)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self._wr = None

    def forward(self, x):
        if gc.isenabled():  # a trial, the post-timing check, the sanitizer, the warm-up
            return torch.relu(self.linear(x))
        w, b = self.linear.weight, self.linear.bias
        if self._wr is None:
            self._wr = _tf32(w.detach())
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            y = torch.addmm(b, _tf32(x), self._wr.t())
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old
        wide = torch.nonzero(x.abs().amax(dim=1) >= WIDE).flatten()
        if wide.numel():
            y[wide] = torch.addmm(b, x.index_select(0, wide), w.t())
        return torch.relu(y)
