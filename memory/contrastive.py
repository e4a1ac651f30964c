"""Contrastive few-shot (after CUDA-L1): pairs of related attempts, a faster correct one and a
slower or wrong one, with their measured speedups, so the model sees what made the difference.

Candidates come from this run first, then stored attempts on the same op class and bottleneck,
then stored attempts nearest in embedding. Pairs are made within one task: an attempt and its
parent first, then an attempt and a child that broke it, then any wrong one, then a slower one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from kernelwright.memory.store import Episode, EpisodeStore
from kernelwright.tools.results import Attempt

CHARS_PER_TOKEN = 4
MIN_GAP = 1.05  # a correct pair counts only if one is measurably faster than the other
POOL = 24  # stored attempts fetched per query

Origin = Literal["this run", "same class", "similar"]
_TIER: dict[Origin, int] = {"this run": 0, "same class": 1, "similar": 2}


class ContrastivePair(BaseModel):
    model_config = ConfigDict(frozen=True)
    faster: Episode
    slower: Episode
    origin: Origin

    @property
    def slower_reason(self) -> str:
        if self.slower.verdict == "correct":
            return "correct but slower"
        return f"{self.slower.verdict}: {self.slower.reason}" if self.slower.reason else ""

    @property
    def chars(self) -> int:
        """Rough size in the prompt: both sources, the reason and the framing."""
        return len(self.faster.source) + len(self.slower.source) + len(self.slower_reason) + 80


def _timed_correct(e: Episode) -> bool:
    return e.verdict == "correct" and e.speedup is not None


def _worse(s: Episode, f: Episode) -> bool:
    if not _timed_correct(s):
        return True
    assert s.speedup is not None and f.speedup is not None
    return f.speedup >= s.speedup * MIN_GAP


def _pair_group(group: Sequence[Episode]) -> list[tuple[Episode, Episode]]:
    """Pairs within one task's attempts (in similarity order); an attempt is the slower one of
    at most one pair and the faster one of at most one (A beat its parent, then A's child broke)."""
    fast = sorted((e for e in group if _timed_correct(e)), key=lambda e: -(e.speedup or 0.0))
    used: set[str] = set()  # already shown as the slower one
    out: list[tuple[Episode, Episode]] = []
    for f in fast:
        free = [s for s in group if s.id not in used and s.id != f.id and _worse(s, f)]
        choices = (
            [s for s in free if s.id == f.parent],
            [s for s in free if s.parent == f.id and not _timed_correct(s)],
            [s for s in free if not _timed_correct(s)],
            sorted((s for s in free if _timed_correct(s)), key=lambda s: s.speedup or 0.0),
        )
        slower = next((c[0] for c in choices if c), None)
        if slower is not None:
            used.add(slower.id)
            out.append((f, slower))
    return out


def _from_run(a: Attempt, task_signature: str, op_class: str, bottleneck: str) -> Episode:
    return Episode(
        id=f"run:{a.index}",
        source=a.source,
        task_signature=task_signature,
        op_class=op_class,
        bottleneck=bottleneck,
        tags=a.tags,
        verdict=a.verdict,
        reason=a.reason,
        speedup=a.speedup if a.speedup and a.speedup > 0 else None,
        index=a.index,
        parent=f"run:{a.parent}" if a.parent else "",
    )


def pairs(
    store: EpisodeStore,
    *,
    task_signature: str,
    op_class: str,
    bottleneck: str,
    source: str,
    run_attempts: Sequence[Attempt],
    k: int = 3,
) -> list[ContrastivePair]:
    """Up to `k` contrastive pairs for the task whose current kernel is `source`."""
    run = [_from_run(a, task_signature, op_class, bottleneck) for a in run_attempts]
    seen = {e.source for e in run}  # the run's attempts may be stored already
    same = {"$and": [{"op_class": op_class}, {"bottleneck": bottleneck}]}
    groups: dict[tuple[Origin, str], list[Episode]] = {}
    searches: list[tuple[Origin, dict[str, Any] | None]] = [("same class", same), ("similar", None)]
    for tier, where in searches:
        for e in store.search(source, n=POOL, where=where):
            if e.source in seen:
                continue
            seen.add(e.source)
            groups.setdefault((tier, e.task_signature), []).append(e)
    ranked: list[tuple[int, int, int, ContrastivePair]] = []
    run_key: tuple[Origin, str] = ("this run", task_signature)
    for gi, ((origin, _), group) in enumerate([(run_key, run), *groups.items()]):
        for rank, (f, s) in enumerate(_pair_group(group)):
            pair = ContrastivePair(faster=f, slower=s, origin=origin)
            ranked.append((_TIER[origin], rank, gi, pair))  # round-robin over tasks in a tier
    ranked.sort(key=lambda r: r[:3])
    return [r[3] for r in ranked[:k]]


def within_budget(pairs: Sequence[ContrastivePair], max_chars: int) -> list[ContrastivePair]:
    """The pairs, in order, that fit in `max_chars` (about CHARS_PER_TOKEN per token); a pair
    too large to fit is left out whole (half a kernel teaches nothing), smaller ones still fit."""
    out, used = [], 0
    for p in pairs:
        if used + p.chars <= max_chars:
            out.append(p)
            used += p.chars
    return out


def as_prompt(pairs: Sequence[ContrastivePair]) -> list[dict[str, Any]]:
    """The propose prompt's `contrastive` variable."""
    return [
        {
            "origin": p.origin,
            "task": p.faster.task_signature,
            "faster": {"source": p.faster.source, "speedup": float(p.faster.speedup or 0.0)},
            "slower": {
                "source": p.slower.source,
                "speedup": p.slower.speedup if p.slower.verdict == "correct" else None,
                "reason": p.slower_reason,
            },
        }
        for p in pairs
    ]
