"""Whether a CUDA task's check fits this machine, said before any worker starts (pure).

A check holds, at once: both workers' arrays at a trial's sizes (the reference's with float64
copies of its float inputs and outputs where the task has a Python reference), both workers' L2
flush buffers, and a CUDA context each; every worker copies a trial's outputs to the host once;
the controller keeps every trial's expected outputs and compares one trial's outputs at a
time. Past what the GPU or the host can give, the check would end in an out-of-memory kill:
instead it is one line saying what is needed, where, and what there is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .cuda_roles import reference_dtype
from .spec import CudaTask

GIB = 1 << 30
CONTEXT_BYTES = 600 << 20  # a CUDA context with CuPy's kernels loaded, per worker
WORKER_HOST_BYTES = 1 << 30  # a worker's own Python, CuPy and CUDA libraries
_ITEMSIZE = {
    "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1, "bool": 1,
    "int16": 2, "int32": 4, "int64": 8, "uint32": 4, "uint64": 8,
}  # fmt: skip


@dataclass(frozen=True)
class Needs:
    gpu_bytes: int  # both workers at once, at the sizes that need the most
    worker_host_bytes: int  # one worker, at its largest trial
    controller_bytes: int  # the expected outputs kept, and one trial compared
    at: str  # the sizes that need the most GPU memory


def _sizes(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "the bench size"


def needs(task: CudaTask, trials: Sequence[dict[str, int]], flush_bytes: int) -> Needs:
    """What checking `task` over these trials' sizes (and its bench size) takes."""
    gpu, at, worker, kept, compare = 0, "", 0, 0, 0
    for sizes in [*trials, task.bench]:
        ins = outs = ins64 = outs64 = sent = 0
        for a in task.args:
            if a.role == "scalar":
                continue
            elems = math.prod(task.shape(a, sizes))
            nbytes = elems * _ITEMSIZE.get(a.dtype, 8)
            floating = a.dtype in ("float16", "bfloat16", "float32", "float64")
            if a.role in ("in", "inout"):
                ins += nbytes
                ins64 += elems * 8 if floating and task.reference_python else 0
            if a.role in ("out", "inout"):
                outs += nbytes
                wide = floating and task.reference_python
                outs64 += elems * 8 if wide else nbytes
                travels = reference_dtype(a.dtype, elems) if task.reference_python else a.dtype
                sent += elems * _ITEMSIZE.get(travels, 8)
        # the reference's worker: inputs, their float64 copies, the result and a temporary
        reference = ins + ins64 + 2 * outs64 if task.reference_python else ins + outs
        total = reference + ins + outs + 2 * (flush_bytes + CONTEXT_BYTES)
        if total > gpu:
            gpu, at = total, _sizes(sizes)
        worker = max(worker, WORKER_HOST_BYTES + sent + outs)
        kept += sent
        compare = max(compare, 6 * outs)  # two runs, and float64 temporaries of one
    return Needs(gpu, worker, kept + compare, at)


# What a check holds, for each task kind whose arrays are all declared, by `task.kind`. Not a
# KernelBench problem: its tensors are its own get_inputs()' to make, unknown until it runs
# (its reference's worker sizes them on PyTorch's meta device first: `MEASURED`).
NEEDS: dict[str, Callable[[Any, Sequence[dict[str, int]], int], Needs]] = {"cuda": needs}

_SIZED_KEYS = ("in", "in64", "out", "out64", "w", "w64")
MARGIN_BYTES = 1 << 30  # the forwards' own temporaries (workspaces, intermediates), unknown


def kernelbench_needs(
    sized: Sequence[Any], trials: Sequence[dict[str, int]], flush_bytes: int
) -> Needs | None:
    """What a KernelBench check holds at once, from its reference's sizing of each trial
    (torch_roles.sized: bytes of inputs, outputs and weights, as they are and in float64), or
    None where no trial was sized (pure). Each worker's memory cache holds its largest trial's
    weights, inputs and outputs. The reference's forward of a trial may run while the candidate
    runs its own; then, while the candidate's runs are compared, the reference keeps its
    outputs (in float64 only where that leaves room, torch_roles) and up to two runs' copies
    handed over (a run waits for the one before to be compared: serving.Worker.handed_over).
    The larger of the two, beside a further L2 flush buffer and the forwards' temporaries.
    Contexts and the reference's own buffers are already out of the free memory this is held
    to."""
    known = [
        (dict(s), dict(sizes))
        for s, sizes in zip(sized, trials, strict=False)
        if isinstance(s, dict) and all(type(s.get(k)) is int and s[k] >= 0 for k in _SIZED_KEYS)
    ]
    if not known:
        return None
    cache, at = max((s["w"] + s["in"] + s["out"], _sizes(z)) for s, z in known)
    out = max(s["out"] for s, _ in known)
    running = cache + cache  # both forwards at once
    comparing = out + cache + 2 * out  # the kept outputs, the candidate's, two runs' copies
    return Needs(
        gpu_bytes=max(running, comparing) + flush_bytes + MARGIN_BYTES,
        worker_host_bytes=0,
        # without memory to hand over, the float64 outputs and a run's cross the host
        controller_bytes=max(s["out64"] for s, _ in known) + 2 * out,
        at=at,
    )


def measured_problem(
    need: Needs, gpu_free: int | None, on_gpu: bool, host_available: int | None
) -> str:
    """One line when a check sized by its reference (`MEASURED`: KernelBench) cannot fit ("" when
    it can): the GPU's free memory,
    and, where outputs cannot be compared on the GPU, the controller's host memory."""
    if gpu_free and need.gpu_bytes > gpu_free:
        return (
            f"does not fit: checking at {need.at} needs about {need.gpu_bytes / GIB:.1f} GiB of "
            f"GPU memory (the reference's inputs, weights and outputs beside the candidate's, "
            f"with the copy of its outputs it hands over) and this GPU has "
            f"{gpu_free / GIB:.1f} GiB free: use a larger GPU or smaller sizes"
        )
    if not on_gpu and host_available is not None and need.controller_bytes > host_available:
        return (
            f"does not fit: without memory to hand over, a trial's outputs cross the host, about "
            f"{need.controller_bytes / GIB:.1f} GiB in kernelwright's own process, and this "
            f"machine has {host_available / GIB:.1f} GiB available: use smaller sizes"
        )
    return ""


def host_available_bytes() -> int | None:
    """MemAvailable, where /proc/meminfo says it."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


# A KernelBench worker's own Python and torch (about 2 GiB resident), its spare beside it, and
# both sides': host memory a process a side takes, in a check and in the spares for the next.
TORCH_PROCESS_HOST_BYTES = 8 * GIB


def timing_processes(wanted: int, host_available: int | None) -> int:
    """How many processes a side a KernelBench timing may have on this host (pure): `wanted`,
    fewer where MemAvailable would not hold them (a 32 GB desktop gets 2), at least 1."""
    if host_available is None:
        return max(1, wanted)
    return max(1, min(wanted, host_available // TORCH_PROCESS_HOST_BYTES))


def problem(
    need: Needs, gpu_total: int | None, worker_limit: int, host_available: int | None
) -> str:
    """One line when the check cannot fit ("" when it can)."""
    if gpu_total and need.gpu_bytes > 0.95 * gpu_total:
        return (
            f"does not fit: checking at {need.at} needs about {need.gpu_bytes / GIB:.1f} GiB of "
            f"GPU memory (two workers' arrays, float64 reference copies, L2 flush buffers, "
            f"contexts) and this GPU has {gpu_total / GIB:.1f} GiB: make the task's sizes smaller"
        )
    if need.worker_host_bytes > worker_limit:
        return (
            f"does not fit: a worker needs about {need.worker_host_bytes / GIB:.1f} GiB of host "
            f"memory for one trial's outputs, over its limit of {worker_limit / GIB:.1f} GiB: "
            "raise worker_host_memory_gib or make the task's sizes smaller"
        )
    if host_available is not None and need.controller_bytes > host_available:
        return (
            f"does not fit: the check keeps about {need.controller_bytes / GIB:.1f} GiB of "
            f"expected outputs in kernelwright's own process and this machine has "
            f"{host_available / GIB:.1f} GiB available: make the task's sizes smaller"
        )
    return ""


# The kinds whose reference's worker sizes every trial before it runs one (its job says
# "sized"), and how such a check's needs follow from that sizing.
MEASURED: dict[str, Callable[[Sequence[Any], Sequence[dict[str, int]], int], Needs | None]] = {
    "kernelbench": kernelbench_needs
}
