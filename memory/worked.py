"""Worked examples on the reasoning graph's edges (after ReGraphT): for the technique the search
picked, a verified before/after pair, so a small model sees what the step looks like in code.

Two sources. The memory: a stored attempt that applied the technique, was correct and gained at
least store.IMPROVEMENT over its parent; its before is the parent's stored source, or, for a
step from the task's own kernel, the `before_source` stored with it (nothing is kept twice).
The shipped starter set (shipped_examples.py). The memory's best for a similar task (same
signature, else same op class; the same GPU architecture first) wins, then a shipped one for a
similar task, then either for another task. Only pairs of the task's own kind are shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from kernelwright.memory.store import IMPROVEMENT, ChromaStore, Episode, EpisodeStore
from kernelwright.memory.techniques import catalogue

MAX_LINES = 60  # of each side in a prompt; a longer kernel is cut, and a whole one preferred
POOL = 24  # stored attempts on the technique fetched, nearest to the current kernel first


class Side(BaseModel):
    """One side of a pair: its source, and its launch where known (block, grid, shared bytes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    source: str
    launch: dict[str, Any] | None = None


class WorkedExample(BaseModel):
    """A before/after pair for one technique. `speedup`: after over before, measured on `gpu`
    (`arch`); None when the pair was not measured (a shipped illustration)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str  # RUN:INDEX of the after attempt, or the shipped pair's name
    origin: Literal["memory", "shipped"]
    technique: str
    kind: str
    task_signature: str
    op_class: str
    before: Side
    after: Side
    speedup: float | None = None
    gpu: str = ""  # the GPU's name, where known
    arch: str = ""
    note: str = ""

    @property
    def measured(self) -> bool:
        return self.speedup is not None

    @property
    def whole(self) -> bool:
        """Both sides fit in a prompt uncut."""
        return all(_lines(s.source) <= MAX_LINES for s in (self.before, self.after))


def _lines(source: str) -> int:
    return len(source.rstrip().splitlines())


def from_memory(store: EpisodeStore, technique: str, kind: str, source: str) -> list[WorkedExample]:
    """The stored steps that applied `technique` to a task of `kind` and gained at least
    IMPROVEMENT, nearest to `source` first; a step whose before is gone (deleted) is left out."""
    where = {"$and": [{"technique": technique}, {"verdict": "correct"}, {"kind": kind}]}
    return _with_before(store, store.search(source, n=POOL, where=where))


def every_stored(store: ChromaStore) -> list[WorkedExample]:
    """Every worked example the store holds (for `kernelwright memory examples`)."""
    return _with_before(store, list(store.episodes({"verdict": "correct"})))


def _with_before(store: EpisodeStore, episodes: Sequence[Episode]) -> list[WorkedExample]:
    """The episodes that are worked examples (a technique, a gain of IMPROVEMENT at least, a
    before still stored and other than the after: the store keeps no launch, so a change of
    launch alone shows nothing), as pairs, in the same order."""
    steps = [e for e in episodes if e.technique and (e.gain or 0) >= IMPROVEMENT]
    parents = store.sources([e.parent for e in steps if e.parent])
    found = []
    for e in steps:
        before = parents.get(e.parent, "") if e.parent else e.before_source
        if before and before.strip() != e.source.strip():
            found.append(
                WorkedExample(
                    id=e.id,
                    origin="memory",
                    technique=e.technique,
                    kind=e.kind,
                    task_signature=e.task_signature,
                    op_class=e.op_class,
                    before=Side(source=before),
                    after=Side(source=e.source),
                    speedup=e.gain,
                    arch=e.arch,
                )
            )
    return found


def choose(
    stored: Sequence[WorkedExample],
    shipped: Sequence[WorkedExample],
    *,
    technique: str,
    kind: str,
    task_signature: str,
    op_class: str,
    arch: str,
) -> WorkedExample | None:
    """The pair to show for `technique`: the best measured in memory for a similar task, then
    a shipped one (measured first) for a similar task, then either for another task."""

    def key(e: WorkedExample) -> tuple[Any, ...]:
        tier = 0 if e.task_signature == task_signature else 1 if e.op_class == op_class else 2
        memory = e.origin == "memory"
        return (
            tier == 2,  # a similar task first
            not memory,  # what this machine measured first
            memory and e.arch != arch,  # on this GPU's architecture first
            not e.measured,
            tier,
            not e.whole,
            -(e.speedup or 0.0),
        )

    fits = [e for e in (*stored, *shipped) if e.technique == technique and e.kind == kind]
    return min(fits, key=key, default=None)  # min is stable: the nearest of equals


def clip(source: str, max_lines: int = MAX_LINES) -> tuple[str, int]:
    """The first `max_lines` lines of `source`, and how many more it has."""
    lines = source.rstrip().splitlines()
    return "\n".join(lines[:max_lines]), max(0, len(lines) - max_lines)


def where_measured(e: WorkedExample, arch: str) -> str:
    """The GPU a pair was measured on, as the prompt says it ("" when not measured)."""
    if not e.measured:
        return ""
    if e.gpu:
        return f"{e.gpu} ({e.arch})" if e.arch else e.gpu
    if not e.arch:
        return "a GPU of this machine's memory"
    return f"an {e.arch} GPU, as here" if e.arch == arch else f"an {e.arch} GPU (this one: {arch})"


def as_prompt(e: WorkedExample, *, task_signature: str, op_class: str, arch: str) -> dict[str, Any]:
    """The propose prompt's `worked_example`."""
    relation = (
        "this task"
        if e.task_signature == task_signature
        else "a similar task"
        if e.op_class == op_class
        else "another kind of task"
    )
    sides = {}
    for name, side in (("before", e.before), ("after", e.after)):
        text, hidden = clip(side.source)
        sides[name] = {"source": text, "hidden": hidden, "launch": side.launch}
    known = catalogue().get(e.technique)
    return {
        "tag": e.technique,
        "name": known.name if known else e.technique,
        "origin": e.origin,
        "task": e.task_signature,
        "relation": relation,
        "measured": e.measured,
        "speedup": e.speedup,
        "gpu": where_measured(e, arch),
        "note": e.note,
        **sides,
    }


def label(e: WorkedExample, arch: str) -> str:
    """One line for the progress: which pair, and how it was measured."""
    how = f"measured {e.speedup:.2f}x on {where_measured(e, arch)}" if e.speedup else "illustration"
    return f"{e.technique} on {e.task_signature} ({e.origin}, {how})"
