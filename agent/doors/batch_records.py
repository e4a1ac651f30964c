"""The batch's records: what its state file holds (the plan, and each task's status) and what
each task's report holds. Only models and their files: the batch (batch.py), its report
(batch_report.py, batch_plots.py) and the command line all read them, and none of those is
needed to read them."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from kernelwright.tools.errors import KernelwrightError

STATE_FILE = "batch-state.json"
Status = Literal["pending", "running", "done", "failed"]


@dataclass(frozen=True)
class Found:
    id: str  # the task's place in the tree: "gelu", "kernelbench/relu_mlp"
    slug: str  # id as a file name
    path: Path  # the task file: name.toml (a CUDA or C++ task) or a KernelBench .py
    kind: Literal["cuda", "kernelbench", "cpp"]


@dataclass(frozen=True)
class Skipped:
    path: Path
    reason: str


class TaskState(BaseModel):
    id: str
    slug: str
    path: str
    kind: Literal["cuda", "kernelbench", "cpp"]
    status: Status = "pending"
    reason: str = ""  # why it failed, in one line
    stop_reason: str = ""  # why its loop stopped
    run_dir: str = ""
    wall_s: float = 0.0
    gpu: str = ""  # which GPU ran it, in a batch over several ("GPU 3 on host-a")


class SkippedState(BaseModel):
    path: str
    reason: str


class BatchState(BaseModel):
    version: int = 1
    dir: str
    budget: int
    proposals_by: str  # the model's name (or the scripted stand-in's)
    started: str
    tasks: list[TaskState]
    skipped: list[SkippedState] = []
    # how each task's loop runs, kept so a resume runs as the batch started
    minutes: float = 60.0
    plateau: int = 4
    memory: bool = True
    tune: bool | None = None  # False: each best kernel left untuned (--no-tune); None: settings
    backend: str | None = None  # the compile backend; None: the settings'
    # where it runs (batch_dask.py): --gpus or --scheduler, kept so a resume runs there too
    gpus: str | None = None
    scheduler: str | None = None
    retries: int | None = None  # a task's runs after its worker died; None: the default
    wall_s: float = 0.0  # the batch's own wall time over several GPUs, every session's added

    @classmethod
    def plan(
        cls,
        root: Path,
        found: list[Found],
        skipped: list[Skipped],
        budget: int,
        by: str,
        **loop: Any,
    ) -> BatchState:
        return cls(
            **loop,
            dir=str(root.resolve()),
            budget=budget,
            proposals_by=by,
            started=time.strftime("%Y-%m-%d %H:%M:%S"),
            tasks=[TaskState(id=f.id, slug=f.slug, path=str(f.path), kind=f.kind) for f in found],
            skipped=[SkippedState(path=str(s.path), reason=s.reason) for s in skipped],
        )

    @classmethod
    def load(cls, out: Path) -> BatchState | None:
        """The batch kept in `out`, None if none; KernelwrightError if the file is not one."""
        path = out / STATE_FILE
        if not path.is_file():
            return None
        try:
            return cls.model_validate_json(path.read_bytes())
        except (ValueError, OSError) as exc:  # pydantic's ValidationError is a ValueError
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise KernelwrightError(
                f"{path} is not a batch's state ({first}): move it away to start a new batch "
                "there, or choose another --out"
            ) from None

    def save(self, out: Path) -> None:
        tmp = out / (STATE_FILE + ".tmp")
        tmp.write_text(self.model_dump_json(indent=2))
        os.replace(tmp, out / STATE_FILE)  # a kill never leaves half a state file


class TaskReport(BaseModel):
    """One task's outcome, as tasks/SLUG.json holds it."""

    id: str
    name: str
    path: str
    kind: str
    status: str
    verdict: str  # faster | unchanged | failed | pending
    reason: str = ""  # why it failed
    stop_reason: str = ""
    baseline_ms: float | None = None  # the original kernel, median
    baseline_iqr_ms: float | None = None
    best_ms: float | None = None  # the best verified kernel, median
    speedup: float | None = None  # best over the original (median of per-round ratios)
    speedup_iqr: float | None = None
    floor_ms: float | None = None  # roofline: the least time the bench size could take
    roofline_before: float | None = None  # floor / baseline: share of the bound achieved
    roofline_after: float | None = None  # floor / best
    techniques: list[str] = []  # the tags along the best kernel's line of descent
    tune_gain: float | None = None  # tuning the best kernel: its gain (None: not tuned)
    tune_best: str = ""  # the configuration that won, or why it was not tuned
    best_attempt: int = 0
    attempts: list[dict[str, Any]] = []  # each attempt, without its source (in the run dir)
    device: str = ""
    run_dir: str = ""
    best_kernel: str = ""
    wall_s: float = 0.0
    gpu: str = ""  # which GPU ran it, in a batch over several
