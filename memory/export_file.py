"""The memory's export format: JSON Lines, one stored attempt per line as {"id", "source",
"metadata"}, so experience moves between machines (`kernelwright memory export | import`).

Record N is the one on line N. A file is taken whole or not at all: every record is checked
(its metadata with `records.StoredMetadata`) before the store writes any."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chromadb.api.types import validate_metadata

from kernelwright.memory.records import BadRecord, check_metadata
from kernelwright.tools.errors import KernelwrightError


class MemoryFileError(KernelwrightError):
    """An export file cannot be read: the message names the file and the record."""


def read_export(path: Path) -> list[dict[str, Any]]:
    """The records of an export file, each {"id", "source", "metadata"}, all checked; the last
    of a repeated id wins. MemoryFileError names the first bad record: `FILE: record N: ...`."""
    try:
        lines = path.read_text("utf-8").splitlines()
    except FileNotFoundError:
        raise MemoryFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MemoryFileError(f"{path}: cannot read: {exc}") from None
    rows: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise MemoryFileError(f"{path}: record {n}: not valid JSON: {exc.msg}") from None
        problem = _record_problem(row)
        if problem:
            raise MemoryFileError(f"{path}: record {n}: {problem}")
        rows[row["id"]] = row
    return list(rows.values())


def _record_problem(row: Any) -> str:
    if not isinstance(row, dict) or set(row) != {"id", "source", "metadata"}:
        return 'expected an object with exactly "id", "source" and "metadata"'
    if not isinstance(row["id"], str) or not row["id"]:
        return '"id" must be a non-empty string'
    if not isinstance(row["source"], str):
        return '"source" must be a string'
    meta = row["metadata"]
    if not isinstance(meta, dict) or not all(
        isinstance(v, str | int | float | bool) for v in meta.values()
    ):
        return '"metadata" must be an object of strings, numbers and booleans'
    try:
        check_metadata(meta, complete=True)
        validate_metadata(meta)  # what Chroma itself would refuse (a reserved key)
    except BadRecord as exc:
        return str(exc)
    except (TypeError, ValueError) as exc:
        return " ".join(str(exc).split())
    return ""
