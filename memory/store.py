"""The episodic memory: every verified attempt, right or wrong, with what it was tried on.

`EpisodeStore` is the role; `ChromaStore` keeps it in ChromaDB: a `PersistentClient` directory
(the caller passes settings.data_dir / "memory") by default, an `HttpClient` to a shared
`chroma run` server when given a URL, or an in-memory client when given neither (tests).

Every record read back is checked (`records.StoredMetadata`); one that is not valid (an older
version's import let it in) is skipped and noted in `ChromaStore.skipped`, never fatal.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

import chromadb
import httpx
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.api.types import Documents, EmbeddingFunction
from chromadb.config import Settings
from pydantic import BaseModel, ConfigDict

from kernelwright.memory.embeddings import CodeHashEmbedding
from kernelwright.memory.export_file import read_export
from kernelwright.memory.migrations import kind_from_signature, migrate, pages
from kernelwright.memory.records import BadRecord, check_metadata
from kernelwright.memory.stats import MemoryStats, TagStats, summarize
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.results import Attempt

__all__ = [
    "BadRecord",
    "ChromaStore",
    "Episode",
    "EpisodeStore",
    "MemoryStats",
    "Provenance",
    "TagStats",
]

REASON_CHARS = 500  # a verdict's reason is a line or two; a compile log is not kept whole
IMPROVEMENT = 1.05  # a correct step that gained at least this over its parent is a worked example


class StoreUnavailable(KernelwrightError):
    """The store cannot be opened: server unreachable, another embedding, a newer schema."""


class Provenance(BaseModel):
    """Where an attempt was made: the task (and its kind), what limited it, the GPU, the model,
    the run, and where in the reasoning graph: the techniques its parent had (`state`), the one
    it added (`technique`, "" if none the catalogue knows) and the parent's speedup.
    `original_source`: the task's own kernel, kept only with a step that improved on it (the
    before of a worked example whose parent is no stored attempt)."""

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
    kind: str = ""
    original_source: str = ""


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
    kind: str = ""  # the task's kind: "cuda", "kernelbench"
    before_source: str = ""  # the original kernel, when this step improved on it
    distance: float | None = None  # to the query, from search()

    @property
    def gain(self) -> float | None:
        """What this step measured over its parent (its speedup over the parent's), None when
        it was not correct and timed."""
        if self.verdict != "correct" or self.speedup is None or self.parent_speedup <= 0:
            return None
        return self.speedup / self.parent_speedup

    @classmethod
    def from_record(
        cls, id_: str, source: str, meta: dict[str, Any], distance: float | None = None
    ) -> Episode:
        """The attempt a stored record holds; BadRecord ("ID: FIELD: problem") when its
        metadata is not what kernelwright stores (a wrong type, a number not finite)."""
        try:
            m = check_metadata(meta)
        except BadRecord as exc:
            raise BadRecord(f"{id_}: {exc}") from None
        return cls(
            id=id_,
            source=source,
            task_signature=m.task_signature,
            op_class=m.op_class,
            bottleneck=m.bottleneck,
            tags=tuple(t for t in m.tags.split(",") if t),
            verdict=m.verdict,
            reason=m.reason,
            speedup=m.speedup if m.speedup > 0 else None,
            arch=m.arch,
            model=m.model,
            run_id=m.run_id,
            index=m.index,
            parent=m.parent,
            technique=m.technique,
            state=tuple(t for t in m.state.split(",") if t),
            parent_speedup=m.parent_speedup,
            explanation=m.explanation,
            kind=m.kind,
            before_source=m.before_source,
            distance=distance if distance is not None and math.isfinite(distance) else None,
        )


def record(attempt: Attempt, where: Provenance) -> tuple[str, str, dict[str, Any]]:
    """The id, document and flat metadata under which an attempt is stored."""
    meta: dict[str, Any] = {
        **where.model_dump(exclude={"original_source"}),
        "state": ",".join(where.state),
        "tags": ",".join(attempt.tags),
        "verdict": attempt.verdict,
        "reason": attempt.reason[:REASON_CHARS],
        "explanation": attempt.explanation[:REASON_CHARS],
        "speedup": float(attempt.speedup) if attempt.speedup else -1.0,
        "index": attempt.index,
        "parent": f"{where.run_id}:{attempt.parent}" if attempt.parent else "",
        "kept": attempt.kept,
        "kind": where.kind or kind_from_signature(where.task_signature),
    }
    if attempt.speedup and attempt.speedup > 0:
        meta["speedup_log"] = math.log(attempt.speedup)
        improved = (
            attempt.verdict == "correct" and attempt.speedup >= where.parent_speedup * IMPROVEMENT
        )
        if improved and not attempt.parent and where.original_source:
            meta["before_source"] = where.original_source  # no stored attempt holds this before
    return f"{where.run_id}:{attempt.index}", attempt.source, meta


_RUN_STAMP = re.compile(r"-(\d{8})-\d{6}(?:-\d+)?$")


def run_date(run_id: str) -> date | None:
    """The day a run began, read off the name `optimize` gives its run directory
    (TASK-YYYYmmdd-HHMMSS, maybe -N); None for a run id without one."""
    found = _RUN_STAMP.search(run_id)
    if not found:
        return None
    try:
        return date(int(found[1][:4]), int(found[1][4:6]), int(found[1][6:]))
    except ValueError:
        return None


def task_matches(signature: str, task: str) -> bool:
    """A task named by its whole signature, or by what comes before the parenthesis."""
    return signature == task or signature.split("(", 1)[0] == task


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
    def sources(self, ids: Sequence[str]) -> dict[str, str]: ...


HTTP_TIMEOUT_S = 30.0  # a memory server's answer, at most
PROBE_TIMEOUT_S = 5.0  # its heartbeat, before anything else is asked of it


def _answers(base: str, url: str) -> None:
    """StoreUnavailable in one line unless the server answers its heartbeat in time."""
    try:
        httpx.get(f"{base}/api/v2/heartbeat", timeout=PROBE_TIMEOUT_S)
    except httpx.TimeoutException:
        raise StoreUnavailable(
            f"memory server {url} did not answer within {PROBE_TIMEOUT_S:.0f} s: check it "
            "(chroma run --path DIR --port PORT) or unset memory.url"
        ) from None
    except httpx.HTTPError:
        raise _unreachable(url) from None


def _unreachable(url: str | None) -> StoreUnavailable:
    return StoreUnavailable(
        f"memory server {url} not reachable: start it (chroma run --path DIR --port PORT) or "
        "unset memory.url"
    )


def _client(path: Path | str | None, url: str | None) -> ClientAPI:
    settings = Settings(anonymized_telemetry=False)
    if url:
        u = urlparse(url if "//" in url else f"http://{url}")
        ssl = u.scheme == "https"
        port = u.port or (443 if ssl else 8000)
        host = u.hostname or "localhost"
        _answers(f"{'https' if ssl else 'http'}://{host}:{port}", url)
        client = chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=settings)
        session = getattr(getattr(client, "_server", None), "_session", None)
        if isinstance(session, httpx.Client):  # chromadb's own waits for ever
            session.timeout = httpx.Timeout(HTTP_TIMEOUT_S)
        return client
    if path is not None:
        Path(path).mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(path), settings=settings)
    return chromadb.EphemeralClient(settings=settings)


class ChromaStore:
    """Attempts in one Chroma collection, its schema brought up to date on open."""

    def __init__(
        self,
        client: ClientAPI,
        collection: Collection,
        embedding: EmbeddingFunction[Documents] | None = None,
    ) -> None:
        self.client = client
        self.collection = collection
        # the embedding every collection of it is opened with (memory/tunings.py too): never
        # the one a collection recorded, which Chroma would rebuild from what was stored (an
        # embedding server's old address, or its default that downloads a model)
        self.embedding = embedding or CodeHashEmbedding()
        self.batch = client.get_max_batch_size()
        self.skipped: dict[str, str] = {}  # id -> "ID: FIELD: problem", read back, not valid

    def close(self) -> None:
        """Let the client go: Chroma keeps one system (its SQLite files, an index's threads) per
        directory for the life of the process unless its last client closes. Idempotent."""
        close = getattr(self.client, "close", None)  # chromadb releases without it lack it
        if close is not None:
            close()

    def __enter__(self) -> ChromaStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
            embedding = embedding or CodeHashEmbedding()
            return cls(client, migrate(client, embedding), embedding)
        except ValueError as exc:
            text = " ".join(str(exc).split())
            if "Could not connect" in text:  # the server went between heartbeat and client
                raise _unreachable(url) from None
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

    def _valid(self, id_: str, meta: Any) -> bool:
        """Whether a stored record's metadata is valid; notes it in `skipped` when not."""
        problem = _problem(meta)
        if problem:
            self.skipped[id_] = f"{id_}: {problem}"
        return not problem

    def search(self, query: str, n: int = 5, where: dict[str, Any] | None = None) -> list[Episode]:
        """The `n` stored attempts nearest to `query` (CUDA source), optionally filtered;
        records that are not valid are skipped (and noted in `skipped`)."""
        total = self.count()
        if total == 0 or n <= 0:
            return []
        want = min(n, total)
        while True:
            got = self.collection.query(
                query_texts=[query],
                n_results=want,
                where=where,
                include=["documents", "metadatas", "distances"],
            )
            docs, metas, dists = got["documents"], got["metadatas"], got["distances"]
            assert docs is not None and metas is not None and dists is not None
            hits: list[Episode] = []
            for i, d, m, x in zip(got["ids"][0], docs[0], metas[0], dists[0], strict=True):
                try:
                    hits.append(Episode.from_record(i, d or "", dict(m or {}), float(x)))
                except BadRecord as exc:
                    self.skipped[i] = str(exc)
            bad = len(got["ids"][0]) - len(hits)
            if len(hits) >= n or not bad or len(got["ids"][0]) < want or want >= total:
                return hits[:n]
            want = min(total, want + bad)  # as many more as were skipped

    def _records(
        self, include: list[str], where: dict[str, Any] | None = None
    ) -> Iterator[tuple[str, dict[str, Any], str]]:
        """Every valid record (that matches `where`) as (id, metadata, document); the others
        noted in `skipped`."""
        for page in pages(self.collection, include, where):
            docs = page.get("documents") or [""] * len(page["ids"])
            metas = page.get("metadatas") or [{}] * len(page["ids"])
            for id_, meta, doc in zip(page["ids"], metas, docs, strict=True):
                if self._valid(id_, meta):
                    yield id_, dict(meta or {}), doc or ""

    def stats(self) -> MemoryStats:
        return summarize(meta for _, meta, _ in self._records(["metadatas"]))

    def export_jsonl(self, path: Path | str) -> int:
        """Write every valid record as {"id", "source", "metadata"} per line; returns how many."""
        n = 0
        with open(path, "w", encoding="utf-8") as f:
            for id_, meta, doc in self._records(["documents", "metadatas"]):
                row = {"id": id_, "source": doc, "metadata": meta}
                f.write(json.dumps(row, allow_nan=False) + "\n")
                n += 1
        return n

    def import_jsonl(self, path: Path | str) -> list[Episode]:
        """Add the records of an export that this store lacks (by id); returns those added.
        All or nothing: MemoryFileError, naming the first bad record, before anything is
        written; StoreUnavailable, with what was written taken back, if a write fails."""
        return self.import_rows(read_export(Path(path)), str(path))

    def import_rows(self, rows: list[dict[str, Any]], where: str) -> list[Episode]:
        """import_jsonl for the records read_export already checked in file `where`."""
        have = self.existing([r["id"] for r in rows])
        new = [r for r in rows if r["id"] not in have]
        for r in new:  # an export from an older schema lacks the newer fields
            meta = r["metadata"]
            speedup = float(meta["speedup"])
            if speedup > 0:
                meta.setdefault("speedup_log", math.log(speedup))
            meta.setdefault("kind", kind_from_signature(str(meta["task_signature"])))
        added = [Episode.from_record(r["id"], r["source"], r["metadata"]) for r in new]
        written: list[str] = []
        try:
            for i in range(0, len(new), self.batch):
                chunk = new[i : i + self.batch]
                self.collection.add(
                    ids=[r["id"] for r in chunk],
                    documents=[r["source"] for r in chunk],
                    metadatas=[r["metadata"] for r in chunk],
                )
                written += [r["id"] for r in chunk]
        except (ValueError, TypeError, RuntimeError, OSError) as exc:
            self.delete(written)
            text = " ".join(str(exc).split())
            raise StoreUnavailable(f"{where}: nothing imported: {text}") from None
        except BaseException:
            self.delete(written)
            raise
        return added

    def delete(self, ids: Sequence[str]) -> None:
        """Remove these records (ids the store lacks are ignored)."""
        for i in range(0, len(ids), self.batch):
            self.collection.delete(ids=list(ids[i : i + self.batch]))

    def sources(self, ids: Sequence[str]) -> dict[str, str]:
        """The stored source of each of `ids` the store holds, by id."""
        found: dict[str, str] = {}
        for i in range(0, len(ids), self.batch):
            got = self.collection.get(ids=list(ids[i : i + self.batch]), include=["documents"])
            found.update(zip(got["ids"], [d or "" for d in got["documents"] or []], strict=True))
        return found

    def episodes(self, where: dict[str, Any] | None = None) -> Iterator[Episode]:
        """Every valid stored attempt that matches `where` (all of them without it)."""
        for id_, meta, doc in self._records(["documents", "metadatas"], where):
            yield Episode.from_record(id_, doc, meta)

    def existing(self, ids: Sequence[str]) -> set[str]:
        """Those of `ids` the store holds."""
        found: set[str] = set()
        for i in range(0, len(ids), self.batch):
            found.update(self.collection.get(ids=list(ids[i : i + self.batch]), include=[])["ids"])
        return found

    def matching(
        self,
        *,
        run: str | None = None,
        task: str | None = None,
        before: date | None = None,
        invalid: bool = False,
    ) -> tuple[list[str], int]:
        """The ids of the records that match every filter given: of run `run`, on task `task`
        (see task_matches), of a run begun before `before` (see run_date), not valid; and how
        many matched the others but carry no date, so `before` could not take them."""
        ids: list[str] = []
        undated = 0
        for page in pages(self.collection, ["metadatas"]):
            for id_, meta in zip(page["ids"], page["metadatas"], strict=True):
                meta = dict(meta or {})
                run_id = str(meta.get("run_id", ""))
                if run is not None and run_id != run:
                    continue
                if task is not None and not task_matches(str(meta.get("task_signature", "")), task):
                    continue
                if invalid and not _problem(meta):
                    continue
                if before is not None:
                    day = run_date(run_id)
                    if day is None:
                        undated += 1
                        continue
                    if day >= before:
                        continue
                ids.append(id_)
        return sorted(ids), undated


def _problem(meta: Any) -> str:
    """What is wrong with a stored record's metadata; "" when it is valid."""
    try:
        check_metadata(dict(meta or {}))
    except BadRecord as exc:
        return str(exc)
    return ""


def _check(store: ChromaStore) -> EpisodeStore:  # mypy: ChromaStore plays the role
    return store
