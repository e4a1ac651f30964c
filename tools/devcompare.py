"""A large trial's outputs compared on the GPU, in the reference's worker.

The candidate's worker runs the trial in memory it can hand over (vmm.py), unmaps it, and sends
the handles through the controller; the reference's worker, which kept its own outputs of the
same trial on the GPU, maps the candidate's and reduces the pair to the facts a comparison
needs (correctness.facts, the controller's own code, run with CuPy). Only those facts reach
the controller, which alone words the verdict (correctness.outcome), as it does for the trials
it compares itself. The candidate's process never sees the reference's outputs, and by the
time they are compared it can no longer reach its own.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .serving import Worker


def compare_here(worker: Worker, trial: int, kept: list[Any]) -> None:
    """Serve the controller's comparisons of `trial` until it says "next": each "compare"
    comes with one memory handle per output of one run (of one candidate process), and is
    answered with each output's facts (or what kept it from being read). A run marked "hold"
    stays mapped for the next one, marked "agree": the two runs are also compared with each
    other (as correctness.runs_agree compares them on the host). `kept` is freed after."""
    held: list[Any] = []
    try:
        while True:
            cmd = worker.command()
            if cmd.get("cmd") == "next" and cmd.get("trial") == trial:
                return
            if cmd.get("cmd") != "compare" or cmd.get("trial") != trial:
                raise ValueError(
                    f"expected the comparison of trial {trial}, got {cmd.get('cmd')!r}"
                )
            held = _compare_run(worker, trial, kept, cmd, held)
    finally:
        _unmap(held)
        kept.clear()


def _compare_run(
    worker: Worker, trial: int, kept: list[Any], cmd: dict[str, Any], held: list[Any]
) -> list[Any]:
    """One run's outputs, mapped, compared with `kept` (and with `held`, the previous run's,
    when the command says "agree"), answered; what the next run is compared with returned."""
    import cupy

    outputs = cmd["outputs"]
    if len(outputs) != len(kept):
        raise ValueError(f"{len(outputs)} outputs to compare, {len(kept)} kept")
    fds = worker.receive_fds(len(outputs))
    device = cupy.cuda.Device().id
    found: list[dict[str, Any]] = []
    agreed: list[dict[str, Any]] = []
    mapped: list[Any] = []
    try:
        for j, (exp, want, fd) in enumerate(zip(kept, outputs, fds, strict=True)):
            got, why = _open(fd, want, device)
            mapped.append(got)
            if got is None:
                found.append({"problem": why})
                agreed.append({"problem": why})
                continue
            atol, rtol = float(want["atol"]), float(want["rtol"])
            arr = got[0]
            found.append(device_facts(arr, exp.reshape(arr.shape), atol, rtol))
            if cmd.get("agree"):
                before = held[j] if j < len(held) else None
                if before is None or before[0].shape != arr.shape:
                    agreed.append({"problem": "the previous run was not kept"})
                else:
                    agreed.append(device_facts(arr, before[0], atol, rtol))
    except BaseException:
        cupy.cuda.runtime.deviceSynchronize()
        _unmap(mapped)
        raise
    finally:
        cupy.cuda.runtime.deviceSynchronize()
        _unmap(held)
    reply: dict[str, Any] = {"type": "compared", "trial": trial, "facts": found}
    if cmd.get("agree"):
        reply["agreed"] = agreed
    if cmd.get("hold"):
        worker.send(reply)
        return mapped
    _unmap(mapped)
    worker.send(reply)
    return []


def _open(fd: int, want: dict[str, Any], device: int) -> tuple[Any, str]:
    """((array, mapping), "") for one output's memory handed over, or (None, why). bfloat16,
    which CuPy has no type for, is read as its bits and widened to float32 (exact)."""
    import cupy
    import numpy as np

    from . import vmm

    name = str(want["dtype"])
    bf16 = name == "bfloat16"
    dtype = np.dtype("uint16" if bf16 else name)
    shape = tuple(int(d) for d in want["shape"])
    size, offset = int(want["size"]), int(want["offset"])
    nbytes = math.prod(shape) * dtype.itemsize
    if offset < 0 or offset % dtype.itemsize or offset + nbytes > size or size > (1 << 40):
        os.close(fd)
        return None, f"its memory does not hold it ({offset=}, {size=})"
    try:
        mapping = vmm.open_fd(fd, size, device)
    except vmm.VmmError as exc:
        return None, f"its memory could not be mapped ({exc})"
    memory = cupy.cuda.UnownedMemory(mapping.ptr, mapping.size, mapping)
    got = cupy.ndarray(shape, dtype, cupy.cuda.MemoryPointer(memory, offset))
    if bf16:
        got = (got.astype(cupy.uint32) << 16).view(cupy.float32)
    return (got, mapping), ""


def _unmap(mapped: list[Any]) -> None:
    for m in mapped:
        if m is not None:
            m[1].unmap()
    mapped.clear()


BLOCKS, THREADS = 264 * 4, 256


def device_facts(got: Any, expected: Any, atol: float, rtol: float) -> dict[str, Any]:
    """correctness.facts(cupy, ...) in one pass of one harness kernel (kernels.py), which the
    workers load before their job: CuPy's own operations would each build a kernel the first
    time, seconds within a check. Same facts, to the bit (tests/gpu/test_devcompare_gpu.py)."""
    import cupy
    import numpy as np

    from . import correctness, kernels

    g, e = got.reshape(-1), expected.reshape(-1)
    size = int(g.size)
    pair = (str(g.dtype), str(e.dtype))
    n = np.uint64(size)
    if g.dtype.kind in "iub" and pair[0] == pair[1] and pair[0] in kernels.COMPARE_EXACT:
        s = cupy.array([0, 2**64 - 1], dtype=cupy.uint64)
        kernels.function(kernels.COMPARE_EXACT[pair[0]])((BLOCKS,), (THREADS,), (g, e, n, s))
        bad, first = (int(v) for v in s.get())
        if not bad:
            return {"kind": "int", "n_bad": 0, "size": size}
        got_v, exp_v = g[first].item(), e[first].item()
        return {
            "kind": "int",
            "n_bad": bad,
            "size": size,
            "first": first,
            "got": got_v,
            "exp": exp_v,
        }
    if pair not in kernels.COMPARE or size == 0:
        return correctness.facts(cupy, got, expected, atol, rtol)
    work = np.dtype(correctness._work(g.dtype, e.dtype))
    w_atol, w_rtol = work.type(atol), work.type(rtol)
    rel = size <= correctness.LARGE
    s = cupy.zeros(9, dtype=cupy.uint64)
    s[2:4] = 2**64 - 1
    args = (g, e, n, w_atol, w_rtol, np.int32(rel), s)
    kernels.function(kernels.COMPARE[pair])((BLOCKS,), (THREADS,), args)
    stats = [int(v) for v in s.get()]

    def real(bits: int) -> float:
        return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])

    max_abs = real(stats[4]) if stats[5] else float("nan")
    max_rel = (real(stats[6]) if stats[7] else None) if rel else None
    out: dict[str, Any] = {"kind": "float", "n_bad": stats[0], "size": size}
    if not stats[0]:
        return {**out, "max_abs": max_abs, "max_rel": max_rel}
    if stats[1]:
        return {**out, "n_nan": stats[1], "first": stats[3]}
    where = cupy.array([2**64 - 1], dtype=cupy.uint64)
    worst_args = (g, e, n, w_atol, w_rtol, np.uint64(stats[8]), where)
    kernels.function(kernels.COMPARE_WORST[pair])((BLOCKS,), (THREADS,), worst_args)
    worst = int(where.get()[0])
    g_w, e_w = work.type(g[worst].item()), work.type(e[worst].item())
    with np.errstate(invalid="ignore", over="ignore"):
        err = abs(g_w - e_w) if not (np.isinf(g_w) and g_w == e_w) else work.type(0)
    return {
        **out,
        "first": stats[2],
        "worst": worst,
        "err": float(err),
        "got": float(g_w),
        "exp": float(e_w),
        "max_abs": max_abs,
        "max_rel": max_rel,
    }
