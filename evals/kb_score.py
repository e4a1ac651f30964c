"""KernelBench's scores over a set of problems (pure): fast_p, the geometric mean of the speedup
over the correct problems, and ours beside them (failures as 1.0x, the medians).

A problem's outcome is its speedup over a baseline (eager or torch.compile) when its kernel is
correct, or None when it is not (did not compile, was wrong, crashed, had no candidate). Every
problem given counts in every denominator, failures included, as KernelBench's
`src/kernelbench/score.py` counts them (`fastp(..., n, p)` divides by all n samples):

- fast_p: the share of all problems that are correct with a speedup strictly greater than p
  (`np.sum(speed_up > p) / n if n > 0 else 0`); a speedup equal to p does not count.
- the geometric mean over the correct problems only
  (`geometric_mean_speed_ratio_correct_only`: `prod ** (1 / n_correct)`, 0 when none is
  correct); computed here in log space, which is the same number without the product's
  overflow over hundreds of problems.

Ours, beside them: the geometric mean and the median over all problems with a failure counted
as 1.0x (a user keeps the baseline when the tool fails), and the median over the correct ones.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

FAST_P = (0.0, 1.0, 1.2)  # the thresholds the summary prints


def fast_label(p: float) -> str:
    """ "fast_0", "fast_1", "fast_1.2"."""
    return f"fast_{p:g}"


def _checked(speedups: Sequence[float | None]) -> list[float]:
    """The correct problems' speedups; ValueError for one that is not a positive number."""
    correct = [s for s in speedups if s is not None]
    for s in correct:
        if not (math.isfinite(s) and s > 0):
            raise ValueError(f"a speedup must be a positive finite number, got {s!r}")
    return correct


def fast_p(speedups: Sequence[float | None], p: float) -> float:
    """The share of all problems that are correct and faster than p times the baseline
    (strictly); None is a failure, still in the denominator; no problems: 0.0."""
    n = len(speedups)
    return sum(s > p for s in _checked(speedups)) / n if n else 0.0


def geomean_correct(speedups: Sequence[float | None]) -> float:
    """KernelBench's geometric mean of the speedup over the correct problems; 0.0 when none
    is correct (as KernelBench returns)."""
    correct = _checked(speedups)
    if not correct:
        return 0.0
    return math.exp(math.fsum(math.log(s) for s in correct) / len(correct))


def geomean_failures_as_one(speedups: Sequence[float | None]) -> float | None:
    """The geometric mean over all problems, a failure counted as 1.0x; None for no problems."""
    if not speedups:
        return None
    correct = _checked(speedups)
    return math.exp(math.fsum(math.log(s) for s in correct) / len(speedups))


def median_failures_as_one(speedups: Sequence[float | None]) -> float | None:
    """The median over all problems, a failure counted as 1.0x; None for no problems."""
    _checked(speedups)
    return statistics.median(1.0 if s is None else s for s in speedups) if speedups else None


def median_correct(speedups: Sequence[float | None]) -> float | None:
    """The median over the correct problems; None when none is correct."""
    correct = _checked(speedups)
    return statistics.median(correct) if correct else None


def speedups_from_times(
    correct: Sequence[bool], baseline_ms: Sequence[float], actual_ms: Sequence[float]
) -> list[float | None]:
    """Per problem, baseline over actual time when correct, else None: how KernelBench's
    analysis turns its eval_results.json `runtime` and a baseline file's `mean` into speedups
    (scripts/benchmark_eval_analysis.py, then score.py's filter on is_correct)."""
    if not len(correct) == len(baseline_ms) == len(actual_ms):
        raise ValueError("correct, baseline_ms and actual_ms differ in length")
    return [b / a if ok else None for ok, b, a in zip(correct, baseline_ms, actual_ms, strict=True)]


@dataclass(frozen=True)
class Score:
    """The scores of one set of problems against one baseline."""

    problems: int  # every problem scored: the denominator
    compiled: int
    correct: int
    fast: dict[str, float]  # fast_label(p): fast_p, for each p in FAST_P
    geomean_correct: float  # KernelBench's: over the correct problems, 0.0 when none
    geomean_failures_as_one: float | None
    median_failures_as_one: float | None
    median_correct: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def score(
    speedups: Sequence[float | None],
    compiled: Sequence[bool] | None = None,
    thresholds: Sequence[float] = FAST_P,
) -> Score:
    """Every score of a set of problems (one speedup or None each; `compiled` says, per
    problem, whether its kernel compiled: by default, the correct ones)."""
    if compiled is not None and len(compiled) != len(speedups):
        raise ValueError("compiled and speedups differ in length")
    correct = _checked(speedups)
    built = sum(compiled) if compiled is not None else len(correct)
    return Score(
        problems=len(speedups),
        compiled=built,
        correct=len(correct),
        fast={fast_label(p): fast_p(speedups, p) for p in thresholds},
        geomean_correct=geomean_correct(speedups),
        geomean_failures_as_one=geomean_failures_as_one(speedups),
        median_failures_as_one=median_failures_as_one(speedups),
        median_correct=median_correct(speedups),
    )
