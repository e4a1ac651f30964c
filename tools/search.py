"""The order in which `tune` checks configurations: a greedy local search with random restarts
over a grid of dimensions (each an ordered list of values).

Why this and not Kernel Tuner's strategies: each configuration here costs a full verifier check
(seconds), so a budget is a few dozen points, and the spaces are of the kind its authors found
local searches do well on (block sizes, work per thread, register caps: smooth, mostly
separable). Kernel Tuner's strategies run inside its own runner and search-space objects, with
SciPy behind them; this is forty lines, and tests/tools/test_search.py shows it finds a
better point than random sampling at equal budget on such landscapes, and no worse on one
with no structure at all. A space smaller than the budget is searched whole whatever the order.

The search starts where it is told (the kernel as given, then earlier winners from the memory);
then it tries the unvisited neighbours (one dimension moved one step) of the best point so far,
a step that improved is taken once more the same way, and when the best has no neighbour left,
a random unvisited point.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterable, Sequence

Point = tuple[int, ...]  # an index into each dimension's values


class LocalSearch:
    def __init__(
        self,
        shape: Sequence[int],
        first: Iterable[Point] = (),
        *,
        valid: Callable[[Point], bool] = lambda p: True,
        seed: int = 0,
    ) -> None:
        """`shape`: how many values each dimension has; `first`: the points to try before any
        other, in order; `valid`: whether a point can be tried at all (an invalid one is
        passed over, never counted)."""
        self.shape = tuple(shape)
        self.size = math.prod(self.shape)
        self.valid = valid
        self.rng = random.Random(seed)
        self.first = list(first)
        self.visited: set[Point] = set()
        self.scores: dict[Point, float] = {}  # higher is better; a failed point has none

    def tell(self, point: Point, score: float | None) -> None:
        """What a point scored (None: it failed: wrong, no build). A step that beat the best
        is tried again, one step further the same way, next."""
        best = max(self.scores, key=lambda p: self.scores[p], default=None)
        self.visited.add(point)
        if score is None:
            return
        self.scores[point] = score
        if best is not None and score > self.scores[best]:
            step = [b - a for a, b in zip(best, point, strict=True)]
            further = tuple(b + s for b, s in zip(point, step, strict=True))
            inside = all(0 <= i < n for i, n in zip(further, self.shape, strict=True))
            if sum(map(abs, step)) == 1 and inside:
                self.first.insert(0, further)

    def ask(self) -> Point | None:
        """The next point to try; None when every point has been visited."""
        while self.first:
            point = self.first.pop(0)
            if self._open(point):
                return point
        best = max(self.scores, key=lambda p: self.scores[p], default=None)
        if best is not None:
            near = self._neighbours(best)
            self.rng.shuffle(near)
            for point in near:
                if self._open(point):
                    return point
        return self._anywhere()

    def _open(self, point: Point) -> bool:
        """Not visited yet and valid (an invalid point is marked visited on the way)."""
        if point in self.visited:
            return False
        if not self.valid(point):
            self.visited.add(point)
            return False
        return True

    def _neighbours(self, point: Point) -> list[Point]:
        out = []
        for axis, n in enumerate(self.shape):
            for step in (-1, 1):
                i = point[axis] + step
                if 0 <= i < n:
                    out.append((*point[:axis], i, *point[axis + 1 :]))
        return out

    def _anywhere(self) -> Point | None:
        """A random unvisited valid point: drawn at random while the space is mostly unvisited,
        else picked from the points left."""
        for _ in range(64):
            if len(self.visited) >= self.size:
                return None
            point = tuple(self.rng.randrange(n) for n in self.shape)
            if self._open(point):
                return point
        left = [p for p in itertools.product(*map(range, self.shape)) if p not in self.visited]
        self.rng.shuffle(left)
        return next((p for p in left if self._open(p)), None)
