"""The shipped starter set of worked examples: memory/examples/index.yaml names each pair (a
technique, the example task it was written for, the before and after kernels as files beside
it, their launches) and what measuring it found. Until `python -m kernelwright.evals.
measure_examples` has checked a pair with the verifier, it says `measured: false`, and a prompt
shows it as an illustration, never with a speedup; a pair measured wrong is never shown.
"""

from __future__ import annotations

import math
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from kernelwright.memory.techniques import catalogue
from kernelwright.memory.worked import Side, WorkedExample
from kernelwright.tools.errors import KernelwrightError

HEADER = """\
# The shipped worked examples (memory/shipped.py): one before/after pair per technique of the
# catalogue that applies to the example tasks (examples/<task>), and why the others have none.
# `measured`, `verdict`, `speedup` (after over before), `gpu`, `arch` and `measured_on` are
# written by `python -m kernelwright.evals.measure_examples` on a GPU, never by hand.
"""


class ShippedIndexError(KernelwrightError):
    """The index of shipped pairs is not valid: the message names the pair and the field."""


class ShippedSide(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    file: str  # beside the index
    launch: dict[str, Any] | None = None  # as a candidate's .toml gives it; None for Python


class ShippedPair(BaseModel):
    """One pair of the index, with what measuring it found (nothing until it was measured)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    technique: str
    kind: str = "cuda"
    task: str  # under examples/: a task directory, or a KernelBench problem's file
    task_signature: str
    op_class: str
    before: ShippedSide
    after: ShippedSide
    note: str  # what changed, in a line or two
    measured: bool = False
    verdict: str = ""  # "correct", or which side failed and why
    speedup: float | None = None  # after over before, timed side by side
    gpu: str = ""
    arch: str = ""
    measured_on: str = ""  # YYYY-MM-DD

    @model_validator(mode="after")
    def _consistent(self) -> ShippedPair:
        if self.technique not in catalogue():
            raise ValueError(f"technique: {self.technique!r} is not in the catalogue")
        facts = (self.verdict, self.speedup, self.gpu, self.arch, self.measured_on)
        if not self.measured and any(facts):
            raise ValueError("not measured, yet it has a verdict, speedup, gpu or arch")
        if self.measured and not (self.verdict and self.gpu and self.arch):
            raise ValueError("measured: needs its verdict, gpu and arch")
        correct = self.verdict == "correct"
        fine = self.speedup is not None and math.isfinite(self.speedup) and self.speedup > 0
        if self.measured and correct != fine:
            raise ValueError("a correct measured pair needs a positive speedup, another none")
        return self

    @property
    def shown(self) -> bool:
        """Whether a prompt may show it: not measured (an illustration) or measured correct."""
        return not self.measured or self.verdict == "correct"


class ShippedIndex(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    pairs: tuple[ShippedPair, ...]
    not_shipped: dict[str, str] = {}  # technique -> why no example task admits it


def folder() -> Traversable:
    return resources.files("kernelwright.memory") / "examples"


def index_path() -> Path:
    """The index as a file, for the measurement script that writes into it."""
    return Path(str(folder() / "index.yaml"))


def read_index(path: Path | None = None) -> ShippedIndex:
    """The index (the shipped one by default); ShippedIndexError names the first thing wrong."""
    where = path or index_path()
    try:
        raw = yaml.safe_load(where.read_text("utf-8"))
        index = ShippedIndex.model_validate(raw)
    except OSError as exc:
        raise ShippedIndexError(f"{where}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ShippedIndexError(f"{where}: not YAML: {' '.join(str(exc).split())}") from None
    except ValidationError as exc:
        error = exc.errors()[0]
        problem = error["msg"].removeprefix("Value error, ")
        raise ShippedIndexError(f"{where}: {_place(raw, error['loc'])}: {problem}") from None
    names = [p.name for p in index.pairs]
    if len(set(names)) != len(names):
        raise ShippedIndexError(f"{where}: a pair's name is repeated")
    for pair in index.pairs:
        for side in (pair.before, pair.after):
            if not (where.parent / side.file).is_file():
                raise ShippedIndexError(
                    f"{where}: {pair.name}: no file {side.file} beside the index"
                )
    return index


def _place(raw: Any, loc: tuple[int | str, ...]) -> str:
    """Where in the index a problem is: `pairs.3.after.file` as `NAME.after.file`."""
    rest = ".".join(str(part) for part in loc[2:])
    if loc[:1] == ("pairs",) and len(loc) > 1 and isinstance(raw, dict):
        try:
            name = raw["pairs"][loc[1]]["name"]
        except (LookupError, TypeError):
            name = None
        if isinstance(name, str):
            return f"{name}.{rest}" if rest else name
    return ".".join(str(part) for part in loc)


def write_index(index: ShippedIndex, path: Path) -> None:
    """Writes the index back, as read_index reads it."""
    data = index.model_dump(mode="json")
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    path.write_text(HEADER + text, "utf-8")


def source(pair: ShippedPair, side: ShippedSide, where: Path | None = None) -> str:
    """The code of one side of a pair (beside the index `where`, the shipped one by default)."""
    if where is not None:
        return (where.parent / side.file).read_text("utf-8")
    return (folder() / side.file).read_text("utf-8")


def as_example(pair: ShippedPair) -> WorkedExample:
    """A shipped pair as the prompts take it (its speedup only when measured correct)."""
    return WorkedExample(
        id=pair.name,
        origin="shipped",
        technique=pair.technique,
        kind=pair.kind,
        task_signature=pair.task_signature,
        op_class=pair.op_class,
        before=Side(source=source(pair, pair.before), launch=pair.before.launch),
        after=Side(source=source(pair, pair.after), launch=pair.after.launch),
        speedup=pair.speedup if pair.measured and pair.verdict == "correct" else None,
        gpu=pair.gpu,
        arch=pair.arch,
        note=pair.note,
    )


@cache
def shipped() -> tuple[WorkedExample, ...]:
    """The pairs a prompt may show, read once from the package data."""
    return tuple(as_example(p) for p in read_index().pairs if p.shown)
