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
    """Wait for the controller's "compare" of `trial` with one memory handle per output, and
    answer with each output's facts (or what kept it from being read)."""
    import cupy
    import numpy as np

    from . import vmm
    from .correctness import facts

    cmd = worker.command()
    if cmd.get("cmd") != "compare" or cmd.get("trial") != trial:
        raise ValueError(f"expected the comparison of trial {trial}, got {cmd.get('cmd')!r}")
    outputs = cmd["outputs"]
    if len(outputs) != len(kept):
        raise ValueError(f"{len(outputs)} outputs to compare, {len(kept)} kept")
    fds = worker.receive_fds(len(outputs))
    device = cupy.cuda.Device().id
    found: list[dict[str, Any]] = []
    for exp, want, fd in zip(kept, outputs, fds, strict=True):
        dtype = np.dtype(str(want["dtype"]))
        shape = tuple(int(d) for d in want["shape"])
        size, offset = int(want["size"]), int(want["offset"])
        nbytes = math.prod(shape) * dtype.itemsize
        if offset < 0 or offset % dtype.itemsize or offset + nbytes > size or size > (1 << 40):
            os.close(fd)
            found.append({"problem": f"its memory does not hold it ({offset=}, {size=})"})
            continue
        try:
            mapping = vmm.open_fd(fd, size, device)
        except vmm.VmmError as exc:
            found.append({"problem": f"its memory could not be mapped ({exc})"})
            continue
        try:
            memory = cupy.cuda.UnownedMemory(mapping.ptr, mapping.size, mapping)
            got = cupy.ndarray(shape, dtype, cupy.cuda.MemoryPointer(memory, offset))
            found.append(
                facts(cupy, got, exp.reshape(shape), float(want["atol"]), float(want["rtol"]))
            )
            del got, memory
        finally:
            cupy.cuda.runtime.deviceSynchronize()
            mapping.unmap()
    worker.send({"type": "compared", "trial": trial, "facts": found})
