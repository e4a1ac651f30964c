"""Find and load a task from a path a user typed: a directory, a .toml, a .cu, a .cpp or a .py."""

from __future__ import annotations

import tomllib
from pathlib import Path

from .cpp import CppTask, load_cpp_task
from .cpp_candidates import CppFunction, CppKernel, HostFile, load_cpp_candidate
from .errors import TaskError
from .files import read_text
from .kernelbench import (
    KernelBenchCandidate,
    KernelBenchTask,
    load_kernelbench_candidate,
    load_kernelbench_task,
    looks_like_kernelbench,
)
from .spec import CudaCandidate, CudaTask, load_cuda_candidate, load_cuda_task

# Every kind of task, and of candidate. A kind's facts are its models' (its `kind`, ClassVars and
# methods); where a module's work differs by kind, a table keyed by `task.kind` holds each kind's
# part. A new kind joins these unions, the loaders below, the worker's dispatch and those tables
# (tests/tools/test_kinds.py names them).
Task = CudaTask | KernelBenchTask | CppTask
Candidate = CudaCandidate | KernelBenchCandidate | CppKernel | CppFunction | HostFile


def _load_spec(path: Path) -> CudaTask | CppTask:
    """A task from its .toml: a C++ task where it says kind = "cpp", else a CUDA task (whose
    loader says what is wrong with a file that is neither)."""
    try:
        kind = tomllib.loads(read_text(path)).get("kind")
    except (OSError, ValueError):
        kind = None  # the CUDA loader reads it again and says what is wrong
    return load_cpp_task(path) if kind == "cpp" else load_cuda_task(path)


def load_task(path: str | Path) -> Task:
    p = Path(path)
    if not p.exists():
        raise TaskError(p, "", "no such file or directory")
    if p.is_dir():
        tomls = sorted(p.glob("*.toml"))
        if len(tomls) == 1:
            return _load_spec(tomls[0])
        named = p / f"{p.name}.toml"
        if named.is_file():
            return _load_spec(named)
        if len(tomls) > 1:
            raise TaskError(
                p, "", f"several task files here ({', '.join(t.name for t in tomls)}): name one"
            )
        problems = [f for f in sorted(p.glob("*.py")) if looks_like_kernelbench(f)]
        if len(problems) == 1:
            return load_kernelbench_task(problems[0])
        if not problems:
            for f in sorted(p.glob("*.py")):  # a problem that is not UTF-8: say so
                try:
                    read_text(f)
                except OSError:
                    continue
        raise TaskError(
            p,
            "",
            "no task here: expected name.cu + name.toml, name.cpp + name.toml, or a "
            "KernelBench .py",
        )
    if p.suffix == ".toml":
        return _load_spec(p)
    if p.suffix in (".cu", ".cpp"):
        spec = p.with_suffix(".toml")
        if not spec.is_file():
            what = "a CUDA" if p.suffix == ".cu" else "a C++"
            raise TaskError(p, "", f"{what} task needs {spec.name} beside it (see docs/tasks.md)")
        return _load_spec(spec)
    if p.suffix == ".py":
        return load_kernelbench_task(p)
    raise TaskError(p, "", "unknown task type: expected a directory, .toml, .cu, .cpp or .py")


def load_candidate(task: Task, path: str | Path) -> Candidate:
    p = Path(path)
    if p.is_dir():
        want = ".py file with ModelNew" if isinstance(task, KernelBenchTask) else ".cu file"
        raise TaskError(p, "", f"is a directory: a candidate is one {want}")
    if not p.is_file():
        raise TaskError(p, "", "candidate not found")
    if isinstance(task, CppTask):
        return load_cpp_candidate(task, p)
    if isinstance(task, CudaTask):
        if p.suffix != ".cu":
            raise TaskError(p, "", "a candidate for a CUDA task is a .cu file")
        return load_cuda_candidate(task, p)
    if p.suffix != ".py":
        raise TaskError(p, "", "a candidate for a KernelBench problem is a .py file with ModelNew")
    return load_kernelbench_candidate(p)


def reference_candidate(task: Task) -> Candidate:
    """The task's own kernel as a candidate: checking it against itself must read 1.00x (a C++
    task's: its function, on the CPU)."""
    return task.reference_candidate()
