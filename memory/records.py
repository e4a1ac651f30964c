"""What a stored attempt's metadata must be: the flat fields that `store.record` writes to
Chroma and that an export carries, checked with pydantic (strict types, finite numbers).

`memory import` checks every record of a file with it before it writes any; reading the store
back checks each record again, so one that an older version let in is skipped, not fatal.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from kernelwright.tools.errors import KernelwrightError

INT64_MAX = 2**63 - 1  # what Chroma keeps as an integer


class BadRecord(KernelwrightError):
    """A record's metadata is not what kernelwright stores; the message names the field."""


class StoredMetadata(BaseModel):
    """One stored attempt's metadata. Tags and state are comma-separated (Chroma keeps scalars
    only); speedup -1.0: not timed. Keys this version does not know are kept if scalar and
    finite (a newer version's export)."""

    model_config = ConfigDict(frozen=True, extra="allow", strict=True, allow_inf_nan=False)
    # every version of kernelwright has written these: an export must carry them
    task_signature: str = ""
    op_class: str = ""
    bottleneck: str = ""
    arch: str = ""
    model: str = ""
    run_id: str = ""
    tags: str = ""
    verdict: str = ""
    reason: str = ""
    speedup: float = -1.0
    index: int = Field(default=0, ge=0, le=INT64_MAX)
    parent: str = ""
    kept: bool = False
    # added later: an older export lacks them
    technique: str = ""
    state: str = ""
    parent_speedup: float = 1.0
    explanation: str = ""
    speedup_log: float | None = None
    kind: str = ""
    before_source: str = ""


REQUIRED = (
    "task_signature",
    "op_class",
    "bottleneck",
    "arch",
    "model",
    "run_id",
    "tags",
    "verdict",
    "reason",
    "speedup",
    "index",
    "parent",
    "kept",
)


def check_metadata(meta: Mapping[str, Any], *, complete: bool = False) -> StoredMetadata:
    """The metadata, validated; BadRecord ("FIELD: problem") for the first thing wrong.
    `complete`: the fields every version wrote must be there (an import), rather than taking
    their defaults (a record read back from an older store)."""
    if complete:
        missing = [key for key in REQUIRED if key not in meta]
        if missing:
            raise BadRecord("missing " + ", ".join(missing))
    try:
        checked = StoredMetadata.model_validate(dict(meta))
    except ValidationError as exc:
        raise BadRecord(_problem(exc.errors()[0])) from None
    for key, value in (checked.model_extra or {}).items():
        if isinstance(value, bool | str):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise BadRecord(f"{key}: not a finite number")
        if isinstance(value, int) and not -INT64_MAX - 1 <= value <= INT64_MAX:
            raise BadRecord(f"{key}: out of range: {value}")
        if not isinstance(value, int | float):
            raise BadRecord(f"{key}: expected a string, number or boolean, got {_show(value)}")
    return checked


_EXPECTED = {
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
}


def _problem(error: ErrorDetails) -> str:
    field = ".".join(str(part) for part in error["loc"]) or "metadata"
    kind, got = error["type"], error.get("input")
    if kind == "finite_number":
        return f"{field}: not a finite number"
    if kind in _EXPECTED:
        return f"{field}: expected {_EXPECTED[kind]}, got {_show(got)}"
    if kind in ("greater_than_equal", "less_than_equal"):
        return f"{field}: out of range: {_show(got)}"
    return f"{field}: {error['msg']}"


def _show(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
