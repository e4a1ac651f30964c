"""What a check runs, planned before anything starts: the trials (sizes, seeds, poisons, input
distributions) and the rounds' seeds. Seeds come from `secrets`: nothing a candidate can know.

Correctness is sampled widely, because a kernel can be right where it is looked at and wrong
elsewhere: the task's check sizes; a small size it never shows; large, awkward sizes on both
sides of the bench size (odd multiples of what the task requires, one past a warp or a tile,
up to the bench size and a little beyond); and, where a task declares that its op is defined
more widely than its usual inputs (`check` on an argument), inputs drawn from those too.

Sizes other than the timed one are tried after the timing as well (`after_timing`), in every
process that timed: code can be right through the trials and change once they are over (a call
count, or the first size a process sees), and only the timed size would see it again.
"""

from __future__ import annotations

import math
import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import expr
from .kernelbench import KernelBenchTask
from .spec import CudaTask
from .task import Task

ABOVE_BENCH_BYTES = 1.3  # an above-bench trial may use at most this much more memory than bench


@dataclass(frozen=True)
class Trial:
    sizes: dict[str, int]
    seed: int
    poisons: tuple[int, ...]
    held_out: bool = False
    inits: dict[str, str] = field(default_factory=dict)  # argument: its distribution here
    device: bool = False  # outputs compared on the GPU, in the reference's worker
    # a model's weights (KernelBench): one seed for every trial of a check, as KernelBench's
    # own harness builds one model for all its trials; None: the trial's own seed
    model_seed: int | None = None
    # every floating-point input multiplied by this (a power of two: exact in every float
    # dtype) after it is made; 1: the inputs as the task makes them (SCALES)
    scale: float = 1.0

    def job(self) -> dict[str, Any]:
        job: dict[str, Any] = {
            "sizes": self.sizes,
            "seed": self.seed,
            "poisons": list(self.poisons),
            "inits": self.inits,
            "device": self.device,
        }
        if self.model_seed is not None:
            job["model_seed"] = self.model_seed
        if self.scale != 1.0:
            job["scale"] = self.scale
        return job


def poisons(rng: random.Random, n: int) -> tuple[int, ...]:
    """A quiet-NaN pattern (at 2, 4 and 8 bytes), then its complement, a large finite number:
    the two differ at every width, so no correct value can look untouched in both runs."""
    first = (
        (0x7FF8 << 48)
        | (rng.getrandbits(16) << 32)
        | (0x7FC0 << 16)
        | (0x7E00 | rng.getrandbits(8))
    )
    return (first, ~first & ((1 << 64) - 1))[:n]


def _seed() -> int:
    return secrets.randbits(31)


def held_out_sizes(task: CudaTask, rng: random.Random) -> dict[str, int]:
    """A small size never shown to the model: each size perturbed from a check size."""
    sizes = {}
    for name in task.bench:
        base = rng.choice([c[name] for c in task.checks])
        value = base + rng.randint(1, max(1, base // 2))
        step = task.multiple_of.get(name, 1)
        value = -(-value // step) * step
        sizes[name] = min(value, max(task.bench[name], base))
    if sizes in [dict(c) for c in task.checks]:  # rare: fall back to one more than a check size
        sizes = {k: v + task.multiple_of.get(k, 1) for k, v in sizes.items()}
    return sizes


def awkward(
    value: int,
    step: int,
    rng: random.Random,
    lo: int = 1,
    hi: int | None = None,
    residue: int | None = None,
) -> int:
    """A size near `value` within [lo, hi], a multiple of `step`, that is a multiple of nothing
    a kernel likes: an odd multiple of `step`, one off a multiple of 32 where `step` allows."""
    k = max(1, value // step)
    candidates = []
    for delta in range(-40, 41):
        v = (k + delta) * step
        if v < max(1, lo) or (hi is not None and v > hi):
            continue
        score = (v // step) % 2 + (v % 32 in (1, 31)) + (v % 16 != 0) + (v % 4 != 0)
        score += 4 * (residue is not None and v % 32 == residue)
        candidates.append((score, -abs(delta), v))
    if not candidates:
        return max(lo, step)
    best = max(s for s, _, _ in candidates)
    return rng.choice([v for s, _, v in candidates if s == best])


def _nbytes(task: CudaTask, sizes: dict[str, int]) -> int:
    return sum(
        math.prod(task.shape(a, sizes)) * np.dtype(a.dtype).itemsize
        for a in task.args
        if a.role != "scalar"
    )


def _valid(task: CudaTask, sizes: dict[str, int]) -> bool:
    try:
        for a in task.args:
            if a.role != "scalar" and min(task.shape(a, sizes)) < 1:
                return False
        task.launch.resolve(sizes)
    except (expr.ExprError, ValueError, ZeroDivisionError):
        return False
    return True


def large_sizes(task: CudaTask, rng: random.Random, above: bool) -> dict[str, int] | None:
    """An awkward size up to the bench size (`above`: a little past it, within memory)."""
    for _ in range(20):
        sizes = {}
        for name, bench in task.bench.items():
            step = task.multiple_of.get(name, 1)
            target = (
                bench + rng.randint(1, max(1, bench // 16))
                if above
                else int(bench * rng.uniform(0.5, 0.95))
            )
            # one short of a warp's multiple above the bench size, one past it below
            lo, hi, residue = (bench + 1, None, 31) if above else (1, bench, 1)
            sizes[name] = max(step, awkward(target, step, rng, lo, hi, residue))
        shown = [dict(c) for c in task.checks] + [dict(task.bench)]
        too_big = above and _nbytes(task, sizes) > ABOVE_BENCH_BYTES * _nbytes(task, task.bench)
        if sizes not in shown and _valid(task, sizes) and not too_big:
            return sizes
    return None


Planned = tuple[list[Trial], list[dict[str, int]], dict[str, int]]  # trials, shapes, bench


def plan_trials(task: Task, rng: random.Random, min_trials: int = 5) -> tuple[list[Trial], Trial]:
    """The trials before timing, and the post-timing trial at the bench size."""
    trials, shapes, bench = _KINDS[task.kind].trials(task, rng)
    while len(trials) < min_trials:
        trials.append(Trial(rng.choice(shapes), _seed(), poisons(rng, 2)))
    return trials, Trial(bench, _seed(), poisons(rng, 1))


def after_timing(task: Task, rng: random.Random) -> list[Trial]:
    """Trials at sizes other than the timed one, drawn afresh, that run after the timing in
    every process that timed (the first and any further ones): the code that was timed, seen
    again away from the size it was timed at. One run each, outputs read on the host."""
    return _KINDS[task.kind].after_timing(task, rng)


def _problem_after(task: KernelBenchTask, rng: random.Random) -> list[Trial]:
    """A KernelBench problem with a batch_size global: one batch below and one above the
    problem's, neither shown before; one without has one shape only."""
    batch = task.size_globals.get("batch_size")
    if not batch or batch < 2:
        return []
    below = rng.randint(max(1, batch // 2), batch - 1)
    above = batch + rng.randint(1, max(1, batch // 8))
    return [
        Trial({"batch_size": b}, _seed(), poisons(rng, 1), held_out=True) for b in (below, above)
    ]


def _kernel_after(kernel: CudaTask, rng: random.Random) -> list[Trial]:
    """A kernel: a fresh held-out size."""
    sizes = held_out_sizes(kernel, rng)
    for _ in range(8):  # one that is the bench size would be no other size
        if sizes != dict(kernel.bench):
            break
        sizes = held_out_sizes(kernel, rng)
    return [Trial(sizes, _seed(), poisons(rng, 1), held_out=True)]


DEVICE_BYTES = 16 << 20  # outputs at least this large are compared where they are, on the GPU
_DEVICE_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8")


def on_device(task: Task, trial: Trial) -> Trial:
    """`trial`, marked to have its outputs compared on the GPU where that is worth it and
    possible (the reference's worker compares them there, devcompare.py)."""
    return _KINDS[task.kind].on_device(task, trial)


def _every_trial(task: KernelBenchTask, trial: Trial) -> Trial:
    """A KernelBench problem: every trial (its outputs' sizes are its forward's to decide,
    known only once it ran; today's problems return up to 14 GB, which in float64 could not
    cross the host)."""
    return replace(trial, device=True)


def _large_trial(task: CudaTask, trial: Trial) -> Trial:
    """A CUDA task (its own reference runs on the GPU): a trial of one run (a large one, or
    the post-timing one), outputs the harness allocates (role out, no inout) of at least
    DEVICE_BYTES in all; a 256 MB output no longer crosses the host twice."""
    if len(trial.poisons) != 1:
        return trial
    outs = [a for a in task.args if a.role in ("out", "inout")]
    if not outs or any(a.role != "out" or a.dtype not in _DEVICE_DTYPES for a in outs):
        return trial
    total = sum(math.prod(task.shape(a, trial.sizes)) * np.dtype(a.dtype).itemsize for a in outs)
    return replace(trial, device=True) if total >= DEVICE_BYTES else trial


def _on_the_host(task: Any, trial: Trial) -> Trial:
    """A C++ task: its expected outputs come from the function, on the CPU."""
    return trial


def _kernel_trials(task: CudaTask, rng: random.Random) -> Planned:
    """A CUDA task's trials: its check sizes, one held out, large awkward ones below and above
    the bench size, and its check sizes again on the wider inputs it declares."""
    shapes = [dict(c) for c in task.checks]
    bench: dict[str, int] = dict(task.bench)
    trials = [Trial(s, _seed(), poisons(rng, 2)) for s in shapes]
    trials.append(Trial(held_out_sizes(task, rng), _seed(), poisons(rng, 2), held_out=True))
    for above in (False, True):  # large: one run each (the NaN poison shows what is unwritten)
        large = large_sizes(task, rng, above)
        if large is not None:
            trials.append(Trial(large, _seed(), poisons(rng, 1), held_out=True))
    wider = [a for a in task.args if a.check]
    for i in range(max((len(a.check) for a in wider), default=0)):
        inits = {a.name: a.check[i % len(a.check)] for a in wider}
        trials.append(
            Trial(
                max(shapes, key=lambda s: _nbytes(task, s)),
                _seed(),
                poisons(rng, 2),
                inits=inits,
            )
        )
    return trials, shapes, bench


# A KernelBench problem declares no inputs beyond what get_inputs() draws (most often N(0, 1)),
# yet its forward is defined far beyond them: a kernel right only where it is looked at (a
# softmax without its max subtracted, exact on N(0, 1) and NaN from |x| near 89 on) must not
# pass. One trial multiplies a span of every floating-point input (runners.scaled_span) by one
# of these, half of the span by its negative (an abs left out is right on every input
# torch.rand draws); it counts only where the float64 forward stays finite and PyTorch's own
# forward in the problem's dtypes stays finite and near float64 there (judge.scaled_trial): a
# candidate is held to the problem's own numerics, never beyond them.
SCALES = (32.0, 64.0, 128.0)


def _problem_trials(task: KernelBenchTask, rng: random.Random) -> Planned:
    """A KernelBench problem's trials: its own inputs, a smaller and a larger batch held out
    where it has a batch_size global, and its inputs scaled up (SCALES) at its own sizes: the
    timed ones, where code careless only at the size it is timed at would gain. The held-out
    batches' inputs are scaled too: a kernel careful at the bench size alone (a clamp kept
    only where the batch is the problem's) read correct while wide inputs were tried there
    only (the suite's kb_clamp_left_out_off_the_bench_size); the batches held out after the
    timing (_problem_after) keep get_inputs()'s own."""
    bench: dict[str, int] = {}
    shapes: list[dict[str, int]] = [{}]
    trials = [Trial(bench, _seed(), poisons(rng, 1))]
    batch = task.size_globals.get("batch_size")
    # A problem without a batch_size global has one shape only: nothing can be held out.
    if batch:
        below = max(1, batch // 2 + rng.randint(1, max(1, batch // 4)))
        below = below if below != batch else max(1, batch - 1)
        larger = batch + rng.randint(1, max(1, batch // 8))
        for held in (below, larger):
            scale = rng.choice(SCALES)
            trials.append(
                Trial({"batch_size": held}, _seed(), poisons(rng, 2), held_out=True, scale=scale)
            )
    trials.append(Trial(bench, _seed(), poisons(rng, 1), scale=rng.choice(SCALES)))
    return trials, shapes, bench


@dataclass(frozen=True)
class KindPlan:
    """How one task kind's check is planned: its trials, the sizes tried after the timing, and
    which trials are compared on the GPU."""

    trials: Callable[[Any, random.Random], Planned]
    after_timing: Callable[[Any, random.Random], list[Trial]]
    on_device: Callable[[Any, Trial], Trial]


# Each task kind's plan, looked up by `task.kind`; a C++ task's candidates are kernels over its
# declared arguments.
_KINDS: dict[str, KindPlan] = {
    "cuda": KindPlan(_kernel_trials, _kernel_after, _large_trial),
    "kernelbench": KindPlan(_problem_trials, _problem_after, _every_trial),
    "cpp": KindPlan(_kernel_trials, _kernel_after, _on_the_host),
}


@dataclass(frozen=True)
class RoundSeeds:
    """Each timing round's input seed and its two sign seeds, drawn as the rounds are asked for:
    the same in both workers, never known to either before its round."""

    def take(self, n: int) -> list[list[int]]:
        return [
            [secrets.randbits(48), secrets.randbits(63), secrets.randbits(63)] for _ in range(n)
        ]
