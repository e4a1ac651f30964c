"""The order tune checks configurations in (tools/search.py): the points it is told first, then
a local search with restarts. At equal budget it must find at least as good a point as random
sampling, on landscapes shaped like a kernel's (smooth, mostly separable, some points that
cannot run) and on one with no structure at all; a space within the budget is searched whole."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable

import pytest

from kernelwright.tools.search import LocalSearch, Point

Landscape = Callable[[Point], float | None]  # None: the point fails (wrong, no build)
SHAPE = (5, 4, 7, 3)  # e.g. block size, items per thread, register cap, ptxas level
START = (2, 0, 0, 0)


def smooth(seed: int) -> Landscape:
    """A speedup with one peak somewhere, each dimension's effect a bump of its own strength,
    and an interaction between the first two (as block size and work per thread have)."""
    rng = random.Random(seed)
    peak = [rng.randrange(n) for n in SHAPE]
    weight = [rng.uniform(0.1, 1.0) for _ in SHAPE]

    def f(p: Point) -> float:
        d = [abs(a - b) / n for a, b, n in zip(p, peak, SHAPE, strict=True)]
        bumps = sum(w * x * x for w, x in zip(weight, d, strict=True))
        return math.exp(-bumps - 0.5 * d[0] * d[1])

    return f


def too_large(inner: Landscape, seed: int) -> Landscape:
    """A corner that cannot run (a tile whose shared memory is too large, a block too big)."""
    limit = 4 + seed % 3
    return lambda p: None if p[0] + p[1] > limit else inner(p)


def scattered(inner: Landscape, seed: int) -> Landscape:
    """One configuration in five wrong, anywhere (a kernel written for one block shape)."""
    points = itertools.product(*map(range, SHAPE))
    bad = {p for p in points if random.Random(hash((seed, p))).random() < 0.2 and p != START}
    return lambda p: None if p in bad else inner(p)


def noise(seed: int) -> Landscape:
    """No structure: each point's speedup drawn on its own."""
    values = {
        p: random.Random(hash((seed, p))).random() for p in itertools.product(*map(range, SHAPE))
    }
    return lambda p: values[p]


def best_found(order: Callable[[int], list[Point]], f: Landscape, budget: int, seed: int) -> float:
    scores = [f(p) for p in order(seed)[:budget]]
    return max((s for s in scores if s is not None), default=0.0)


def local(f: Landscape, budget: int) -> Callable[[int], list[Point]]:
    def order(seed: int) -> list[Point]:
        search = LocalSearch(SHAPE, seed=seed)
        search.tell(START, f(START))
        out = [START]
        while len(out) < budget and (p := search.ask()) is not None:
            search.tell(p, f(p))
            out.append(p)
        return out

    return order


def sampled(seed: int) -> list[Point]:
    """Random sampling, the start first (as tune always checks the kernel as given)."""
    points = [p for p in itertools.product(*map(range, SHAPE)) if p != START]
    random.Random(seed).shuffle(points)
    return [START, *points]


def regrets(
    make: Callable[[int], Landscape], budget: int, searcher: str, trials: int
) -> list[float]:
    """Each landscape's shortfall from its best point."""
    out = []
    for seed in range(trials):
        f = make(seed)
        top = max(s for p in itertools.product(*map(range, SHAPE)) if (s := f(p)) is not None)
        order = local(f, budget) if searcher == "local" else sampled
        out.append(top - best_found(order, f, budget, seed))
    return out


def regret(make: Callable[[int], Landscape], budget: int, searcher: str) -> float:
    """The mean shortfall from the best point, over 120 landscapes."""
    found = regrets(make, budget, searcher, 120)
    return sum(found) / len(found)


@pytest.mark.parametrize("budget", [12, 24, 48])
def test_local_search_beats_random_sampling_on_kernel_like_landscapes(budget: int) -> None:
    for make in (smooth, lambda s: too_large(smooth(s), s)):
        mine, theirs = regret(make, budget, "local"), regret(make, budget, "random")
        assert mine < theirs * 0.8, (budget, mine, theirs)


@pytest.mark.parametrize("budget", [12, 24])
def test_and_no_worse_where_failures_are_scattered_or_there_is_no_structure(budget: int) -> None:
    """With no structure every order finds the same in expectation: within the estimate's
    own error (three standard errors of the difference, over 400 landscapes)."""
    for make in (lambda s: scattered(smooth(s), s), noise):
        mine = regrets(make, budget, "local", 400)
        theirs = regrets(make, budget, "random", 400)
        diff = [a - b for a, b in zip(mine, theirs, strict=True)]
        mean = sum(diff) / len(diff)
        spread = math.sqrt(sum((d - mean) ** 2 for d in diff) / (len(diff) - 1) / len(diff))
        assert mean <= 3 * spread, (budget, mean, spread)


def test_the_points_it_is_told_come_first_and_invalid_ones_never() -> None:
    told = [(4, 3, 6, 2), (0, 0, 0, 0)]
    search = LocalSearch(SHAPE, told, valid=lambda p: p[1] != 1)
    assert search.ask() == told[0]
    search.tell(told[0], 1.0)
    assert search.ask() == told[1]
    search.tell(told[1], 0.5)
    seen = []
    while (p := search.ask()) is not None:
        seen.append(p)
        search.tell(p, 0.1)
    assert all(p[1] != 1 for p in seen)
    valid = [p for p in itertools.product(*map(range, SHAPE)) if p[1] != 1]
    assert len(seen) + len(told) == len(valid)  # a space within the budget: searched whole


def test_it_moves_from_the_best_point_so_far() -> None:
    search = LocalSearch((5, 5))
    search.tell((2, 2), 1.0)
    search.tell((0, 0), 0.5)
    nxt = search.ask()
    assert nxt is not None and abs(nxt[0] - 2) + abs(nxt[1] - 2) == 1
