"""What a check runs, planned before anything starts: the trials (sizes, seeds, poisons, input
distributions) and the rounds' seeds. Seeds come from `secrets`: nothing a candidate can know.

Correctness is sampled widely, because a kernel can be right where it is looked at and wrong
elsewhere: the task's check sizes; sizes it never shows, spread over every scale from its
smallest check size to its bench size, some round (multiples of a power of two, drawn), some
awkward (odd multiples of what the task requires, one past a warp or a tile), up to the bench
size and a little beyond; and, where a task declares that its op is defined more widely than
its usual inputs (`check` on an argument), inputs drawn from those too.

Sizes other than the timed one are tried after the timing as well (`after_timing`), in every
process that timed: code can be right through the trials and change once they are over (a call
count, or the first size a process sees), and only the timed size would see it again.
"""

from __future__ import annotations

import functools
import math
import random
import secrets
from collections.abc import Callable, Mapping
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


# Where a check's held-out sizes are drawn: each size's log span from its smallest check size to
# its bench size, cut in SPREAD equal parts, one size in each at one offset drawn for them all
# (two held out, then the large one below the bench size), so that any band of sizes wider than a
# SPREAD-th of the span (in log scale, and a factor NEAR**2 for the rounding) holds one in every
# check; the one above the bench size and the bench size itself reach past it. Three, one trial
# more than the small held-out size and the one below of before: with two, gelu's checks (its
# span 1,000 to 16.8 million) missed 2^17 to 2^22 in 28% of them (18% with the one after the
# timing); with three, in none.
SPREAD = 3
NEAR = 2**0.125  # a drawn size is made round or awkward within this factor of where it fell
FLAVORS = ("round", "awkward")


def spread(
    task: CudaTask, rng: random.Random, n: int, crossed: bool = False
) -> list[dict[str, float]]:
    """`n` targets, each size's n-ths of its log span from its smallest check size to its
    bench size one to a target, at one offset drawn for all n (one for each size): smallest
    first in every size, or (`crossed`) in every other size largest first, so that a task of
    two sizes has its opposite corners held out in every check (a few long rows, many short
    ones) beside the middle. Drawn together, the held-out sizes were (small, small), (mid,
    mid) and (large, large): a kernel wrong only on few long rows read correct in about 93%
    of checks (input/softmax_wrong_on_few_long_rows). Each size on its own still has one
    target in each n-th."""
    targets: list[dict[str, float]] = [{} for _ in range(n)]
    for k, (name, bench) in enumerate(task.bench.items()):
        low = math.log2(max(1, min([c[name] for c in task.checks] + [bench])))
        width, offset = math.log2(max(1, bench)) - low, rng.random()
        for i, target in enumerate(targets):
            slot = n - 1 - i if crossed and k % 2 else i
            target[name] = 2 ** (low + (offset + slot) / n * width)
    return targets


def _near(
    target: float, step: int, hi: int, rng: random.Random, flavor: str, residue: int | None = None
) -> int:
    """A size within a factor NEAR of `target`, a multiple of `step`, at most `hi`: round (a
    multiple of 2**j, j drawn from 2 up to the largest with a multiple in reach: a power of two
    where one is) or awkward (`awkward`, its multiple of `step` at `residue` mod 32 where one is
    in reach); the nearest multiple of `step` where none is in reach."""
    low, high = _window(target, step, hi)
    if -(-low // step) * step > high:
        return max(step, min(round(target / step), hi // step) * step)
    if flavor == "awkward":
        return awkward(round(target), step, rng, low, high, residue)
    units = [math.lcm(step, 1 << j) for j in range(64)]
    reach = [u for u in units if -(-low // u) * u <= high]  # j = 0 up: step's multiples first
    unit = rng.choice(reach[2:] or reach[-1:])
    below = int(target // unit) * unit
    either = [v for v in (below, below + unit) if low <= v <= high] or [-(-low // unit) * unit]
    return min(either, key=lambda v: abs(math.log(v / target)))


def held_out_sizes(
    task: CudaTask,
    rng: random.Random,
    target: dict[str, float] | None = None,
    flavor: str | None = None,
    residues: Mapping[str, int | None] | None = None,
) -> dict[str, int]:
    """A size never shown to the model near `target` (by default drawn log-uniformly between the
    smallest check size and the bench size: every scale between may be tried), every size of it
    round or awkward (`flavor`, else a coin; or each size's own, `residues`: its multiple of its
    step at that residue mod 32, None for round), within the bench size and the task's
    multiple_of."""
    shown = [dict(c) for c in task.checks] + [dict(task.bench)]
    aim = target or spread(task, rng, 1)[0]
    for attempt in range(24):
        kind = flavor if flavor and attempt < 8 else rng.choice(FLAVORS)
        given = residues if residues is not None and attempt < 8 else None
        sizes = {
            name: _near(
                t, task.multiple_of.get(name, 1), task.bench[name], rng,
                kind if given is None else ("round" if given.get(name) is None else "awkward"),
                None if given is None else given.get(name),
            )
            for name, t in aim.items()
        }  # fmt: skip
        if sizes not in shown and _fits(task, sizes):
            return sizes
        if attempt >= 16:  # that target is taken (a tiny span): anywhere in the span
            aim = spread(task, rng, 1)[0]
    # rare: fall back to one more than a check size
    return {k: v + task.multiple_of.get(k, 1) for k, v in task.checks[0].items()}


def awkward(
    value: int,
    step: int,
    rng: random.Random,
    lo: int = 1,
    hi: int | None = None,
    residue: int | None = None,
) -> int:
    """A size near `value` within [lo, hi], a multiple of `step`, that is a multiple of nothing
    a kernel likes: an odd multiple of `step`, one off a multiple of 32 where `step` allows; or,
    given a `residue`, a multiple of `step` that many multiples past one of 32 steps where one
    is in reach (an even one too: 2 mod 4 is what float4 and half2 tails get wrong)."""
    k = max(1, value // step)
    candidates = []
    for delta in range(-40, 41):
        v = (k + delta) * step
        if v < max(1, lo) or (hi is not None and v > hi):
            continue
        score = (v // step) % 2 + (v % 32 in (1, 31)) + (v % 16 != 0) + (v % 4 != 0)
        if residue is not None:  # that residue where in reach, else its class mod 4
            score += 8 * ((v // step) % 32 == residue) + 5 * ((v // step) % 4 == residue % 4)
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


def _fits(task: CudaTask, sizes: dict[str, int]) -> bool:
    """Sizes the task's launch takes, within ABOVE_BENCH_BYTES of the bench size's memory."""
    bench = _nbytes(task, task.bench)
    return _valid(task, sizes) and _nbytes(task, sizes) <= ABOVE_BENCH_BYTES * bench


def large_sizes(
    task: CudaTask,
    rng: random.Random,
    above: bool,
    target: dict[str, float] | None = None,
) -> dict[str, int] | None:
    """An awkward size up to the bench size, near `target` (by default drawn in the top
    SPREAD-th of the log span `spread` cuts: the large end of it), or (`above`) a little past
    the bench size, within memory."""
    shown = [dict(c) for c in task.checks] + [dict(task.bench)]
    for attempt in range(20):
        aim: dict[str, float]
        if above:
            aim = {n: b + rng.randint(1, max(1, b // 16)) for n, b in task.bench.items()}
        else:
            aim = target if target and not attempt else spread(task, rng, SPREAD)[-1]
        sizes = {}
        for name, bench in task.bench.items():
            step = task.multiple_of.get(name, 1)
            # one past a warp's multiple or one short of it, drawn for each size (the same in
            # every size, two sizes were never one past in one and one short in the other)
            lo, hi = (bench + 1, None) if above else (1, bench)
            residue = rng.choice((1, 31))
            sizes[name] = max(step, awkward(round(aim[name]), step, rng, lo, hi, residue))
        if sizes not in shown and _fits(task, sizes):
            return sizes
    return None


Planned = tuple[list[Trial], list[dict[str, int]], dict[str, int]]  # trials, shapes, bench


def plan_trials(task: Task, rng: random.Random, min_trials: int = 5) -> tuple[list[Trial], Trial]:
    """The trials before timing, and the post-timing trial at the bench size."""
    trials, shapes, bench = _KINDS[task.kind].trials(task, rng)
    while len(trials) < min_trials:
        trials.append(Trial(rng.choice(shapes), _seed(), poisons(rng, 2)))
    return trials, Trial(bench, _seed(), poisons(rng, 1))


def plan_check(
    task: Task, rng: random.Random, min_trials: int = 5
) -> tuple[list[Trial], Trial, list[Trial], int]:
    """A check's trials before the timing, the post-timing trial at the bench size, the trials
    after the timing (other sizes), and the timed calls' poison, which the post-timing trial
    takes too: a kernel that read its output buffer could tell that one trial at the bench size
    from a timed call by a fresh poison (alike 1 time in 256), and spend its error allowance
    everywhere else (a red-team review; where its arrays are placed still differs, a known
    miss)."""
    trials, post = plan_trials(task, rng, min_trials)
    timed = poisons(rng, 1)[0]
    return trials, replace(post, poisons=(timed,)), after_timing(task, rng), timed


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


def _runs(task: CudaTask, sizes: dict[str, int]) -> int:
    """Two runs with different poisons where a trial is small; one where it is large (as the
    large ones: the NaN poison shows what is unwritten, and its outputs may stay on the GPU)."""
    return 2 if _nbytes(task, sizes) < DEVICE_BYTES else 1


def _kernel_after(kernel: CudaTask, rng: random.Random) -> list[Trial]:
    """A kernel: a fresh held-out size (never the bench size), drawn log-uniformly anywhere
    between its smallest check size and its bench size, each size of it at a residue mod 32
    drawn uniformly (its multiples of its step): every class a kernel's tail may take, one
    check or another."""
    residues = {name: _any_residue(rng) for name in kernel.bench}
    sizes = held_out_sizes(kernel, rng, residues=residues)
    return [Trial(sizes, _seed(), poisons(rng, 1), held_out=True)]


def _any_residue(rng: random.Random) -> int:
    """A residue mod 32 drawn uniformly (4 mod 8 included: a round size is rarely that)."""
    return rng.randrange(32)


def _even_residues(
    task: CudaTask, rng: random.Random, targets: list[dict[str, float]]
) -> list[dict[str, int | None]]:
    """For the held-out sizes before the large ones (near `targets`), each size's residue mod
    32 (of its multiples of its step; None: round): the first two one round and one 2 mod 4, in
    an order drawn for each size, the 2 mod 4 one where a size near its target can be (not a
    target of 4). The large sizes are odd (1 and 31 mod 32), so every class mod 4 is tried in
    every check: round and odd sizes alone never tried one 2 mod 4, and a float4 tail wrong
    only there read correct in every check (input/gelu_wrong_when_n_is_2_mod_4)."""
    n = len(targets)
    out: list[dict[str, int | None]] = [{} for _ in range(n)]
    for name in task.bench:
        step = task.multiple_of.get(name, 1)
        classes: list[int | None] = [None, 2 + 4 * rng.randrange(8)]
        rng.shuffle(classes)
        classes += [_any_residue(rng) for _ in range(max(0, n - 2))]
        if n >= 2:  # each class where a size near its target can have it (not near 4)

            def fits(order: list[int | None], name: str = name, step: int = step) -> float:
                """Classes in reach, 2 mod 4 first (check sizes are often multiples of 4)."""
                return sum(
                    _reaches(targets[i][name], step, task.bench[name], 0 if c is None else 2)
                    * (1.0 if c is None else 1.5)
                    for i, c in enumerate(order[:2])
                )

            if fits(classes[1::-1]) > fits(classes):
                classes[0], classes[1] = classes[1], classes[0]
        for i in range(n):
            out[i][name] = classes[i]
    return out


def _mixed_parities(names: list[str], rng: random.Random) -> dict[str, bool]:
    """For a task of several sizes, which are odd in the first of two trials (the second takes
    the others): drawn, never all alike. Empty for a task of one size."""
    if len(names) < 2:
        return {}
    while True:
        odd = {n: rng.random() < 0.5 for n in names}
        if len(set(odd.values())) == 2:
            return odd


def _missing_classes(
    task: CudaTask, tried: list[dict[str, int]], modulus: int = 4
) -> dict[str, list[int]]:
    """Each size's classes mod `modulus` (of its multiples of its step) that no size in `tried`
    has, where its span has room for them (a bench of at least 64 multiples)."""
    out = {}
    for name, bench in task.bench.items():
        step = task.multiple_of.get(name, 1)
        if bench // step >= 64:
            seen = {s[name] // step % modulus for s in tried if name in s}
            if gone := [c for c in range(modulus) if c not in seen]:
                out[name] = gone
    return out


def _window(target: float, step: int, hi: int) -> tuple[int, int]:
    """Where a size drawn near `target` may fall: within a factor NEAR of it, at least `step`,
    at most `hi`."""
    return max(step, math.ceil(target / NEAR)), min(hi, math.floor(target * NEAR))


def _reaches(target: float, step: int, hi: int, cls: int) -> bool:
    """Whether a multiple of `step`, `cls` mod 4 multiples, lies within NEAR of `target`."""
    low, high = _window(target, step, hi)
    k = -(-low // step)
    k += (cls - k) % 4
    return k * step <= high


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


# A trial on the wider inputs a task declares (`check`) draws them whole, and, where the
# inputs are made on the GPU (a CUDA task's), again with one element in MIXED_EVERY of them
# (at places drawn from the trial's seed) from the wider distribution and the rest from the
# usual one: a kernel that looked at a few elements of a row to tell a wide trial from a
# usual one, and took a cheap path otherwise, read correct in every check (a red-team
# review: a softmax that subtracts a fixed bound instead of the row's max, unless its row's
# first, last, middle and third elements are wide). Finding a few wide elements at unknown
# places costs a look at every element: what the careful path costs anyway.
MIXED_EVERY = (16, 256, 4096)


def _kernel_trials(task: CudaTask, rng: random.Random, mixed: bool = True) -> Planned:
    """A CUDA task's trials: its check sizes; sizes held out across every scale from its
    smallest check size to its bench size (`spread`: one round, one 2 mod 4), the largest an
    awkward one below the bench size; one a little above it; small ones for the classes of
    sizes none has tried; and its check sizes again on the wider inputs it declares, whole
    and (`mixed`) scattered among the usual ones (runners.generate's "mixed:")."""
    shapes = [dict(c) for c in task.checks]
    bench: dict[str, int] = dict(task.bench)
    trials = [Trial(s, _seed(), poisons(rng, 2)) for s in shapes]
    *held, top = spread(task, rng, SPREAD, crossed=True)

    def hold_out(sizes: dict[str, int] | None, runs: int | None = None) -> None:
        """A trial held out at `sizes`, unless a trial has them (a tiny span: nothing new)."""
        if sizes is not None and sizes not in [t.sizes for t in trials]:
            runs = _runs(task, sizes) if runs is None else runs
            trials.append(Trial(sizes, _seed(), poisons(rng, runs), held_out=True))

    for target, classes in zip(held, _even_residues(task, rng, held), strict=True):
        hold_out(held_out_sizes(task, rng, target, residues=classes))
    for above in (False, True):  # large: one run each (the NaN poison shows what is unwritten)
        hold_out(large_sizes(task, rng, above, top), runs=1)
    # A class mod 4 no trial has tried yet (a tiny target): one more trial, up to two; then up
    # to two more, each for a class mod 8 none has (drawn among those, for each size), in the
    # span's lower half where they cost little (a span of nothing, bench and check sizes one:
    # at the bench size, as every trial there is): round sizes were almost never 4 mod 8, awkward
    # ones 1 or 7, and a tail wrong only at 4 mod 8 read correct in about 94% of checks
    # (input/gelu_wrong_when_n_is_4_mod_8).
    # A task of several sizes: those two are always tried, one odd where the other is even in
    # each size and the sizes mixed (odd M by even N, and even by odd), since the held-out and
    # large sizes pair even with even and odd with odd; a kernel wrong only where M is odd and
    # N is 2 mod 4 read correct in about 86% of checks (input/rowsum_row_pairs_wrong_when_...).
    odd = _mixed_parities(list(task.bench), rng)
    for k, modulus in enumerate((4, 4, 8, 8)):
        missing = _missing_classes(task, [t.sizes for t in trials], modulus)
        mixing = modulus == 8 and bool(odd)
        if not missing and not mixing:
            continue
        aim = spread(task, rng, 1)[0]
        residues: dict[str, int | None] = {}
        for name in task.bench:
            step = task.multiple_of.get(name, 1)
            if mixing or name in missing:  # near a size with every class in reach, low in the span
                low = min([c[name] for c in task.checks] + [task.bench[name]])
                half = math.sqrt(max(low, 1) * task.bench[name])
                aim[name] = min(max(min(aim[name], half), 32.0 * step), float(task.bench[name]))
            if mixing and task.bench[name] // step >= 32:  # odd or even as drawn, mod 4 drawn
                four = rng.choice((1, 3) if odd[name] == (k == 2) else (0, 2))
                pool = [c for c in missing.get(name, []) if c % 4 == four]
                cls = rng.choice(pool or [four, four + 4])
                residues[name] = cls + 8 * rng.randrange(4)
            elif name in missing:
                cls = rng.choice(missing[name]) if modulus == 8 else missing[name][0]
                residues[name] = (
                    None
                    if cls == 0 and modulus == 4
                    else cls + modulus * rng.randrange(32 // modulus)
                )
            else:
                residues[name] = _any_residue(rng)
        hold_out(held_out_sizes(task, rng, aim, residues=residues))
    wider = [a for a in task.args if a.check]
    largest = max(shapes, key=lambda s: _nbytes(task, s))
    for i in range(max((len(a.check) for a in wider), default=0)):
        inits = {a.name: a.check[i % len(a.check)] for a in wider}
        trials.append(Trial(largest, _seed(), poisons(rng, 2), inits=inits))
        if mixed:
            every = rng.choice(MIXED_EVERY)
            scattered = {name: f"mixed:{every}:{dist}" for name, dist in inits.items()}
            trials.append(Trial(largest, _seed(), poisons(rng, 2), inits=scattered))
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
    # a C++ task's inputs are made on the host too, for its function: drawn whole only
    "cpp": KindPlan(functools.partial(_kernel_trials, mixed=False), _kernel_after, _on_the_host),
}


@dataclass(frozen=True)
class RoundSeeds:
    """Each timing round's input seed and its two sign seeds, drawn as the rounds are asked for:
    the same in both workers, never known to either before its round."""

    def take(self, n: int) -> list[list[int]]:
        return [
            [secrets.randbits(48), secrets.randbits(63), secrets.randbits(63)] for _ in range(n)
        ]
