"""The timing rounds as a worker runs them: the same code in the reference's worker and the
candidate's, so both do the same harness work around each timed call.

A CUDA task's round, for one seed from the controller: fresh inputs in fresh buffers (never seen
before by anyone) at offsets drawn from the seed, their checksums, poisoned outputs, the L2
flush, one timed call, the outputs' unwritten elements and the inputs' checksums again, and a
sketch of every output with the round's sign seeds (sketch.py). A KernelBench call, for one
seed: an input set made fresh from it, L2 flushed, the GPU idle, one timed call, a sketch of
every output; no input checksums, for what that worker says of its inputs proves nothing.
Nothing survives a call: no input can be recognised, no output reused, and no later call's
input exists while it runs. The controller, which alone sees both workers' rounds, judges them
(judge.py).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from .correctness import UINT, poison_bits
from .sketch import sketch


class CudaRounds:
    """Rounds of a CUDA task's kernel (the reference's or the candidate's) at the bench size."""

    def __init__(self, task: Any, runner: Any, clock: Any, poison: int) -> None:
        self.task, self.runner, self.clock, self.poison = task, runner, clock, poison
        self.bench = task.bench
        self.ins = [a.name for a in task.args if a.role == "in"]
        self.outs = [a.name for a in task.args if a.role == "out"]
        self.sketched = [a for a in task.args if a.role in ("out", "inout")]

    def start(self, seed: int, scale: float = 1.0) -> None:
        """Nothing to build: the kernel is loaded. A kernel's rounds are never scaled (its
        task's declared inputs, `check`, are drawn in its trials)."""

    def round(self, seed: int, signs: tuple[int, int]) -> dict[str, Any]:
        from .runners import broken_guards, checksum, release_guards

        release_guards()
        arrays = {  # outputs and their guard bands poisoned, as in the trials
            **self.runner.inputs(self.bench, seed, spread=seed),
            **self.runner.outputs(self.bench, self.poison, spread=seed),
        }
        ins, outs = self.ins, self.outs
        before = {n: checksum(arrays[n]) for n in ins}
        call = self.runner.bind(arrays, self.bench)
        ms, host_ms = self.clock.sample(call)
        unwritten = {n: _count_bits(arrays[n], self.poison) for n in outs}
        sketches = {
            a.name: sketch(arrays[a.name].data.ptr, arrays[a.name].size, a.dtype, signs)
            for a in self.sketched
        }
        return {
            "ms": ms,
            "host_ms": host_ms,
            "inputs": before,
            "inputs_after": {n: checksum(arrays[n]) for n in ins},
            "unwritten": unwritten,
            "guards": broken_guards(arrays),
            "sketch": sketches,
        }


def _count_bits(a: Any, poison: int) -> int:
    """Elements of `a` still holding the poison's bits (kernels.py's count, not a reduction)."""
    import cupy

    from . import kernels

    size = a.dtype.itemsize
    out = cupy.zeros(1, dtype=cupy.uint64)
    word = UINT[size]
    bits = word(poison_bits(str(a.dtype), poison))
    kernels.function(kernels.COUNT[size])(
        (528,), (256,), (a.view(word), np.uint64(a.size), bits, out)
    )
    return int(out.get()[0])


class TorchRounds:
    """Rounds of a KernelBench model (the problem's Model or a candidate's ModelNew), with
    inputs from the problem's own get_inputs() under a fresh seed, made on the GPU."""

    def __init__(self, runner: Any, model: Any, clock: Any) -> None:
        self.runner, self.model, self.clock = runner, model, clock
        self.scale = 1.0  # every call's inputs scaled so (the warm-up's command says)
        self.made: dict[int, Any] = {}  # handover.Packed by token, until witnessed

    def round(self, seed: int, signs: tuple[int, int]) -> dict[str, Any]:
        """One call: its input set made fresh from `seed` (the problem's own Python, a span
        scaled where the timing is), L2 flushed and the GPU idle, the call timed, its outputs
        sketched. The warm-ups' calls, and every call where no memory can be handed over."""
        inputs = self.runner.fresh_inputs(seed, self.scale)
        self.clock.ready()
        return self._one(inputs, signs)

    def make(self, token: int, seed: int) -> tuple[dict[str, Any], int]:
        """(The reference's worker.) A timed call's inputs made from `seed` as `round` makes
        them, packed into memory of their own (handover.pack), kept under `token`; then L2
        flushed and the GPU idle, as the call is to find it. Returns what the worker that
        times the call is told (where each input lies, the allocation's size: no seed, no
        scale) and a new descriptor of the memory (the caller sends and closes it)."""
        import cupy

        from .handover import pack

        inputs = self.runner.fresh_inputs(seed, self.scale)
        packed = pack(inputs, cupy.cuda.Device().id)
        del inputs
        self.made[token] = packed
        self.clock.ready()
        return {"inputs": packed.layout, "size": packed.mapping.size}, packed.mapping.export()

    def handed(self, spec: dict[str, Any], fd: int, signs: tuple[int, int]) -> dict[str, Any]:
        """One call on inputs handed over as `fd` (make's memory, mapped here): the GPU idle,
        the call timed, its outputs sketched, the inputs unmapped. L2 was flushed by the
        worker that made them, and nothing has run since."""
        import cupy

        from .handover import unpack

        inputs, mapping = unpack(spec["inputs"], int(spec["size"]), fd, cupy.cuda.Device().id)
        try:
            self.clock.sync()
            return self._one(inputs, signs)
        finally:
            del inputs
            self.clock.sync()
            mapping.unmap()

    def witness(self, token: int) -> tuple[list[str], list[str]]:
        """(The reference's worker.) The inputs made under `token`: their checksums as made
        and now, after the call that was handed them; their memory let go here."""
        from .handover import span_sums

        packed = self.made.pop(token)
        try:
            return packed.before, span_sums(packed.mapping.ptr, packed.layout)
        finally:
            packed.mapping.unmap()

    def _one(self, inputs: list[Any], signs: tuple[int, int]) -> dict[str, Any]:
        import torch

        held: list[Any] = []
        model = self.model
        with torch.no_grad():
            ms, host_ms = self.clock.timed(lambda: held.append(model(*inputs)))
        out = held.pop()
        outs = out if isinstance(out, tuple | list) else (out,)
        # No input checksums here: what this worker says of its inputs proves nothing, and its
        # outputs are judged against the reference's on the seed's inputs (fewer device syncs:
        # less noise between the two workers' rounds, a tighter bound by the controller's clock)
        reply: dict[str, Any] = {"ms": ms, "host_ms": host_ms}
        sketches, meta = {}, []
        for i, o in enumerate(outs):
            if type(o) is not torch.Tensor or o.device.type != "cuda":
                reply["problem"] = f"forward() returned {type(o).__name__}, not a CUDA tensor"
                break
            t = o.detach().contiguous()
            dtype = str(t.dtype).replace("torch.", "")
            meta.append({"dtype": dtype, "shape": list(t.shape)})
            if dtype not in _SKETCHED:
                reply["problem"] = f"output {i} has dtype {dtype}, which cannot be checked"
                break
            sketches[f"output {i}"] = sketch(t.data_ptr(), t.numel(), dtype, signs)
        reply.update(meta=meta, sketch=sketches)
        return reply


_SKETCHED = {
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "int8",
    "uint8",
    "bool",
    "int16",
    "int32",
    "int64",
}


def warm_up(rounds: Any, calls: int, seconds: float) -> dict[str, Any]:
    """Rounds whose results are dropped: at least `calls`, and `seconds` (the GPU's clocks rise,
    lazy compilation happens) before the first that counts. Returns what the last few took, in
    timed ms (the reference's, its candidate paused, sizes KernelBench rounds), and the wall ms
    a call took here, with its inputs made and its outputs sketched (how many rounds fit the
    timing's budget)."""
    import statistics
    import time

    start, i, times = time.perf_counter(), 0, []
    while i < calls or time.perf_counter() - start < seconds:
        times.append(float(rounds.round(random.getrandbits(31), (1, 2))["ms"]))
        i += 1
    return {
        "ms": statistics.median(times[-8:]),
        "wall_ms": (time.perf_counter() - start) * 1e3 / max(1, i),
    }


def scale_of(value: Any) -> float:
    """The timing's input scale from the controller's warm-up command: one of plan.SCALES, or
    1 (get_inputs()'s own inputs) for anything else."""
    from .plan import SCALES

    return float(value) if value in SCALES else 1.0


def seeds_of(entry: Any) -> tuple[int, tuple[int, int]]:
    """A round's (input seed, sign seeds) from the controller's command, validated."""
    seed, s0, s1 = (int(v) for v in entry)
    return seed, (s0, s1)
