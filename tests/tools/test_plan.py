"""Which sizes, seeds and poisons the verifier checks a candidate with."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from kernelwright.tools.correctness import poison_bits, unwritten
from kernelwright.tools.plan import (
    ABOVE_BENCH_BYTES,
    DEVICE_BYTES,
    MIXED_EVERY,
    NEAR,
    SCALES,
    SPREAD,
    after_timing,
    awkward,
    held_out_sizes,
    large_sizes,
    plan_trials,
)
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_task
from tests.conftest import EXAMPLES

TASKS = ["gelu", "rowsum", "softmax", "matmul", "stencil", "transpose"]


def _is_nan32(bits: int) -> bool:
    pattern = np.array([poison_bits("float32", bits)], dtype=np.uint32)
    return bool(np.isnan(pattern.view(np.float32))[0])


@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("seed", range(10))
def test_plan_for_examples(name: str, seed: int) -> None:
    task = load_task(EXAMPLES / name)
    assert isinstance(task, CudaTask)
    trials, post = plan_trials(task, random.Random(seed))
    assert len(trials) >= 5
    # Before timing, never the bench size itself: that is the post trial.
    assert all(t.sizes != task.bench for t in trials)
    assert len({tuple(sorted(t.sizes.items())) for t in trials}) >= 3
    held = [t for t in trials if t.held_out]
    assert len(held) >= 2  # spread from the check sizes to the bench size, and one past it
    for t in held:
        assert t.sizes != task.bench and t.sizes not in task.checks
        assert set(t.sizes) == set(task.bench)
    big = [
        t
        for t in held
        if _elements(task, t.sizes)
        > _elements(task, max(task.checks, key=lambda c: _elements(task, c)))
    ]
    assert big, "no held-out size larger than every check size"
    assert any(_elements(task, t.sizes) > _elements(task, task.bench) for t in held), (
        "none above bench"
    )
    seeds = [t.seed for t in (*trials, post)]
    assert len(set(seeds)) == len(seeds)
    for t in trials:
        assert (
            poison_bits("float32", t.poisons[0]) != poison_bits("float32", t.poisons[-1])
            or len(t.poisons) == 1
        )
        assert _is_nan32(t.poisons[0])
        if len(t.poisons) == 2:
            assert not _is_nan32(t.poisons[1])
    assert post.sizes == task.bench and not post.held_out and len(post.poisons) == 1


def _elements(task: CudaTask, sizes: dict[str, int]) -> int:
    return sum(int(np.prod(task.shape(a, sizes))) for a in task.args if a.role != "scalar")


@pytest.mark.parametrize("name", TASKS)
def test_large_held_out_sizes_are_awkward_and_fit(name: str) -> None:
    task = load_task(EXAMPLES / name)
    assert isinstance(task, CudaTask)
    ends: set[tuple[int, ...]] = set()
    for seed in range(40):
        rng = random.Random(seed)
        below, above = large_sizes(task, rng, False), large_sizes(task, rng, True)
        assert below is not None and above is not None
        for n, bench in task.bench.items():
            assert below[n] <= bench and above[n] >= bench
            if bench > 64 and task.multiple_of.get(n, 1) == 1:  # the classic off-by-ones
                assert below[n] % 32 in (1, 31) and above[n] % 32 in (1, 31), (below, above)
        ends.add(tuple(v % 32 for v in below.values()))
        assert _elements(task, above) <= 1.3 * _elements(task, task.bench)
    # one past a warp's multiple or one short, drawn for each size: mixed across the sizes too
    if all(b > 64 and task.multiple_of.get(n, 1) == 1 for n, b in task.bench.items()):
        assert len(ends) == 2 ** len(task.bench), ends


def test_awkward_keeps_the_multiple_a_task_requires() -> None:
    for seed in range(50):
        rng = random.Random(seed)
        v = awkward(4096, 8, rng)
        assert v % 8 == 0 and (v // 8) % 2 == 1 and abs(v - 4096) <= 320
        assert awkward(1000, 1, rng) % 2 == 1


def test_a_task_declaring_a_wider_domain_gets_trials_drawn_from_it() -> None:
    task = load_task(EXAMPLES / "softmax")
    assert isinstance(task, CudaTask)
    x = task.args[0].model_copy(update={"check": ("uniform:-30000:30000", "normal:1000")})
    task = task.model_copy(update={"args": (x, *task.args[1:])})
    trials, _ = plan_trials(task, random.Random(1))
    wide = [t.inits for t in trials if t.inits]
    # each drawn whole, then scattered among the usual inputs (one element in K, K drawn): a
    # kernel that samples a few elements to tell a wide trial from a usual one is caught
    assert wide[0::2] == [{"x": "uniform:-30000:30000"}, {"x": "normal:1000"}]
    for scattered, whole in zip(wide[1::2], wide[0::2], strict=True):
        _, every, dist = scattered["x"].split(":", 2)
        assert int(every) in MIXED_EVERY and dist == whole["x"]
    picked = {
        t.inits["x"].split(":")[1]
        for seed in range(40)
        for t in plan_trials(task, random.Random(seed))[0]
        if t.inits.get("x", "").startswith("mixed:")
    }
    assert picked == {str(k) for k in MIXED_EVERY}
    # a C++ task's inputs are made on the host for its function too: drawn whole only
    cpp = load_task(EXAMPLES / "cpp" / "axpy")
    i = next(n for n, a in enumerate(cpp.args) if a.role == "in" and a.dtype == "float32")
    wider = cpp.args[i].model_copy(update={"check": ("normal:1000",)})
    cpp = cpp.model_copy(update={"args": (*cpp.args[:i], wider, *cpp.args[i + 1 :])})
    inits = [t.inits for t in plan_trials(cpp, random.Random(1))[0] if t.inits]
    assert inits == [{wider.name: "normal:1000"}]


def test_held_out_sizes_respect_multiple_of() -> None:
    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    task = task.model_copy(update={"multiple_of": {"N": 4}, "checks": ({"N": 1000}, {"N": 65536})})
    for seed in range(50):
        sizes = held_out_sizes(task, random.Random(seed))
        assert sizes["N"] % 4 == 0
        assert sizes["N"] not in (1000, 65536, task.bench["N"])


def test_kernelbench_held_out_batches_on_both_sides_of_the_problems() -> None:
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    for seed in range(10):
        trials, post = plan_trials(task, random.Random(seed))
        held = sorted(t.sizes["batch_size"] for t in trials if t.held_out)
        assert len(held) == 2 and held[0] < 128 < held[1]
        # on wide inputs too: a kernel careful at the bench size alone must not pass
        assert all(t.scale in SCALES for t in trials if t.held_out)
        assert post.sizes == {} and all(t.sizes == {} for t in trials if not t.held_out)


def test_a_kernelbench_problem_is_also_tried_on_its_inputs_scaled_up() -> None:
    """One trial multiplies (a span of) get_inputs()'s floating-point tensors by a power of two
    drawn from SCALES, at the problem's own sizes, the timed ones: code careless only at the
    batch it is timed at would pass a scaled trial at any other. It says so in its job. A
    kernel's trials are never scaled (its task declares its wider inputs itself: `check`)."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    seen = set()
    for seed in range(30):
        trials, post = plan_trials(task, random.Random(seed))
        (scaled,) = [t for t in trials if t.scale != 1.0 and not t.held_out]
        assert scaled.sizes == {} == post.sizes
        assert scaled.job()["scale"] == scaled.scale and "scale" not in trials[0].job()
        assert post.scale == 1.0
        seen.add(scaled.scale)
    assert seen == set(SCALES) and all(s >= 32 and math.log2(s).is_integer() for s in SCALES)
    one = task.model_copy(update={"size_globals": {}})
    trials, _ = plan_trials(one, random.Random(2))
    assert [t.sizes for t in trials if t.scale != 1.0] == [{}]
    for name in TASKS:
        trials, post = plan_trials(load_task(EXAMPLES / name), random.Random(3))
        assert all(t.scale == 1.0 for t in (*trials, post))


def test_after_the_timing_sizes_other_than_the_timed_one() -> None:
    """Drawn afresh each check: a KernelBench batch below and one above the problem's; a
    kernel's held-out size, never its bench size; one run each, read on the host."""
    problem = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    seen = set()
    for seed in range(40):
        below, above = after_timing(problem, random.Random(seed))
        assert 64 <= below.sizes["batch_size"] < 128 < above.sizes["batch_size"] <= 144
        seen.add((below.sizes["batch_size"], above.sizes["batch_size"]))
        assert all(t.held_out and len(t.poisons) == 1 and not t.device for t in (below, above))
    assert len(seen) > 20  # not a fixed pair a candidate could learn
    for name in TASKS:
        task = load_task(EXAMPLES / name)
        assert isinstance(task, CudaTask)
        for seed in range(20):
            (trial,) = after_timing(task, random.Random(seed))
            assert trial.held_out and trial.sizes != dict(task.bench)
            assert set(trial.sizes) == set(task.bench)


def test_a_problem_of_one_shape_has_no_other_size_to_try() -> None:
    problem = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    assert after_timing(problem.model_copy(update={"size_globals": {}}), random.Random(1)) == []
    one = problem.model_copy(update={"size_globals": {"batch_size": 1}})
    assert after_timing(one, random.Random(1)) == []


def test_two_poisons_differ_for_8_bit_outputs() -> None:
    task = load_task(EXAMPLES / "gelu")
    trials, _ = plan_trials(task, random.Random(49))
    poisons = list(next(t for t in trials if len(t.poisons) == 2).poisons)
    # a kernel that wrote every element, each with the value 0x30, in both runs
    written = [np.full(16, 0x30, dtype=np.uint8), np.full(16, 0x30, dtype=np.uint8)]
    assert unwritten("y", written, poisons) == ""


def test_a_trials_model_seed_goes_in_its_job_only_when_set() -> None:
    """One seed for a KernelBench check's weights (verify.py sets it on every trial), sent as
    "model_seed"; a trial without one sends none, and its worker uses the trial's own seed."""
    from kernelwright.tools import plan as plan_module

    plain = plan_module.Trial({"n": 4}, 11, (1, 2))
    assert "model_seed" not in plain.job()
    seeded = plan_module.Trial({"n": 4}, 11, (1, 2), model_seed=5)
    assert seeded.job()["model_seed"] == 5 and seeded.job()["seed"] == 11


def _log2_gaps(sizes: list[int]) -> list[float]:
    points = sorted(set(sizes))
    return [math.log2(b / a) for a, b in itertools.pairwise(points)]


def test_held_out_sizes_cover_every_scale_between_the_check_and_the_bench_sizes() -> None:
    """A kernel wrong only between its check sizes and the large ones (gelu: wrong from 2^17
    to 2^22 elements) passed: held-out sizes were at most 1.5x a check size (98,305) and the
    large one below the bench size at least half of it (8.39 million), so nothing between was
    ever tried (the suite's input/gelu_wrong_between_the_check_and_the_large_sizes). Now the
    sizes before the timing leave no gap wider than a SPREAD-th of the log span from the
    smallest check size to the bench size (and the rounding), in every check; over many
    checks, every octave between is tried."""
    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    span = math.log2(task.bench["N"] / min(c["N"] for c in task.checks))
    octaves: set[int] = set()
    for seed in range(300):
        rng = random.Random(seed)
        trials, post = plan_trials(task, rng)
        later = after_timing(task, rng)
        before = [t.sizes["N"] for t in (*trials, post)]
        assert max(_log2_gaps(before)) <= span / SPREAD + 2 * math.log2(NEAR), sorted(before)
        assert any(1 << 17 <= n <= 1 << 22 for n in before)
        octaves |= {int(math.log2(t.sizes["N"])) for t in (*trials, *later) if t.held_out}
    assert set(range(10, 25)) <= octaves
    # a task of two sizes: each of them over every octave between
    rowsum = load_task(EXAMPLES / "rowsum")
    assert isinstance(rowsum, CudaTask)
    for name in ("M", "N"):
        seen = set()
        for seed in range(300):
            trials, _ = plan_trials(rowsum, random.Random(seed))
            seen |= {int(math.log2(t.sizes[name])) for t in trials if t.held_out}
        low = min(c[name] for c in rowsum.checks)
        assert set(range(int(math.log2(low)) + 1, int(math.log2(rowsum.bench[name])))) <= seen


def test_held_out_sizes_are_round_as_well_as_awkward() -> None:
    """Sizes were drawn awkward (odd, one off a multiple of 32) or at random, so a kernel wrong
    only at round sizes other than the bench size (a vectorised path taken when N % 1024 == 0,
    with a bug in it) passed. Now every check has a held-out size before the timing that is a
    multiple of a power of two (drawn: 4 up to a power of two itself) and one that is odd; over
    many checks every power up to 2^18 divides one exactly, and powers of two are tried."""
    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    exact: set[int] = set()
    powers = 0
    for seed in range(300):
        rng = random.Random(seed)
        trials, _ = plan_trials(task, rng)
        held = [t.sizes["N"] for t in trials if t.held_out]
        assert any(n % 4 == 0 for n in held) and any(n % 2 for n in held), held
        held += [t.sizes["N"] for t in after_timing(task, rng)]
        exact |= {(n & -n).bit_length() - 1 for n in held}
        powers += any(n & (n - 1) == 0 for n in held)
    assert set(range(2, 19)) <= exact
    assert powers >= 15  # about one check in nine; before: one in several hundred


@pytest.mark.parametrize("name", TASKS)
def test_every_class_mod_4_is_held_out_before_the_timing_in_every_check(name: str) -> None:
    """Round sizes (multiples of 4 and more) and odd ones never tried a size 2 mod 4: a float4
    tail that leaves y[n-1] unwritten where n % 4 == 2 read correct in every check
    (input/gelu_wrong_when_n_is_2_mod_4). Every size of a task (of its multiples of its step)
    now falls in each class mod 4 in the trials before the timing, in every check; and after
    it, at every residue mod 32 one check or another."""
    task = load_task(EXAMPLES / name)
    assert isinstance(task, CudaTask)
    after: dict[str, set[int]] = {n: set() for n in task.bench}
    for seed in range(200):
        rng = random.Random(seed)
        trials, _ = plan_trials(task, rng)
        tried = [t.sizes for t in trials]
        for n, bench in task.bench.items():
            step = task.multiple_of.get(n, 1)
            if bench // step > 64 * 4:
                assert {s[n] // step % 4 for s in tried} == {0, 1, 2, 3}, (n, tried)
        for t in after_timing(task, rng):
            for n in task.bench:
                after[n].add(t.sizes[n] // task.multiple_of.get(n, 1) % 32)
    for n, bench in task.bench.items():
        if bench // task.multiple_of.get(n, 1) > 64 * 32:
            assert len(after[n]) >= 28, (n, sorted(after[n]))


@pytest.mark.parametrize("name", TASKS)
def test_every_class_mod_8_is_tried_in_a_good_share_of_checks(name: str) -> None:
    """Round sizes were almost never 4 mod 8 and awkward ones 1 or 7: a tail wrong only at
    4 mod 8 read correct in about 94% of checks (input/gelu_wrong_when_n_is_4_mod_8). Up to
    two small trials now take classes mod 8 none has tried: each class of each size is tried,
    before the timing or after, in at least a third of the checks (0.41 to 0.61 at worst
    over 2,000)."""
    task = load_task(EXAMPLES / name)
    assert isinstance(task, CudaTask)
    checks = 600
    seen = {n: [0] * 8 for n in task.bench}
    for seed in range(checks):
        rng = random.Random(seed)
        trials, _ = plan_trials(task, rng)
        every = [*trials, *after_timing(task, rng)]
        for n in task.bench:
            step = task.multiple_of.get(n, 1)
            tried = {t.sizes[n] // step % 8 for t in every}
            for c in tried:
                seen[n][c] += 1
    for n, bench in task.bench.items():
        if bench // task.multiple_of.get(n, 1) > 64 * 8:
            assert min(seen[n]) >= checks / 3, (n, seen[n])


@pytest.mark.parametrize("name", ["rowsum", "softmax", "matmul", "stencil", "transpose"])
def test_pairs_of_classes_across_sizes_are_tried_in_a_good_share_of_checks(name: str) -> None:
    """The held-out sizes paired even with even and the large ones odd with odd (one past a
    warp's multiple in every size, or one short in every size): a kernel wrong only where M is
    odd and N is 2 mod 4 read correct in about 86% of checks (input/rowsum_row_pairs_wrong_
    when_m_odd_and_n_2_mod_4), and some pairs were tried in 5% of checks. Two small trials
    now mix odd and even across the sizes, and the large sizes draw one past or one short for
    each size: every pair of classes mod 4 is tried in at least a fifth of the checks."""
    task = load_task(EXAMPLES / name)
    assert isinstance(task, CudaTask)
    checks = 600
    names = list(task.bench)
    seen: dict[tuple[str, str, int, int], int] = {}
    for seed in range(checks):
        rng = random.Random(seed)
        trials, _ = plan_trials(task, rng)
        every = [t.sizes for t in [*trials, *after_timing(task, rng)]]
        for a, b in itertools.combinations(names, 2):
            sa, sb = task.multiple_of.get(a, 1), task.multiple_of.get(b, 1)
            for ca, cb in {(s[a] // sa % 4, s[b] // sb % 4) for s in every}:
                seen[a, b, ca, cb] = seen.get((a, b, ca, cb), 0) + 1
    for a, b in itertools.combinations(names, 2):
        for ca, cb in itertools.product(range(4), range(4)):
            assert seen.get((a, b, ca, cb), 0) >= 0.17 * checks, (a, b, ca, cb)
    if name == "rowsum":  # the case's pair: M odd, N 2 mod 4
        odd_by_two = 0
        for seed in range(checks):
            rng = random.Random(seed)
            trials, _ = plan_trials(task, rng)
            every = [t.sizes for t in [*trials, *after_timing(task, rng)]]
            odd_by_two += any(s["M"] % 2 == 1 and s["N"] % 4 == 2 for s in every)
        assert odd_by_two >= 0.45 * checks


def test_a_tiny_span_gets_no_trial_twice_for_its_classes() -> None:
    """Where a span has no room for a class (rowsum of 8 x 16), the small trials that look for
    it add nothing new: none is added twice."""
    task = load_task(EXAMPLES / "rowsum")
    assert isinstance(task, CudaTask)
    tiny = task.model_copy(
        update={"bench": {"M": 8, "N": 16}, "checks": ({"M": 1, "N": 2}, {"M": 3, "N": 5})}
    )
    for seed in range(100):
        trials, _ = plan_trials(tiny, random.Random(seed))
        extra = [t.sizes for t in trials if t.held_out]
        assert len(extra) == len({tuple(sorted(s.items())) for s in extra}), extra


@pytest.mark.parametrize("step", [4, 12])
def test_every_size_tried_keeps_multiple_of_and_fits_in_memory(step: int) -> None:
    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    bench = {"N": step << 20}  # a task's bench size keeps its multiple_of too
    task = task.model_copy(
        update={"multiple_of": {"N": step}, "checks": ({"N": 1008},), "bench": bench}
    )
    limit = ABOVE_BENCH_BYTES * task.bench["N"]
    for seed in range(100):
        rng = random.Random(seed)
        trials, post = plan_trials(task, rng)
        for t in (*trials, post, *after_timing(task, rng)):
            assert t.sizes["N"] % step == 0 and 0 < t.sizes["N"] <= limit, t.sizes
    for name in [*TASKS, "cpp/gemv", "cpp/jacobi2d", "cpp/prefix_sum"]:
        task = load_task(EXAMPLES / name)
        bench = _elements(task, task.bench)
        for seed in range(30):
            rng = random.Random(seed)
            trials, _ = plan_trials(task, rng)
            for t in (*trials, *after_timing(task, rng)):
                assert _elements(task, t.sizes) <= ABOVE_BENCH_BYTES * bench, (name, t.sizes)
                if t.held_out and _elements(task, t.sizes) * 4 >= 2 * DEVICE_BYTES:
                    assert len(t.poisons) == 1  # a large one runs once


def test_a_task_of_two_sizes_has_a_crossed_corner_held_out_in_every_check() -> None:
    """Drawn together, the held-out sizes were (small, small), (mid, mid), (large, large): a
    softmax wrong only on few long rows read correct in about 93% of checks. Crossed, every
    check holds out a size in the low third of M's span and the high third of N's, while each
    size alone still has a size in each third."""
    from kernelwright.tools.plan import NEAR, SPREAD

    task = load_task(EXAMPLES / "softmax")
    assert isinstance(task, CudaTask)
    span = {}
    for name, bench in task.bench.items():
        low = math.log2(min([c[name] for c in task.checks] + [bench]))
        span[name] = (low, math.log2(bench) - low)
    m_top = 2 ** (span["M"][0] + span["M"][1] / SPREAD) * NEAR
    n_low = 2 ** (span["N"][0] + span["N"][1] * (SPREAD - 1) / SPREAD) / NEAR
    for seed in range(300):
        trials, _ = plan_trials(task, random.Random(seed))
        held = [t.sizes for t in trials if t.held_out]
        assert any(s["M"] <= m_top and s["N"] >= n_low for s in held), held


def test_the_post_timing_trial_takes_the_timed_calls_poison() -> None:
    """A kernel that reads its output buffer before writing it must not tell the one trial at
    the bench size after the timing from a timed call by its poison."""
    from kernelwright.tools.plan import plan_check

    task = load_task(EXAMPLES / "gelu")
    seen = set()
    for seed in range(20):
        trials, post, later, timed = plan_check(task, random.Random(seed))
        assert post.poisons == (timed,) and post.sizes == task.bench
        assert trials and all(t.poisons for t in trials)
        assert all(t.sizes != task.bench for t in later)
        seen.add(timed)
    assert len(seen) > 10  # drawn afresh each check
