"""What the memory holds, summed up from the stored attempts' metadata (pure, no database)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict


class TagStats(BaseModel):
    model_config = ConfigDict(frozen=True)
    count: int
    correct: int
    mean_speedup: float | None  # geometric mean over the correct, timed attempts
    best_speedup: float | None = None


class MemoryStats(BaseModel):
    model_config = ConfigDict(frozen=True)
    total: int
    by_verdict: dict[str, int]
    by_tag: dict[str, TagStats]
    by_arch: dict[str, int]
    by_task: dict[str, TagStats] = {}  # task signature
    by_bottleneck: dict[str, TagStats] = {}
    by_op_class: dict[str, int] = {}


class _Tally:
    def __init__(self) -> None:
        self.count = 0
        self.correct = 0
        self.logs: list[float] = []

    def add(self, verdict: str, speedup: float) -> None:
        self.count += 1
        if verdict == "correct":
            self.correct += 1
            if speedup > 0:
                self.logs.append(math.log(speedup))

    def done(self) -> TagStats:
        logs = self.logs
        return TagStats(
            count=self.count,
            correct=self.correct,
            mean_speedup=math.exp(sum(logs) / len(logs)) if logs else None,
            best_speedup=math.exp(max(logs)) if logs else None,
        )


def _finish(tallies: dict[str, _Tally]) -> dict[str, TagStats]:
    return {key: t.done() for key, t in sorted(tallies.items())}


def summarize(metadatas: Iterable[Mapping[str, Any]]) -> MemoryStats:
    """Counts by verdict, architecture and op class; success and speedups by technique tag,
    task and bottleneck."""
    by_verdict: dict[str, int] = {}
    by_arch: dict[str, int] = {}
    by_op: dict[str, int] = {}
    tags: dict[str, _Tally] = {}
    tasks: dict[str, _Tally] = {}
    bottlenecks: dict[str, _Tally] = {}
    total = 0
    for meta in metadatas:
        total += 1
        verdict, speedup = str(meta.get("verdict", "")), float(meta.get("speedup", -1))
        by_verdict[verdict] = by_verdict.get(verdict, 0) + 1
        arch, op = str(meta.get("arch", "")), str(meta.get("op_class", ""))
        by_arch[arch] = by_arch.get(arch, 0) + 1
        by_op[op] = by_op.get(op, 0) + 1
        for tag in filter(None, str(meta.get("tags", "")).split(",")):
            tags.setdefault(tag, _Tally()).add(verdict, speedup)
        tasks.setdefault(str(meta.get("task_signature", "")), _Tally()).add(verdict, speedup)
        bottlenecks.setdefault(str(meta.get("bottleneck", "")), _Tally()).add(verdict, speedup)
    return MemoryStats(
        total=total,
        by_verdict=by_verdict,
        by_tag=_finish(tags),
        by_arch=by_arch,
        by_task=_finish(tasks),
        by_bottleneck=_finish(bottlenecks),
        by_op_class=by_op,
    )
