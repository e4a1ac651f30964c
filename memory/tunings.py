"""What `kernelwright tune` measured, per GPU architecture: one record per configuration it
checked, in the `tunings` collection (migration m004), beside the attempts. The document is the
kernel's source; the metadata says on which task and architecture, which configuration (its
settings as tools/tune.Config keeps them, JSON), its verdict, speedup and gain over the kernel
as given, and whether it won. A later tune on the same architecture asks `winners` which
configurations to try first: this task's first, then related tasks', by gain.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kernelwright.memory.migrations import TUNINGS, pages
from kernelwright.memory.store import ChromaStore, StoreUnavailable


class TuneRecord(BaseModel):
    """One checked configuration (speedup and gain -1.0: not timed)."""

    model_config = ConfigDict(frozen=True, strict=True, allow_inf_nan=False, extra="forbid")
    task_signature: str
    op_class: str
    arch: str
    run_id: str = ""  # the tune's own id: the run it followed, or TASK-tune-DATE-TIME
    config: str = ""  # as a person reads it
    settings: str = "{}"  # JSON: each dimension's value
    verdict: str = ""
    speedup: float = -1.0
    gain: float = -1.0
    won: bool = False


class TuneMemory:
    """The tunings collection of a store."""

    def __init__(self, store: ChromaStore) -> None:
        # with the store's own embedding, never the one the collection recorded: Chroma would
        # rebuild that from what was stored, an embedding server's old address included (a
        # review had a tune's kernels posted to the Ollama the settings had moved away from)
        try:
            self.collection = store.client.get_collection(
                TUNINGS,
                embedding_function=store.embedding,
            )
        except ValueError as exc:
            made = " ".join(str(exc).split()).rsplit("persisted: ", 1)[-1]
            raise StoreUnavailable(
                f"the memory's tunings were built with the embedding {made}: set "
                "memory.embedding back, or use another memory.dir for the new one"
            ) from None

    def add(self, source: str, records: Sequence[TuneRecord]) -> None:
        """Keep a tune's records (the same run and place again replaces them)."""
        if not records:
            return
        self.collection.upsert(
            ids=[f"{r.run_id}:tune:{i}" for i, r in enumerate(records)],
            documents=[source] * len(records),
            metadatas=[r.model_dump() for r in records],
        )

    def records(self, arch: str) -> list[TuneRecord]:
        """Every valid record of this architecture (one an older version let in is passed
        over)."""
        out = []
        for page in pages(self.collection, ["metadatas"]):
            for meta in page["metadatas"]:
                try:
                    record = TuneRecord.model_validate(dict(meta or {}))
                except ValidationError:
                    continue
                if record.arch == arch:
                    out.append(record)
        return out

    def winners(self, arch: str, task_signature: str, n: int = 3) -> list[dict[str, Any]]:
        """The settings of earlier winners on this architecture, at most `n`, this task's
        first, then by gain; each once."""
        won = [r for r in self.records(arch) if r.won and r.gain > 1.0]
        won.sort(key=lambda r: (r.task_signature != task_signature, -r.gain))
        out: list[dict[str, Any]] = []
        for r in won:
            settings = json.loads(r.settings)
            if settings not in out:
                out.append(settings)
        return out[:n]
