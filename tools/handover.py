"""A KernelBench timed call's inputs, made by the reference's worker and handed over.

A candidate's `ModelNew` is Python in its own worker, so whatever that process does can be
changed by it: inputs it made there from a round's seed told it where the scaled span lies
(`input/kb_clamp_careful_only_on_the_span`), their checksum there proved nothing
(`input/kb_mutates_input_when_timed`), and the time the harness spent making them there was
credited to it by the controller's clock, time it could spend on work it hid
(`harness/kb_faster_sketch_funds_precompute`). So each timed call's inputs are made by the
reference's worker (the problem's own get_inputs() under the call's seed, scaled as the
timing says), packed into GPU memory of their own (vmm.py), checksummed there and L2 flushed,
and handed to the worker that times the call as a file descriptor, with no seed and no scale.
That worker maps them, times its forward on them, and unmaps them; the reference's worker
then checksums them again: an input written in place reads changed, whatever the candidate's
process says. The reference's own calls take the same path (its own memory, mapped again),
so both walls hold the same harness work: a map, the call, a sketch, an unmap.

`pack` and `span_sums` run in the reference's worker; `unpack` in the worker that times.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

ALIGN = 512  # each tensor's bytes start at a multiple of this in the packed allocation
# dtypes a packed tensor may have: what get_inputs() makes in KernelBench's problems
DTYPES = (
    "float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64",
    "bool", "complex64", "complex128",
)  # fmt: skip


class HandOverError(ValueError):
    """An input that cannot be handed over (not a CUDA tensor nor a plain value)."""


@dataclass
class Packed:
    """A call's inputs in one allocation of the reference's: `layout` says what is where."""

    mapping: Any  # vmm.Mapping
    layout: list[dict[str, Any]]
    before: list[str]  # each input's checksum as made (span_sums)


def extent_bytes(shape: list[int], stride: list[int], itemsize: int) -> int:
    """Bytes from a strided tensor's first element to the end of its last (pure): what must
    be copied for a view of the same layout over it; 0 for an empty one."""
    if any(s == 0 for s in shape):
        return 0
    return (sum((s - 1) * st for s, st in zip(shape, stride, strict=True)) + 1) * itemsize


def plan_layout(inputs: list[Any], on: str = "cuda") -> tuple[list[dict[str, Any]], int]:
    """Where each input goes (pure but for reading tensors' shapes): a tensor's storage span
    at an ALIGN-ed offset, as it is laid out (its strides kept), or a plain value as itself.
    Returns the layout and the bytes it takes. Raises HandOverError for anything else, a
    tensor on another device than `on` included."""
    import torch

    layout: list[dict[str, Any]] = []
    offset = 0
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            dtype = str(x.dtype).removeprefix("torch.")
            if x.device.type != on or dtype not in DTYPES or any(s < 0 for s in x.stride()):
                raise HandOverError(
                    f"input {i} is a {dtype} tensor on {x.device.type}: it cannot be handed over"
                )
            shape, stride = list(x.shape), list(x.stride())
            nbytes = extent_bytes(shape, stride, x.element_size())
            offset = -(-offset // ALIGN) * ALIGN
            place = {"dtype": dtype, "shape": shape, "stride": stride, "offset": offset}
            layout.append(place | {"nbytes": nbytes})
            offset += nbytes
        elif x is None or type(x) in (bool, int, float, str):
            layout.append({"value": x})
        else:
            raise HandOverError(
                f"input {i} is a {type(x).__name__}: only tensors and plain values can be handed"
                " over"
            )
    return layout, offset


def pack(inputs: list[Any], device: int) -> Packed:
    """`inputs` copied into one fresh allocation of this process's (vmm.allocate), as
    plan_layout places them, and checksummed there. The caller unmaps it (Packed.mapping)."""
    import cupy

    from . import vmm

    layout, nbytes = plan_layout(inputs)
    mapping = vmm.allocate(max(nbytes, 1), device)
    try:
        for x, place in zip(inputs, layout, strict=True):
            if place.get("nbytes"):
                cupy.cuda.runtime.memcpy(
                    mapping.ptr + place["offset"],
                    x.data_ptr(),
                    place["nbytes"],
                    cupy.cuda.runtime.memcpyDeviceToDevice,
                )
        cupy.cuda.runtime.deviceSynchronize()
        return Packed(mapping, layout, span_sums(mapping.ptr, layout))
    except BaseException:
        mapping.unmap()
        raise


def span_sums(ptr: int, layout: list[dict[str, Any]]) -> list[str]:
    """Each packed tensor's bytes checksummed where they are (`ptr`: the allocation's start, in
    this process), as runners.checksum sums any array; a plain value's repr."""
    import cupy

    from .runners import checksum

    sums = []
    for place in layout:
        if "value" in place:
            sums.append(repr(place["value"])[:200])
            continue
        n, at = int(place["nbytes"]), ptr + int(place["offset"])
        mem = cupy.cuda.UnownedMemory(at, max(n, 1), None)
        sums.append(checksum(cupy.ndarray((n,), cupy.uint8, cupy.cuda.MemoryPointer(mem, 0))))
    return sums


def unpack(layout: list[dict[str, Any]], size: int, fd: int, device: int) -> tuple[list[Any], Any]:
    """The inputs handed over as `fd` (an allocation of `size` bytes), mapped here and laid out
    as `layout` says: tensors over that memory (nothing copied), plain values as they are.
    Returns them and the mapping, which the caller unmaps once no tensor of them is held."""
    import cupy
    import torch

    from . import vmm

    mapping = vmm.open_fd(fd, size, device)
    try:
        mem = cupy.cuda.UnownedMemory(mapping.ptr, mapping.size, mapping)
        raw = cupy.ndarray((mapping.size,), cupy.uint8, cupy.cuda.MemoryPointer(mem, 0))
        base = torch.as_tensor(raw, device="cuda")
        inputs: list[Any] = []
        for place in layout:
            if "value" in place:
                inputs.append(place["value"])
                continue
            dtype = getattr(torch, str(place["dtype"]))
            if str(place["dtype"]) not in DTYPES or not isinstance(dtype, torch.dtype):
                raise HandOverError(f"a handed-over tensor of dtype {place['dtype']!r}")
            offset, nbytes = int(place["offset"]), int(place["nbytes"])
            if not 0 <= offset <= offset + nbytes <= mapping.size:
                raise HandOverError("a handed-over tensor past its allocation's end")
            shape, stride = list(place["shape"]), list(place["stride"])
            if nbytes == 0:
                inputs.append(torch.empty(shape, dtype=dtype, device="cuda"))
                continue
            flat = base[offset : offset + nbytes].view(dtype)
            inputs.append(flat.as_strided(shape, stride))
        return inputs, mapping
    except BaseException:
        with contextlib.suppress(Exception):
            cupy.cuda.runtime.deviceSynchronize()
        mapping.unmap()
        raise
