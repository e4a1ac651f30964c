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
from kernelwright.memory.export_file import read_export
from kernelwright.memory.migrations import migrate, pages
from kernelwright.memory.stats import MemoryStats, TagStats, summarize
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.results import Attempt

__all__ = ["ChromaStore", "Episode", "EpisodeStore", "MemoryStats", "Provenance", "TagStats"]

REASON_CHARS = 500  # a verdict's reason is a line or two; a compile log is not kept whole


class StoreUnavailable(KernelwrightError):
    """The store cannot be opened: server unreachable, another embedding, a newer schema."""


class Provenance(BaseModel):
    """Where an attempt was made: the task, what limited it, the GPU, the model, the run, and
    where in the reasoning graph: the techniques its parent had (`state`), the one it added
    (`technique`, "" if none the catalogue knows) and the parent's speedup."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    task_signature: str
    op_class: str
    bottleneck: str
    arch: str
    model: str
    run_id: str
    technique: str = ""
    state: tuple[str, ...] = ()
    parent_speedup: float = 1.0


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
    technique: str = ""
    state: tuple[str, ...] = ()
    parent_speedup: float = 1.0
    explanation: str = ""
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
            technique=str(meta.get("technique", "")),
            state=tuple(t for t in str(meta.get("state", "")).split(",") if t),
            parent_speedup=float(meta.get("parent_speedup", 1.0)),
            explanation=str(meta.get("explanation", "")),
            distance=distance,
        )


def record(attempt: Attempt, where: Provenance) -> tuple[str, str, dict[str, Any]]:
    """The id, document and flat metadata under which an attempt is stored."""
    meta: dict[str, Any] = {
        **where.model_dump(),
        "state": ",".join(where.state),
        "tags": ",".join(attempt.tags),
        "verdict": attempt.verdict,
        "reason": attempt.reason[:REASON_CHARS],
        "explanation": attempt.explanation[:REASON_CHARS],
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
    def import_jsonl(self, path: Path | str) -> list[Episode]: ...


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
        """The store at `url` (a `chroma run` server), else in directory `path`, else in memory;
        StoreUnavailable with the fix when it cannot be opened."""
        where = url or str(path or "memory")
        try:
            client = _client(path, url)
            return cls(client, migrate(client, embedding or CodeHashEmbedding()))
        except ValueError as exc:
            text = " ".join(str(exc).split())
            if "Could not connect" in text:
                raise StoreUnavailable(
                    f"memory server {url} not reachable: start it (chroma run --path DIR "
                    "--port PORT) or unset memory.url"
                ) from None
            if "conflict" in text:
                made = text.rsplit("persisted: ", 1)[-1]
                raise StoreUnavailable(
                    f"memory at {where} was built with the embedding {made}: set memory.embedding "
                    "back, or use another memory.dir for the new one"
                ) from None
            raise StoreUnavailable(f"memory at {where}: {text}") from None
        except (RuntimeError, OSError) as exc:
            raise StoreUnavailable(f"memory at {where}: {exc}") from None

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
        return summarize(
            meta for page in pages(self.collection, ["metadatas"]) for meta in page["metadatas"]
        )

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

    def import_jsonl(self, path: Path | str) -> list[Episode]:
        """Add the records of an export that this store lacks (by id); returns those added.
        MemoryFileError, naming the line, if any line is not a record."""
        rows = read_export(Path(path))
        added: list[Episode] = []
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
                added += [Episode.from_record(r["id"], r["source"], r["metadata"]) for r in new]
        return added


def _check(store: ChromaStore) -> EpisodeStore:  # mypy: ChromaStore plays the role
    return store
