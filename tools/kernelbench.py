"""KernelBench problems (`Model`, `get_inputs`, `get_init_inputs`) and their `ModelNew` candidates.

The controller never imports these files: it reads them with `ast` to validate them, and only the
sandboxed workers execute them.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Literal

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


class KernelBenchCandidate(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    source: str


def _parse(path: Path) -> tuple[str, ast.Module]:
    try:
        source = read_text(path)
    except OSError as exc:
        raise TaskError(path, "", f"cannot read: {exc.strerror}") from None
    try:
        return source, ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise TaskError(path, f"line {exc.lineno}", f"Python syntax error: {exc.msg}") from None


def _top_names(tree: ast.Module) -> dict[str, ast.stmt]:
    names: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            names[node.name] = node
    return names


def looks_like_kernelbench(path: Path) -> bool:
    try:
        tree = ast.parse(read_text(path))
    except (OSError, SyntaxError, ValueError, TaskError):
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
