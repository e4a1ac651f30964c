"""The memory's schema evolves by ordered migrations, applied on open (after simonw/llm).

Each migration is a small function registered with `@migration`; its version is its place in
the list. The applied version lives in the attempts collection's metadata (`schema_version`);
a store without that collection is at version 0. Never edit a shipped migration: add one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.api.types import Documents, EmbeddingFunction
from chromadb.errors import NotFoundError

COLLECTION = "attempts"
VERSION_KEY = "schema_version"
PAGE = 1000

Migration = Callable[[ClientAPI, EmbeddingFunction[Documents]], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


def schema_version(client: ClientAPI) -> int:
    try:
        meta = client.get_collection(COLLECTION).metadata or {}
    except NotFoundError:
        return 0
    return int(meta.get(VERSION_KEY, 0))


def _set_version(client: ClientAPI, version: int) -> None:
    col = client.get_collection(COLLECTION)
    meta: dict[str, Any] = dict(col.metadata or {})
    meta[VERSION_KEY] = version  # modify() replaces the metadata, so keep the other keys
    col.modify(metadata=meta)


def migrate(
    client: ClientAPI, embedding: EmbeddingFunction[Documents], upto: int | None = None
) -> Collection:
    """Apply the migrations the store lacks (up to `upto`, for tests) and return the collection."""
    current = schema_version(client)
    if current > len(MIGRATIONS):
        raise RuntimeError(
            f"memory schema version {current} is newer than this kernelwright knows "
            f"({len(MIGRATIONS)}): upgrade kernelwright"
        )
    target = len(MIGRATIONS) if upto is None else upto
    for version in range(current + 1, target + 1):
        MIGRATIONS[version - 1](client, embedding)
        _set_version(client, version)
    return client.get_collection(COLLECTION, embedding_function=embedding)  # type: ignore[arg-type]


def pages(
    col: Collection, include: list[str], where: dict[str, Any] | None = None
) -> Iterator[dict[str, Any]]:
    """Every record (that matches `where`), a page at a time (ids always, plus `include`)."""
    offset = 0
    while True:
        got = col.get(limit=PAGE, offset=offset, where=where, include=include)  # type: ignore[arg-type]
        if not got["ids"]:
            return
        yield dict(got)
        offset += len(got["ids"])


@migration
def m001_create_attempts(client: ClientAPI, embedding: EmbeddingFunction[Documents]) -> None:
    """One collection of attempts: document = source, cosine distance on the given embedding."""
    client.create_collection(
        COLLECTION,
        embedding_function=embedding,  # type: ignore[arg-type]
        configuration={"hnsw": {"space": "cosine"}},
        metadata={VERSION_KEY: 0, "description": "kernelwright verified attempts"},
    )


@migration
def m002_speedup_log(client: ClientAPI, embedding: EmbeddingFunction[Documents]) -> None:
    """Add `speedup_log` (natural log of the speedup) to timed attempts, for the reasoning
    graph's mean log-speedup; untimed attempts (speedup -1.0) get no such field."""
    col = client.get_collection(COLLECTION, embedding_function=embedding)  # type: ignore[arg-type]
    for page in pages(col, ["metadatas"]):
        ids, metas = [], []
        for id_, meta in zip(page["ids"], page["metadatas"], strict=True):
            speedup = float((meta or {}).get("speedup", -1.0))
            if speedup > 0 and "speedup_log" not in (meta or {}):
                ids.append(id_)
                metas.append({"speedup_log": math.log(speedup)})
        if ids:
            col.update(ids=ids, metadatas=metas)  # type: ignore[arg-type]


def kind_from_signature(signature: str) -> str:
    """The task kind of a record made before records named it: a KernelBench problem's
    signature says so (memory/signature.py), every other was a CUDA task's."""
    return "kernelbench" if signature.startswith("kernelbench:") else "cuda"


@migration
def m003_kind(client: ClientAPI, embedding: EmbeddingFunction[Documents]) -> None:
    """Add `kind` (the task's kind) to every record, so a worked example is shown only to a
    task of its own kind."""
    col = client.get_collection(COLLECTION, embedding_function=embedding)  # type: ignore[arg-type]
    for page in pages(col, ["metadatas"]):
        ids, metas = [], []
        for id_, meta in zip(page["ids"], page["metadatas"], strict=True):
            if "kind" not in (meta or {}):
                ids.append(id_)
                metas.append(
                    {"kind": kind_from_signature(str((meta or {}).get("task_signature", "")))}
                )
        if ids:
            col.update(ids=ids, metadatas=metas)  # type: ignore[arg-type]


TUNINGS = "tunings"


@migration
def m004_create_tunings(client: ClientAPI, embedding: EmbeddingFunction[Documents]) -> None:
    """A second collection, `tune`'s measurements: one record per configuration checked (the
    kernel's source as the document, its settings and gain per GPU architecture), so a later
    tune on the same architecture tries earlier winners first (memory/tunings.py)."""
    client.create_collection(
        TUNINGS,
        embedding_function=embedding,  # type: ignore[arg-type]
        configuration={"hnsw": {"space": "cosine"}},
        metadata={"description": "kernelwright tune: each configuration's gain per GPU arch"},
    )
