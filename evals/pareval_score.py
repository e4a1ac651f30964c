"""ParEval's figures over a run of the loop on imported ParEval problems (pure).

ParEval scores samples: each generated program either builds or not, passes or not, and a
passing one has a speedup over the serial baseline. Its analysis (`analysis/metrics.py` in the
ParEval repository) reports, per problem type and execution model:

- build@k and pass@k: the estimator 1 - C(n - c, k) / C(n, k) over a problem's n samples of
  which c built (or passed), averaged over the problems; at k = 1 that is c / n;
- speedup@k: over a problem's passing samples, averaged over the problems that have one; at
  k = 1 it is the mean of their speedups (baseline time over the sample's).

Here a sample is one kernel the loop checked (an attempt): it built unless its verdict is
compile_error or error, it passed when correct, and its speedup is against the C++ function
on one pinned core (g++ -O3, ParEval's serial baseline), kernel time only. Besides k = 1, the
run's own result is reported as k = n (every attempt of the problem): pass@n is the share of
problems with a correct kernel, speedup@n the mean of each such problem's best.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

NOT_BUILT = ("compile_error", "error")


@dataclass(frozen=True)
class Sample:
    verdict: str
    speedup: float | None = None  # against one core, for a correct kernel


@dataclass(frozen=True)
class Outcome:
    name: str
    type: str  # ParEval's problem type: transform, reduce, graph, ...
    samples: tuple[Sample, ...]


@dataclass(frozen=True)
class Figures:
    problems: int
    build_at_1: float
    pass_at_1: float
    speedup_at_1: float | None  # None: no problem has a passing sample
    pass_at_n: float
    speedup_at_n: float | None
    samples: int


def figures(outcomes: Sequence[Outcome]) -> Figures:
    """The figures over these problems (every one in build@k's and pass@k's denominators, a
    problem with no sample counted as failed; speedup@k over those with a passing sample)."""
    builds, passes, passes_n, sp1, spn = [], [], [], [], []
    for o in outcomes:
        n = len(o.samples)
        built = sum(s.verdict not in NOT_BUILT for s in o.samples)
        correct = [s for s in o.samples if s.verdict == "correct"]
        builds.append(built / n if n else 0.0)
        passes.append(len(correct) / n if n else 0.0)
        passes_n.append(1.0 if correct else 0.0)
        timed = [s.speedup for s in correct if s.speedup is not None]
        if timed:
            sp1.append(sum(timed) / len(timed))
            spn.append(max(timed))
    count = len(outcomes)

    def mean(xs: list[float]) -> float | None:
        return sum(xs) / len(xs) if xs else None

    return Figures(
        problems=count,
        build_at_1=mean(builds) or 0.0,
        pass_at_1=mean(passes) or 0.0,
        speedup_at_1=mean(sp1),
        pass_at_n=mean(passes_n) or 0.0,
        speedup_at_n=mean(spn),
        samples=sum(len(o.samples) for o in outcomes),
    )


def by_type(outcomes: Sequence[Outcome]) -> dict[str, Figures]:
    """The figures per problem type, in name order, then "all"."""
    types = sorted({o.type for o in outcomes})
    table = {t: figures([o for o in outcomes if o.type == t]) for t in types}
    table["all"] = figures(outcomes)
    return table
