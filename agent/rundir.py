"""A run's directory: the best kernel as files, every attempt as JSONL, a Markdown summary and
the checkpoint database a killed run resumes from.

    runs/softmax-20261122-051500/
        run.json            what was run: task, model, budget
        attempts.jsonl      one line per measured attempt
        best.cu, best.toml  the best verified kernel and its launch (checkable as a candidate)
        best.py             for a KernelBench problem: the best ModelNew (checkable as a candidate)
        candidates/         for a KernelBench problem: each candidate's file, for its worker
        summary.md          written when the run ends
        checkpoints.sqlite  LangGraph's checkpoints
"""

from __future__ import annotations

import glob
import json
import re
import time
from pathlib import Path
from typing import Any

from kernelwright.tools.results import Attempt


def _plain(task_name: str) -> str:
    """A task's name as a directory's: a plain token, never a path (task files' names are
    checked as they load, tools.spec.task_name; a KernelBench problem's is its file's stem)."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", task_name).lstrip(".") or "task"


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, base: Path, task_name: str, meta: dict[str, Any]) -> RunDir:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = _plain(task_name)
        path = base / f"{name}-{stamp}"
        n = 1
        while path.exists():
            n += 1
            path = base / f"{name}-{stamp}-{n}"
        path.mkdir(parents=True)
        (path / "run.json").write_text(json.dumps(meta, indent=2))
        return cls(path)

    @classmethod
    def latest_unfinished(cls, base: Path, task_name: str) -> RunDir | None:
        """The newest run of this task that has checkpoints and no summary yet."""
        pattern = f"{glob.escape(_plain(task_name))}-*"
        runs = sorted(base.glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
        for path in runs:
            run = cls(path)
            if run.checkpoints.is_file() and not run.finished:
                return run
        return None

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints.sqlite"

    @property
    def finished(self) -> bool:
        return (self.path / "summary.md").is_file()

    @property
    def meta(self) -> dict[str, Any]:
        return json.loads((self.path / "run.json").read_text())

    def append_attempt(self, attempt: Attempt) -> None:
        """Adds the attempt unless its index is there already (a resumed node ran again)."""
        if any(a.index == attempt.index for a in self.attempts()):
            return
        with (self.path / "attempts.jsonl").open("a") as f:
            f.write(json.dumps(attempt.model_dump(mode="json")) + "\n")

    def attempts(self) -> list[Attempt]:
        path = self.path / "attempts.jsonl"
        if not path.is_file():
            return []
        return [Attempt.model_validate_json(line) for line in path.read_text().splitlines() if line]

    @property
    def best_file(self) -> Path:
        """The best kernel's file: best.py for a KernelBench problem, else best.cu."""
        py = self.path / "best.py"
        return py if py.is_file() else self.path / "best.cu"

    def write_candidate(self, name: str, source: str) -> Path:
        """A KernelBench candidate as a file (candidates/NAME.py), for the worker to import."""
        folder = self.path / "candidates"
        folder.mkdir(exist_ok=True)
        path = folder / f"{name}.py"
        path.write_text(source)
        return path

    def write_best(self, source: str, launch: dict[str, Any] | None, name: str = "best.cu") -> None:
        (self.path / name).write_text(source)
        sidecar = self.path / "best.toml"
        if launch:
            sidecar.write_text(_launch_toml(launch))
        elif sidecar.exists():
            sidecar.unlink()

    def stop_reason(self) -> str:
        """Why a finished run stopped, as its summary says ("" if it does not)."""
        summary = self.path / "summary.md"
        for line in summary.read_text().splitlines() if summary.is_file() else []:
            if line.startswith("- stopped: "):
                return line.removeprefix("- stopped: ")
        return ""

    def write_summary(self, text: str) -> None:
        (self.path / "summary.md").write_text(text)


def _launch_toml(launch: dict[str, Any]) -> str:
    def items(values: Any) -> str:
        return "[" + ", ".join(json.dumps(str(v)) for v in values) + "]"

    lines = ["[launch]", f"block = {items(launch['block'])}", f"grid = {items(launch['grid'])}"]
    if launch.get("shared_mem_bytes") not in (None, "", 0, "0"):
        lines.append(f"shared_mem_bytes = {json.dumps(str(launch['shared_mem_bytes']))}")
    return "\n".join(lines) + "\n"


def newest_runs(runs: Path) -> tuple[RunDir | None, RunDir | None]:
    """In a folder of one task's runs: the newest unfinished run (with checkpoints, what a
    resume continues) and the newest finished one."""
    if not runs.is_dir():
        return None, None
    dirs = sorted((p for p in runs.iterdir() if (p / "run.json").is_file()), reverse=True)
    dirs.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    found = [RunDir(p) for p in dirs]
    unfinished = next((r for r in found if r.checkpoints.is_file() and not r.finished), None)
    finished = next((r for r in found if r.finished), None)
    return unfinished, finished


def attempts_so_far(runs: Path) -> int:
    """The attempts the unfinished run in `runs` (the one a resume continues) already made."""
    unfinished, _ = newest_runs(runs)
    return len(unfinished.attempts()) if unfinished else 0
