"""The reasoning graph (after ReGraphT): a state is a set of applied techniques, an edge adds one.

Each edge keeps, per bottleneck class, what real attempts measured; the catalogue's prior is
added as pseudo-counts when statistics are read, so only observations are persisted and a
better catalogue improves old memories too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kernelwright.memory.techniques import Technique, catalogue

StateKey = tuple[str, ...]
FAIL_LOG_SPEEDUP = math.log(0.5)  # a wrong or failed candidate counts as a 2x slowdown
PRIOR_WEIGHT = 1.0  # the prior counts as this many attempts
PRIOR_SUCCESS = 0.5  # and succeeds this often


def state_key(tags: Iterable[str]) -> StateKey:
    """One key per set of techniques, whatever order they were applied in."""
    return tuple(sorted(set(tags)))


def log_speedup(verdict_ok: bool, speedup: float | None) -> float:
    """What an attempt teaches: log(speedup) when correct and timed, a penalty when wrong."""
    if not verdict_ok:
        return FAIL_LOG_SPEEDUP
    if speedup is None:  # correct but not timed: no evidence either way
        return 0.0
    return math.log(max(speedup, 1e-3))


@dataclass
class EdgeStats:
    """Observations of one (state, technique) edge for one bottleneck class, plus its prior."""

    prior_mean: float
    attempts: int = 0
    successes: int = 0
    sum_log_speedup: float = 0.0
    prior_weight: float = PRIOR_WEIGHT

    @property
    def visits(self) -> float:
        """Attempts plus the prior's pseudo-count (the n of UCT)."""
        return self.prior_weight + self.attempts

    @property
    def mean_log_speedup(self) -> float:
        return (self.prior_weight * self.prior_mean + self.sum_log_speedup) / self.visits

    @property
    def success_rate(self) -> float:
        return (self.prior_weight * PRIOR_SUCCESS + self.successes) / self.visits

    def record(self, ok: bool, log_gain: float) -> None:
        self.attempts += 1
        self.successes += int(ok)
        self.sum_log_speedup += log_gain


class ReasoningGraph:
    """Edge statistics keyed by (state, tag, bottleneck); equal states are one node."""

    def __init__(self, techniques: Mapping[str, Technique] | None = None) -> None:
        self.techniques = dict(catalogue() if techniques is None else techniques)
        self.edges: dict[StateKey, dict[str, dict[str, EdgeStats]]] = {}
        self.dropped = 0  # saved rows left out on reading: their statistics were not finite

    @staticmethod
    def child(state: Iterable[str], tag: str) -> StateKey:
        return state_key([*state, tag])

    @property
    def states(self) -> set[StateKey]:
        """Every node that an attempt has left or reached."""
        found = set(self.edges)
        for state, out in self.edges.items():
            found.update(self.child(state, tag) for tag in out)
        return found

    def prior(self, tag: str, bottleneck: str) -> float:
        known = self.techniques.get(tag)
        return known.prior_for(bottleneck) if known else 0.0

    def edge(self, state: Iterable[str], tag: str, bottleneck: str) -> EdgeStats:
        """The statistics of one edge (created from the prior on first use)."""
        per_bottleneck = self.edges.setdefault(state_key(state), {}).setdefault(tag, {})
        if bottleneck not in per_bottleneck:
            per_bottleneck[bottleneck] = EdgeStats(prior_mean=self.prior(tag, bottleneck))
        return per_bottleneck[bottleneck]

    def peek(self, state: Iterable[str], tag: str, bottleneck: str) -> EdgeStats:
        """Like edge(), without storing anything: the prior alone for an edge never tried."""
        stored = self.edges.get(state_key(state), {}).get(tag, {}).get(bottleneck)
        return stored or EdgeStats(prior_mean=self.prior(tag, bottleneck))

    def options(self, state: Iterable[str]) -> list[str]:
        """Techniques that may come next: not applied yet, with their prerequisites applied."""
        applied = set(state)
        tags = [*self.techniques, *(t for t in self.edges.get(state_key(applied), {}))]
        return sorted(
            {
                tag
                for tag in tags
                if tag not in applied
                and (tag not in self.techniques or set(self.techniques[tag].requires) <= applied)
            }
        )

    def visits(self, state: Iterable[str], bottleneck: str) -> int:
        """Attempts that left this state for this bottleneck (the N of UCT)."""
        out = self.edges.get(state_key(state), {})
        return sum(per[bottleneck].attempts for per in out.values() if bottleneck in per)

    def record(
        self, state: Iterable[str], tag: str, bottleneck: str, ok: bool, log_gain: float
    ) -> EdgeStats:
        """Adds one observed log-speedup to an edge; one that is not a finite number (a
        measurement gone wrong) is not an observation, and is left out."""
        if not math.isfinite(log_gain):
            return self.peek(state, tag, bottleneck)
        stats = self.edge(state, tag, bottleneck)
        stats.record(ok, log_gain)
        return stats

    def update(
        self,
        state: Iterable[str],
        tag: str,
        bottleneck: str,
        verdict_ok: bool,
        speedup: float | None,
    ) -> EdgeStats:
        """Records a verified attempt that applied `tag` to a kernel in `state`."""
        return self.record(state, tag, bottleneck, verdict_ok, log_speedup(verdict_ok, speedup))

    def stats(self, state: Iterable[str], bottleneck: str) -> list[tuple[str, EdgeStats]]:
        """The next techniques from a state, best mean log-speedup first (for display)."""
        rows = [(tag, self.peek(state, tag, bottleneck)) for tag in self.options(state)]
        return sorted(rows, key=lambda row: (-row[1].mean_log_speedup, row[0]))

    def to_dict(self) -> dict[str, Any]:
        """Observations only, JSON-able; priors come back from the catalogue."""
        edges = [
            {
                "state": list(state),
                "tag": tag,
                "bottleneck": bottleneck,
                "attempts": s.attempts,
                "successes": s.successes,
                "sum_log_speedup": s.sum_log_speedup,
            }
            for state, out in sorted(self.edges.items())
            for tag, per in sorted(out.items())
            for bottleneck, s in sorted(per.items())
            if s.attempts
        ]
        return {"version": 1, "edges": edges}

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], techniques: Mapping[str, Technique] | None = None
    ) -> ReasoningGraph:
        """The graph to_dict() saved; a row whose statistics are not finite numbers (an older
        import let an infinite speedup in) is left out and counted in `dropped`."""
        graph = cls(techniques)
        for row in data.get("edges", []):
            numbers = [float(row[k]) for k in ("attempts", "successes", "sum_log_speedup")]
            if not all(math.isfinite(x) for x in numbers):
                graph.dropped += 1
                continue
            attempts, successes, total = int(numbers[0]), int(numbers[1]), numbers[2]
            stats = graph.edge(row["state"], row["tag"], row["bottleneck"])
            stats.attempts, stats.successes, stats.sum_log_speedup = attempts, successes, total
        return graph
