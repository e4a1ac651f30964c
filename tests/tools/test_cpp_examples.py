"""Every example under examples/cpp/ loads, and its C++ reference runs on the CPU at each of
its check sizes and agrees with NumPy's answer on the same inputs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from kernelwright.tools.cpp import CppTask, load_cpp_task
from kernelwright.tools.cpp_reference import ReferenceTrial, reference_outputs
from tests.conftest import EXAMPLES
from tests.tools.test_cpp import cpp_cache, inputs_of, needs_gxx

__all__ = ["cpp_cache"]  # the session's cache of builds, shared with test_cpp.py

CPP = EXAMPLES / "cpp"


def _axpy(ins: dict[str, np.ndarray], s: dict[str, int]) -> dict[str, np.ndarray]:
    return {"y": np.float32(2.5) * ins["x"] + ins["y"]}


def _gemv(ins: dict[str, np.ndarray], s: dict[str, int]) -> dict[str, np.ndarray]:
    return {"y": ins["A"] @ ins["x"]}


def _histogram(ins: dict[str, np.ndarray], s: dict[str, int]) -> dict[str, np.ndarray]:
    return {"counts": np.bincount(ins["pixels"], minlength=256)}


def _prefix_sum(ins: dict[str, np.ndarray], s: dict[str, int]) -> dict[str, np.ndarray]:
    return {"out": np.cumsum(ins["x"].astype(np.int64))}


def _jacobi(ins: dict[str, np.ndarray], s: dict[str, int]) -> dict[str, np.ndarray]:
    x = ins["in"]
    y = x.copy()
    y[1:-1, 1:-1] = np.float32(0.25) * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
    return {"out": y}


def _minmax(ins: dict[str, np.ndarray], s: dict[str, int]) -> dict[str, np.ndarray]:
    return {"lo": np.array([ins["x"].min()]), "hi": np.array([ins["x"].max()])}


NUMPY: dict[str, Callable[[dict[str, np.ndarray], dict[str, int]], dict[str, np.ndarray]]] = {
    "axpy": _axpy,
    "gemv": _gemv,
    "histogram": _histogram,
    "prefix_sum": _prefix_sum,
    "jacobi2d": _jacobi,
    "minmax": _minmax,
}


NAMES = sorted(NUMPY)


def example(name: str, root: Path = CPP) -> CppTask:
    """An example under examples/cpp/ (or a copy of it under `root`), loaded."""
    return load_cpp_task(root / name / f"{name}.toml")


def test_there_are_six_examples_and_each_loads() -> None:
    names = sorted(p.name for p in CPP.iterdir() if p.is_dir())
    assert names == sorted(NUMPY)
    for name in names:
        task = example(name)
        assert task.kind == "cpp" and task.checks and task.launch.block
        assert any(a.role in ("out", "inout") for a in task.args)


@needs_gxx
@pytest.mark.parametrize("name", sorted(NUMPY))
def test_each_examples_reference_runs_and_agrees_with_numpy(name: str, cpp_cache: Path) -> None:
    task = example(name)
    trials = [ReferenceTrial(dict(sizes), 2024 + i) for i, sizes in enumerate(task.checks)]
    results = reference_outputs(task, trials, cpp_cache)
    for trial, result in zip(trials, results, strict=True):
        want = NUMPY[name](inputs_of(task, trial.sizes, trial.seed), trial.sizes)
        assert set(result.outputs) == set(want)
        for key, value in want.items():
            got = result.outputs[key]
            assert got.shape == np.asarray(value).reshape(got.shape).shape
            if task.compare == "exact":
                assert got.tolist() == np.asarray(value).reshape(got.shape).tolist(), key
            else:
                np.testing.assert_allclose(got, np.asarray(value).reshape(got.shape), rtol=1e-5)
