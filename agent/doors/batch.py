"""A batch: every task in a directory tree, optimized one after another.

A failing task never stops the batch: it is marked failed with its one-line reason. The batch's
state file (batch-state.json in the output folder) is saved at every change, so an interrupted
batch resumes without redoing finished tasks; a task that was running resumes through the
loop's own checkpoints. The report is written by batch_report.py from the files each run leaves.

    OUT/batch-state.json      the plan and each task's status
    OUT/runs/SLUG/            the task's run directory (best.cu, attempts.jsonl, summary.md, ...)
                              and checks.jsonl, every verifier report of the run
"""

from __future__ import annotations

import ast
import os
import time
import tomllib
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol

from kernelwright.agent.formats import first_line
from kernelwright.agent.llm import ChatModel
from kernelwright.agent.rundir import attempts_so_far, newest_runs
from kernelwright.agent.settings import Settings
from kernelwright.tools.backend import GpuBackend, RecordingGpu
from kernelwright.tools.errors import KernelwrightError, TaskError
from kernelwright.tools.files import read_text

from .batch_records import STATE_FILE, BatchState, Found, Skipped, TaskReport, TaskState
from .batch_report import original_failure, write_task_json


def discover(root: Path, exclude: tuple[Path, ...] = ()) -> tuple[list[Found], list[Skipped]]:
    """The tasks under root (every format) and what was passed over, with why (pure but for
    reading files). CUDA tasks are found by a .toml with an `entry`, C++ tasks by one with
    kind = "cpp" (an inputs.py beside it is listed as passed over); a .toml that does not parse
    beside a .cu of its name counts as a (broken) task, so its error reaches the report."""
    root = root.resolve()
    excluded = {p.resolve() for p in exclude}
    found: list[Found] = []
    skipped: list[Skipped] = []
    for folder, files in _walk(root, excluded, skipped):
        names = set(files)
        claimed: set[str] = set()  # the kernels of the tasks found here
        references: set[str] = set()
        for name in sorted(n for n in files if n.endswith(".toml")):
            path = folder / name
            try:
                raw = tomllib.loads(read_text(path))
            except TaskError as exc:  # not a regular file (a FIFO hung the batch), too large
                skipped.append(Skipped(path, exc.problem))
                continue
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                if path.with_suffix(".cu").name in names:
                    found.append(_found(root, path, "cuda", found))
                    claimed.add(path.with_suffix(".cu").name)
                else:
                    why = "not valid TOML, and no .cu of its name beside it"
                    skipped.append(Skipped(path, why))
                continue
            if raw.get("kind") == "cpp":  # a C++ task: its .cpp is claimed by name, not listed
                found.append(_found(root, path, "cpp", found))
                continue
            if "entry" not in raw:
                why = "no entry: not a task (a candidate's launch, or another tool's file)"
                skipped.append(Skipped(path, why))
                continue
            found.append(_found(root, path, "cuda", found))
            claimed.add(str(raw.get("source", path.with_suffix(".cu").name)))
            ref = raw.get("reference", {})
            if isinstance(ref, dict) and isinstance(ref.get("python"), str):
                references.add(ref["python"].split(":")[0])
        for name in sorted(names - claimed):
            path = folder / name
            if name.endswith(".cu"):
                skipped.append(Skipped(path, "no name.toml with an entry beside it"))
            elif name.endswith(".py"):
                why = "a task's reference" if name in references else _python_kind(path)
                if why == "problem":
                    found.append(_found(root, path, "kernelbench", found))
                else:
                    skipped.append(Skipped(path, why))
    return found, skipped


def _walk(
    root: Path, excluded: set[Path], skipped: list[Skipped]
) -> Iterator[tuple[Path, list[str]]]:
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        keep = []
        for d in sorted(dirs):
            path = here / d
            if d.startswith(".") or d == "__pycache__":
                continue
            if d == "candidates":
                skipped.append(Skipped(path, "a candidates folder"))
            elif path.resolve() in excluded:
                skipped.append(Skipped(path, "this batch's output folder"))
            elif (path / STATE_FILE).is_file():
                skipped.append(Skipped(path, "another batch's output folder"))
            else:
                keep.append(d)
        dirs[:] = keep
        yield here, sorted(files)


def _python_kind(path: Path) -> str:
    """Why a .py file is not a task, or "problem" for a KernelBench problem."""
    if path.name == "reference.py":
        return "a task's reference"
    try:
        tree = ast.parse(read_text(path))
    except TaskError as exc:  # not a regular file, too large, not UTF-8
        return exc.problem
    except (OSError, SyntaxError, ValueError, MemoryError, RecursionError):
        return "not readable Python"
    top = {n.name for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
    if "ModelNew" in top:
        return "a KernelBench candidate (defines ModelNew)"
    if {"Model", "get_inputs"} <= top:
        return "problem"
    return "not a KernelBench problem (no Model and get_inputs)"


def _found(
    root: Path, path: Path, kind: Literal["cuda", "kernelbench", "cpp"], seen: list[Found]
) -> Found:
    rel = path.relative_to(root)
    if rel.parent != Path(".") and path.stem == path.parent.name:
        ident = rel.parent.as_posix()  # gelu/gelu.toml is "gelu"
    else:
        ident = rel.with_suffix("").as_posix()
    slug, n = ident.replace("/", "-"), 1
    while any(f.slug == slug for f in seen):
        n += 1
        slug = f"{ident.replace('/', '-')}-{n}"
    return Found(id=ident, slug=slug, path=path, kind=kind)


class BatchProgress(Protocol):
    def task_started(self, index: int, task: TaskState, attempts_done: int) -> None: ...

    def loop_event(self, task: TaskState, event: dict[str, Any]) -> None: ...

    def task_finished(self, index: int, task: TaskState, report: TaskReport) -> None: ...

    def note(self, text: str) -> None: ...  # a line about the batch (a worker died, a GPU lost)


class NoProgress:
    def task_started(self, index: int, task: TaskState, attempts_done: int) -> None:
        pass

    def loop_event(self, task: TaskState, event: dict[str, Any]) -> None:
        pass

    def task_finished(self, index: int, task: TaskState, report: TaskReport) -> None:
        pass

    def note(self, text: str) -> None:
        pass


def run_batch(
    state: BatchState,
    out: Path,
    settings: Settings,
    *,
    model: ChatModel,
    gpu: GpuBackend,
    arch: str,
    progress: BatchProgress | None = None,
) -> BatchState:
    """Run every task not yet done or failed, saving the state after each change. A task's
    failure is recorded and the batch goes on; KeyboardInterrupt leaves the task running, for
    a resume."""
    ui = progress or NoProgress()
    for index, task in enumerate(state.tasks):
        if task.status in ("done", "failed"):
            continue
        task.status = "running"
        state.save(out)
        ui.task_started(index, task, attempts_done(out, task))
        try:
            run_one(
                task,
                out,
                settings,
                state,
                model=model,
                gpu=gpu,
                arch=arch,
                progress=partial(ui.loop_event, task),
            )
        finally:
            state.save(out)
        ui.task_finished(index, task, write_task_json(task, out))
    return state


def attempts_done(out: Path, task: TaskState) -> int:
    """The attempts the task's unfinished run (the one a resume continues) already made."""
    return attempts_so_far(out / "runs" / task.slug)


def run_one(
    task: TaskState,
    out: Path,
    settings: Settings,
    batch: BatchState,
    *,
    model: ChatModel,
    gpu: GpuBackend,
    arch: str,
    progress: Callable[[dict[str, Any]], None],
    passthrough: tuple[type[BaseException], ...] = (),
) -> None:
    """One task's loop with the batch's limits, resumed from its checkpoints when it has an
    unfinished run: sets the task's status, reason, stop reason and run directory and adds its
    wall time; the caller saves the state. A failure is recorded, not raised; KeyboardInterrupt
    and the `passthrough` exceptions are raised, leaving the task as it was, for a resume."""
    from kernelwright.agent.optimize import optimize

    runs = out / "runs" / task.slug
    unfinished, finished = newest_runs(runs)
    start = time.monotonic()
    try:
        if finished is not None and unfinished is None:  # its loop ended before the kill
            run, task.stop_reason = finished, finished.stop_reason()
        else:
            output, run = optimize(
                task.path,
                settings,
                budget=batch.budget,
                max_seconds=batch.minutes * 60,
                plateau=batch.plateau,
                memory=batch.memory,
                tune=batch.tune,
                resume=unfinished is not None,
                model=model,
                gpu=RecordingGpu(gpu, runs / "checks.jsonl"),
                arch=arch,
                progress=progress,
                runs_dir=runs,
            )
            task.stop_reason = str(output.get("stop_reason", ""))
        task.run_dir = str(run.path)
        task.status, task.reason = "done", original_failure(task, out)
        if task.reason:
            task.status = "failed"
    except passthrough:
        raise
    except KernelwrightError as exc:
        task.status, task.reason = "failed", first_line(str(exc))
    except Exception as exc:  # a bug or a broken tool must not stop the batch either
        task.status, task.reason = "failed", first_line(f"{type(exc).__name__}: {exc}")
    finally:
        task.wall_s += time.monotonic() - start
