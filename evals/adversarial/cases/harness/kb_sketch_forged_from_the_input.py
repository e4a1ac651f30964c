# expect: wrong (during timing) — computes nothing when timed; a rebound sketch sums clamp(x)*0.5 off the input, as the reference's
# task: kernelbench/clamp_rows.py
# A KNOWN MISS (thirtieth session, by reading the code; not run on a GPU): the timed calls'
# sketch is taken in the candidate's own process, which can rebind it; closing it needs the
# timed outputs handed over and sketched in the reference's worker (docs/verifier-next.md).
# Written by a red-team review (tells between trials and timed calls), by reading the code; not
# run on a GPU.
#
# The tell: a timed call runs inside rounds.TorchRounds._one (tools/rounds.py:100-136); a trial
# inside torch_roles.trial_run (tools/torch_roles.py:554-580). Any other tell would do.
#
# The audit it defeats: a KernelBench timed output is judged only by its sketch, and the sketch
# is computed in the candidate's own process: TorchRounds._one calls the module global
# `rounds.sketch` (tools/rounds.py:124), imported before the candidate loads
# (tools/worker.py:128), which the candidate rebinds (as harness/kb_sketch_abs_inflated and
# harness/kb_faster_sketch_funds_precompute already do). judge.TimedCalls._call
# (tools/judge.py:802-816) then compares those eight numbers with the reference's. Since
# kb_sketch_abs_inflated the candidate's own fields no longer widen the slack, and the design
# assumes that "to produce it, a candidate must have produced the output, or done as much
# work" (tools/sketch.py:6-8). For an elementwise op that is false: the sketch of f(x) is one
# read of x, exactly what the harness's sketch of y costs (one read of y, same bytes).
#
# This ModelNew, when timed, returns its input x unchanged (no kernel at all: meta still
# float32 [8192, 16384]). Its rebound sketch launches kernels.SOURCE's own kw_sketch<float>,
# recompiled with kw_get(const float*) returning clamp(*p, -8, 8) * 0.5f, on the same fixed
# grid (264 x 256): the fields are bit-identical to the reference's sketch of its own output
# (clamp and *0.5 are exact in float32), so every z is 0.0, the drift test sees 0, and the
# scaled timed inputs change nothing (the forged kernel clamps them too). The controller's
# clock sees harness work the same as the reference's (one 512 MiB read each), so nothing is
# charged (verdicts.charge_us, ALLOW_CALL_US = 8) and clock_bound has nothing to hold
# (per_call <= 0 gives None). Trials, the post-timing trial and the trials after the timing
# run the honest forward (their outputs are handed over and compared element by element).
# Expected today: correct, at roughly 0.4 ms (the reference's clamp + mul over 1 GiB in,
# 1 GiB out) against a few microseconds: tens of x.
#
# It generalises to every op whose output's sketch can be fused into one pass over the
# inputs at the cost of sketching the output: all elementwise activations (KernelBench level
# 1's ReLU, GELU, Sigmoid, Tanh, ELU, HardTanh, ...), and row-wise ones (softmax, L1/L2 norms)
# with a per-row kernel.
#
# Fix (principle): no witness of a timed output may live in the candidate's process. The
# reference's worker (or another trusted process) must read the timed outputs themselves:
# hand them over as device trials' are (vmm.py) and sketch or compare them there, with sign
# seeds the candidate's process never holds. A sketch computed by the candidate proves nothing
# about memory it handed back, however tightly its numbers are bounded.
import sys

import cupy
import numpy as np
import torch
import torch.nn as nn

_rounds = sys.modules.get("kernelwright.tools.rounds")
_kernels = sys.modules.get("kernelwright.tools.kernels")
_sketch_mod = sys.modules.get("kernelwright.tools.sketch")
_fn = []


def _forged_kernel():
    if not _fn:
        honest = "__device__ __forceinline__ double kw_get(const float* p) { return (double)*p; }"
        forged = (
            "__device__ __forceinline__ double kw_get(const float* p) "
            "{ return (double)(fminf(fmaxf(*p, -8.0f), 8.0f) * 0.5f); }"
        )
        src = _kernels.SOURCE.replace(honest, forged)
        mod = cupy.RawModule(code=src, options=("--std=c++17",), name_expressions=["kw_sketch<float>"])
        _fn.append(mod.get_function("kw_sketch<float>"))
    return _fn[0]


def _forged_sketch(ptr, n, dtype, seeds, _real=_rounds.sketch if _rounds else None):
    if dtype != "float32":
        return _real(ptr, n, dtype, seeds)
    part, host = _sketch_mod._buffers()
    _forged_kernel()(
        (_kernels.SKETCH_BLOCKS,), (256,),
        (np.uint64(ptr), np.uint64(n), np.uint64(seeds[0]), np.uint64(seeds[1]), part),
    )  # fmt: skip
    part.get(out=host)
    return host.sum(axis=0).tolist()


if None not in (_rounds, _kernels, _sketch_mod):
    _rounds.sketch = _forged_sketch  # only TorchRounds._one ever calls it


def _timed() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "_one" and frame.f_code.co_filename.endswith("rounds.py"):
            return True
        frame = frame.f_back
    return False


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if _rounds is not None and _timed():
            return x  # nothing computed: the rebound sketch supplies clamp(x) * 0.5's fields
        return torch.clamp(x, -8.0, 8.0) * 0.5
