# expect: correct (speedup 0-1.15) or implausible — sketches on 4x the harness's grid, skips the flush, spends what that saved on rows before the call
# task: kernelbench/clamp_rows.py
# Written by a red-team review (twenty-eighth session, by reading the code; not yet run on a
# GPU: how much it gains depends on the sketch's speed there, which it measures itself).
#
# verdicts.py charges a candidate only for wall time beyond its samples *and beyond the
# reference's harness time on the same calls* ((cw - cs) - (rw - rs), timing.unexplained_us),
# and clock_bound credits it the same. But the harness of a KernelBench round runs in the
# candidate's own process (rounds.TorchRounds: fresh_inputs, Clock.ready, the call, then
# sketch.sketch over every output), so whatever harness work its process does faster or not at
# all is hidden work it may do for free. README's "Not guaranteed" grants "whatever its
# process runs the harness's host work faster", sized by the host-bound kb_busy_during_warmup;
# the large share is device work that grows with the problem:
#   - sketch.sketch launches kw_sketch on a fixed grid of SKETCH_BLOCKS = 264 blocks of 256
#     threads (a quarter of an H100's or H200's resident threads) whose grid-stride loop waits
#     on each load in turn and hashes every element three times: over clamp_rows' 134M-element
#     output that is latency-bound, by the estimate well under a TB/s. The same kernel with four
#     times the blocks (full occupancy) gives the same fields to rounding (far inside the slack
#     sketch.problem allows), and rounds.TorchRounds._one calls the module global `sketch`,
#     which the candidate rebinds;
#   - Clock.ready's L2 flush (twice the L2 read) and its synchronize.
# It measures in the warm-up (whose calls are never compared: signs (1, 2)) what the two save
# against the harness's own, and what a row of its forward costs, then computes that many rows
# (80% of it) of each round's output while its worker makes the input (TorchRunner.
# fresh_inputs), leaving the rest to the timed call. Its outputs are right in every call and
# every trial; its forward is PyTorch's own two passes (an honest 1.0x). If the harness's
# sketch is as slow as estimated (~0.8 ms a call against the forward's ~0.5 ms), nearly every
# row is computed outside the timed window, uncharged: several times 1x.
#
# Fix (principled): credit no harness time that the candidate's process performs: move the
# sketch to the reference's worker (the timed outputs handed over as the trials' are, vmm.py),
# make the inputs outside the candidate's process (as README already calls for), and bound the
# candidate's call by the controller's clock less only what a process outside its reach spent.
import sys
import time

import numpy as np
import torch
import torch.nn as nn

CALIBRATION = 6  # warm-up calls timed both ways before deciding
_rounds = sys.modules.get("kernelwright.tools.rounds")
_runners = sys.modules.get("kernelwright.tools.runners")
_timing = sys.modules.get("kernelwright.tools.timing")
_kernels = sys.modules.get("kernelwright.tools.kernels")

_state = {"rows": 0, "orig": [], "fast": [], "flush": [], "row_ms": [], "bufs": None}
_ready = {}  # an input's address: (its output, rows already computed)


def _sync():
    torch.cuda.synchronize()


def _fast(ptr, n, dtype, seeds):
    import cupy

    blocks = _kernels.SKETCH_BLOCKS * 4
    if _state["bufs"] is None:
        shape = (blocks, _kernels.SKETCH_FIELDS)
        _state["bufs"] = (cupy.empty(shape, dtype=cupy.float64), np.empty(shape, np.float64))
    part, host = _state["bufs"]
    _kernels.function(_kernels.SKETCH[dtype])(
        (blocks,), (256,),
        (np.uint64(ptr), np.uint64(n), np.uint64(seeds[0]), np.uint64(seeds[1]), part),
    )  # fmt: skip
    part.get(out=host)
    return host.sum(axis=0).tolist()


def _decide():
    if min(len(_state["orig"]), len(_state["fast"]), len(_state["row_ms"])) < CALIBRATION:
        return
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    saved = med(_state["orig"]) - med(_state["fast"]) + med(_state["flush"] or [0.0])
    _state["rows"] = max(0, int(0.8 * saved / max(med(_state["row_ms"]), 1e-9)))


if None not in (_rounds, _runners, _timing, _kernels):
    _orig_sketch = _rounds.sketch

    def _sketch(ptr, n, dtype, seeds):
        if tuple(seeds) == (1, 2) and len(_state["orig"]) < CALIBRATION + 2:  # the warm-up
            _sync()
            t0 = time.perf_counter()
            got = _orig_sketch(ptr, n, dtype, seeds)
            t1 = time.perf_counter()
            _fast(ptr, n, dtype, seeds)
            t2 = time.perf_counter()
            _state["orig"].append((t1 - t0) * 1e3)
            _state["fast"].append((t2 - t1) * 1e3)
            _decide()
            return got
        return _fast(ptr, n, dtype, seeds)

    _rounds.sketch = _sketch

    _orig_ready = _timing.Clock.ready

    def _ready_skipped(self):
        if len(_state["flush"]) < CALIBRATION + 2:  # what the flush and its sync cost, once
            _sync()
            t0 = time.perf_counter()
            _orig_ready(self)
            _state["flush"].append((time.perf_counter() - t0) * 1e3)
            return
        # no flush, no synchronize: the harness's time, kept

    _timing.Clock.ready = _ready_skipped

    _fresh = _runners.TorchRunner.fresh_inputs

    def _fresh_and_some_rows(self, seed, *rest):
        inputs = _fresh(self, seed, *rest)
        rows = _state["rows"]
        x = inputs[0] if inputs else None
        if rows and isinstance(x, torch.Tensor) and x.is_cuda and x.dim() == 2:
            rows = min(rows, x.shape[0] - 1)  # at least one row left for the timed call
            with torch.no_grad():
                y = torch.empty_like(x)
                torch.clamp(x[:rows], -8.0, 8.0, out=y[:rows])
                y[:rows].mul_(0.5)
            _ready[x.data_ptr()] = (y, rows)
        return inputs

    _runners.TorchRunner.fresh_inputs = _fresh_and_some_rows


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        done = _ready.pop(x.data_ptr(), None)
        if done is not None:
            y, rows = done
            torch.clamp(x[rows:], -8.0, 8.0, out=y[rows:])
            y[rows:].mul_(0.5)
            return y
        if len(_state["row_ms"]) < CALIBRATION + 2 and x.dim() == 2 and x.is_cuda:
            _sync()
            t0 = time.perf_counter()
            y = torch.clamp(x, -8.0, 8.0) * 0.5
            _sync()
            _state["row_ms"].append((time.perf_counter() - t0) * 1e3 / x.shape[0])
            _decide()
            return y
        return torch.clamp(x, -8.0, 8.0) * 0.5
