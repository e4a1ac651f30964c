"""The episodic memory: every verified attempt, right or wrong, with what it was tried on.

`EpisodeStore` is the role; `ChromaStore` keeps it in ChromaDB: a `PersistentClient` directory
(the caller passes settings.data_dir / "memory") by default, an `HttpClient` to a shared
`chroma run` server when given a URL, or an in-memory client when given neither (tests).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

import chromadb
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.api.types import Documents, EmbeddingFunction
from chromadb.config import Settings
from pydantic import BaseModel, ConfigDict

from kernelwright.memory.embeddings import CodeHashEmbedding
from kernelwright.memory.migrations import migrate, pages
from kernelwright.tools.results import Attempt

REASON_CHARS = 500  # a verdict's reason is a line or two; a compile log is not kept whole


class Provenance(BaseModel):
    """Where an attempt was made: the task, what limited it, the GPU, the model, the run."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    task_signature: str
    op_class: str
    bottleneck: str
    arch: str
    model: str
    run_id: str


class Episode(BaseModel):
    """One stored attempt as read back (speedup None: not timed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    source: str
    task_signature: str = ""
    op_class: str = ""
    bottleneck: str = ""
    tags: tuple[str, ...] = ()
    verdict: str = ""
    reason: str = ""
    speedup: float | None = None
    arch: str = ""
    model: str = ""
    run_id: str = ""
    index: int = 0
    parent: str = ""  # id of the attempt it improved on; "" for the original kernel
    distance: float | None = None  # to the query, from search()

    @classmethod
    def from_record(
        cls, id_: str, source: str, meta: dict[str, Any], distance: float | None = None
    ) -> Episode:
        speedup = float(meta.get("speedup", -1.0))
        tags = str(meta.get("tags", ""))
        return cls(
            id=id_,
            source=source,
            task_signature=str(meta.get("task_signature", "")),
            op_class=str(meta.get("op_class", "")),
            bottleneck=str(meta.get("bottleneck", "")),
            tags=tuple(t for t in tags.split(",") if t),
            verdict=str(meta.get("verdict", "")),
            reason=str(meta.get("reason", "")),
            speedup=speedup if speedup > 0 else None,
            arch=str(meta.get("arch", "")),
            model=str(meta.get("model", "")),
            run_id=str(meta.get("run_id", "")),
            index=int(meta.get("index", 0)),
            parent=str(meta.get("parent", "")),
            distance=distance,
        )


class TagStats(BaseModel):
    model_config = ConfigDict(frozen=True)
    count: int
    correct: int
    mean_speedup: float | None  # geometric mean over the correct, timed attempts


class MemoryStats(BaseModel):
    model_config = ConfigDict(frozen=True)
    total: int
    by_verdict: dict[str, int]
    by_tag: dict[str, TagStats]
    by_arch: dict[str, int]


def record(attempt: Attempt, where: Provenance) -> tuple[str, str, dict[str, Any]]:
    """The id, document and flat metadata under which an attempt is stored."""
    meta: dict[str, Any] = {
        **where.model_dump(),
        "tags": ",".join(attempt.tags),
        "verdict": attempt.verdict,
        "reason": attempt.reason[:REASON_CHARS],
        "speedup": float(attempt.speedup) if attempt.speedup else -1.0,
        "index": attempt.index,
        "parent": f"{where.run_id}:{attempt.parent}" if attempt.parent else "",
        "kept": attempt.kept,
    }
    if attempt.speedup and attempt.speedup > 0:
        meta["speedup_log"] = math.log(attempt.speedup)
    return f"{where.run_id}:{attempt.index}", attempt.source, meta


class EpisodeStore(Protocol):
    def add(
        self,
        attempt: Attempt,
        *,
        task_signature: str,
        op_class: str,
        bottleneck: str,
        arch: str,
        model: str,
        run_id: str,
    ) -> str: ...
    def add_many(self, items: Iterable[tuple[Attempt, Provenance]]) -> list[str]: ...
    def count(self) -> int: ...
    def search(
        self, query: str, n: int = 5, where: dict[str, Any] | None = None
    ) -> list[Episode]: ...
    def stats(self) -> MemoryStats: ...
    def export_jsonl(self, path: Path | str) -> int: ...
    def import_jsonl(self, path: Path | str) -> int: ...


def _client(path: Path | str | None, url: str | None) -> ClientAPI:
    settings = Settings(anonymized_telemetry=False)
    if url:
        u = urlparse(url if "//" in url else f"http://{url}")
        ssl = u.scheme == "https"
        port = u.port or (443 if ssl else 8000)
        host = u.hostname or "localhost"
        return chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=settings)
    if path is not None:
        Path(path).mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(path), settings=settings)
    return chromadb.EphemeralClient(settings=settings)


class ChromaStore:
    """Attempts in one Chroma collection, its schema brought up to date on open."""

    def __init__(self, client: ClientAPI, collection: Collection) -> None:
        self.client = client
        self.collection = collection
        self.batch = client.get_max_batch_size()

    @classmethod
    def open(
        cls,
        path: Path | str | None = None,
        url: str | None = None,
        embedding: EmbeddingFunction[Documents] | None = None,
    ) -> ChromaStore:
        client = _client(path, url)
        return cls(client, migrate(client, embedding or CodeHashEmbedding()))

    def add(
        self,
        attempt: Attempt,
        *,
        task_signature: str,
        op_class: str,
        bottleneck: str,
        arch: str,
        model: str,
        run_id: str,
    ) -> str:
        where = Provenance(
            task_signature=task_signature,
            op_class=op_class,
            bottleneck=bottleneck,
            arch=arch,
            model=model,
            run_id=run_id,
        )
        return self.add_many([(attempt, where)])[0]

    def add_many(self, items: Iterable[tuple[Attempt, Provenance]]) -> list[str]:
        """Store attempts in batches; the same run and index again replaces the record."""
        rows = [record(a, w) for a, w in items]
        for i in range(0, len(rows), self.batch):
            chunk = rows[i : i + self.batch]
            self.collection.upsert(
                ids=[r[0] for r in chunk],
                documents=[r[1] for r in chunk],
                metadatas=[r[2] for r in chunk],
            )
        return [r[0] for r in rows]

    def count(self) -> int:
        return self.collection.count()

    def search(self, query: str, n: int = 5, where: dict[str, Any] | None = None) -> list[Episode]:
        """The `n` stored attempts nearest to `query` (CUDA source), optionally filtered."""
        total = self.count()
        if total == 0 or n <= 0:
            return []
        got = self.collection.query(
            query_texts=[query],
            n_results=min(n, total),
            where=where,
            include=["documents", "metadatas", "distances"],
        )
        docs, metas, dists = got["documents"], got["metadatas"], got["distances"]
        assert docs is not None and metas is not None and dists is not None
        return [
            Episode.from_record(i, d or "", dict(m or {}), float(x))
            for i, d, m, x in zip(got["ids"][0], docs[0], metas[0], dists[0], strict=True)
        ]

    def stats(self) -> MemoryStats:
        by_verdict: dict[str, int] = {}
        by_arch: dict[str, int] = {}
        tags: dict[str, list[float]] = {}
        tag_count: dict[str, int] = {}
        tag_correct: dict[str, int] = {}
        total = 0
        for page in pages(self.collection, ["metadatas"]):
            for meta in page["metadatas"]:
                total += 1
                verdict, speedup = str(meta.get("verdict", "")), float(meta.get("speedup", -1))
                by_verdict[verdict] = by_verdict.get(verdict, 0) + 1
                arch = str(meta.get("arch", ""))
                by_arch[arch] = by_arch.get(arch, 0) + 1
                for tag in filter(None, str(meta.get("tags", "")).split(",")):
                    tag_count[tag] = tag_count.get(tag, 0) + 1
                    tags.setdefault(tag, [])
                    if verdict == "correct":
                        tag_correct[tag] = tag_correct.get(tag, 0) + 1
                        if speedup > 0:
                            tags[tag].append(math.log(speedup))
        by_tag = {
            t: TagStats(
                count=tag_count[t],
                correct=tag_correct.get(t, 0),
                mean_speedup=math.exp(sum(logs) / len(logs)) if logs else None,
            )
            for t, logs in sorted(tags.items())
        }
        return MemoryStats(total=total, by_verdict=by_verdict, by_tag=by_tag, by_arch=by_arch)

    def export_jsonl(self, path: Path | str) -> int:
        """Write every record as {"id", "source", "metadata"} per line; returns how many."""
        n = 0
        with open(path, "w", encoding="utf-8") as f:
            for page in pages(self.collection, ["documents", "metadatas"]):
                for id_, doc, meta in zip(
                    page["ids"], page["documents"], page["metadatas"], strict=True
                ):
                    f.write(json.dumps({"id": id_, "source": doc, "metadata": meta}) + "\n")
                    n += 1
        return n

    def import_jsonl(self, path: Path | str) -> int:
        """Add the records of an export that this store lacks (by id); returns how many."""
        rows = [json.loads(line) for line in Path(path).read_text("utf-8").splitlines() if line]
        added = 0
        for i in range(0, len(rows), self.batch):
            chunk = rows[i : i + self.batch]
            have = set(self.collection.get(ids=[r["id"] for r in chunk], include=[])["ids"])
            new = [r for r in chunk if r["id"] not in have]
            for r in new:  # an export from an older schema lacks the newer fields
                speedup = float(r["metadata"].get("speedup", -1.0))
                if speedup > 0:
                    r["metadata"].setdefault("speedup_log", math.log(speedup))
            if new:
                self.collection.add(
                    ids=[r["id"] for r in new],
                    documents=[r["source"] for r in new],
                    metadatas=[r["metadata"] for r in new],
                )
                added += len(new)
        return added


def _check(store: ChromaStore) -> EpisodeStore:  # mypy: ChromaStore plays the role
    return store
