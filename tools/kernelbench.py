"""KernelBench problems (`Model`, `get_inputs`, `get_init_inputs`) and their `ModelNew` candidates.

The controller never imports these files: it reads them with `ast` to validate them, and only the
sandboxed workers execute them.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from .errors import TaskError
from .files import read_text


class KernelBenchTask(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["kernelbench"] = "kernelbench"
    name: str
    path: str
    source: str
    size_globals: dict[
        str, int
    ]  # module-level int constants; batch_size is varied for held-out checks

    # What a check does differently by kind, said here once (ClassVars: not in the task's dump).
    # The pool's worker kinds for the reference and the candidate: both import torch.
    worker_kinds: ClassVar[tuple[str, str]] = ("torch-ref", "torch-cand")
    # A forward goes through Python and torch's dispatch: slower than a kernel's launch.
    run_timeout_factor: ClassVar[int] = 3
    # A candidate is Python in the process that times it: its calls vary with host dispatch,
    # and its samples are believed only as far as the controller's clock bears them out.
    host_code: ClassVar[bool] = True

    def reference_candidate(self) -> KernelBenchCandidate:
        """The problem's own Model as a candidate: checked against itself it must read 1.00x."""
        return KernelBenchCandidate(path=self.path, source=self.source)

    def worker_task(self) -> KernelBenchTask:
        """The problem as its workers are sent it: itself."""
        return self

    @property
    def compile_entry(self) -> None:
        """None: no compile worker; the candidate's own worker imports ModelNew (building any
        load_inline extension) and says how that went before its trials."""
        return None

    @property
    def reference_label(self) -> str:
        """What a candidate is checked against, where the reference's worker does not say."""
        return "reference kernel"

    def reference_files(self) -> dict[str, str]:
        """The user's files the reference's worker reads, as text (its view shows none of
        them): the problem, for Model and get_inputs()."""
        return {"kw_problem.py": self.source}

    def candidate_files(self, path: str, source: str) -> dict[str, str]:
        """The problem (its get_inputs() makes the inputs) and, unless the candidate is the
        problem itself, the candidate's file, for ModelNew."""
        return {"kw_problem.py": self.source} | (
            {} if path == self.path else {"kw_candidate.py": source}
        )

    def small_sizes(self) -> dict[str, int]:
        """A small batch: the sanitizer slows a forward down many times over."""
        batch = self.size_globals.get("batch_size")
        return {"batch_size": min(batch, 8)} if batch else {}

    def roofline(self) -> tuple[None, None]:
        """None: what a forward moves and computes is its torch code's business."""
        return None, None


class KernelBenchCandidate(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ClassVar[Literal["kernelbench"]] = "kernelbench"  # a ClassVar: not in its dump
    path: str
    source: str

    def worker_job(self, task_path: str) -> dict[str, Any]:
        """What the candidate's worker is told of it: the class to time (the problem's own
        Model, when the candidate is the problem at `task_path`)."""
        return {"class_name": "Model" if self.path == task_path else "ModelNew"}

    def compile_flags(self, backend: str) -> tuple[str, ...]:
        """None: a KernelBench candidate builds its own CUDA, in its own worker."""
        return ()


def _parse(path: Path) -> tuple[str, ast.Module]:
    try:
        source = read_text(path)
    except OSError as exc:
        raise TaskError(path, "", f"cannot read: {exc.strerror}") from None
    try:
        return source, ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise TaskError(path, f"line {exc.lineno}", f"Python syntax error: {exc.msg}") from None
    except (MemoryError, RecursionError):  # nested deeper than the parser's stack: one line
        raise TaskError(path, "", "Python nested too deeply to parse") from None


def _top_names(tree: ast.Module) -> dict[str, ast.stmt]:
    names: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            names[node.name] = node
    return names


def looks_like_kernelbench(path: Path) -> bool:
    try:
        tree = ast.parse(read_text(path))
    except (OSError, SyntaxError, ValueError, TaskError, MemoryError, RecursionError):
        return False
    names = _top_names(tree)
    return "Model" in names and "get_inputs" in names


def load_kernelbench_task(path: Path) -> KernelBenchTask:
    path = path.resolve()
    source, tree = _parse(path)
    names = _top_names(tree)
    for needed, kind in (
        ("Model", ast.ClassDef),
        ("get_inputs", ast.FunctionDef),
        ("get_init_inputs", ast.FunctionDef),
    ):
        if not isinstance(names.get(needed), kind):
            what = "class" if kind is ast.ClassDef else "function"
            raise TaskError(path, needed, f"missing: a KernelBench problem defines {what} {needed}")
    model = names["Model"]
    assert isinstance(model, ast.ClassDef)
    if not any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in model.body):
        raise TaskError(path, "Model.forward", "missing: Model must define forward()")
    sizes = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and type(node.value.value) is int
        ):
            sizes[node.targets[0].id] = node.value.value
    return KernelBenchTask(name=path.stem, path=str(path), source=source, size_globals=sizes)


def load_kernelbench_candidate(path: Path) -> KernelBenchCandidate:
    path = path.resolve()
    source, tree = _parse(path)
    if not isinstance(_top_names(tree).get("ModelNew"), ast.ClassDef):
        raise TaskError(path, "ModelNew", "missing: a KernelBench candidate defines class ModelNew")
    return KernelBenchCandidate(path=str(path), source=source)
