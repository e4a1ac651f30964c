"""Skip tests by what the machine has (after Kernel Tuner's test/context.py); the tune after
each run off unless a test turns it on; a hand-written candidate's launch as a model proposes it."""

from __future__ import annotations

import os
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _has_gpu() -> bool:
    try:
        from kernelwright.tools import nvml

        nvml.device_info()
        return True
    except Exception:
        return False


HAS_GPU = _has_gpu()


@pytest.fixture(scope="session")
def nvrtc() -> None:
    """Skip unless NVRTC compiles a trivial kernel here (no GPU needed)."""
    from kernelwright.tools.compile import compile_nvrtc

    try:
        result, _ = compile_nvrtc(
            'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }', "k", "sm_90"
        )
    except Exception as exc:
        pytest.skip(f"NVRTC not usable: {exc}")
    if not result.ok:
        pytest.skip(f"NVRTC cannot compile a trivial kernel: {result.first_error}")


HAS_NCU = shutil.which("ncu") is not None


@pytest.fixture(autouse=True)
def _no_tune_after_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`optimize` tunes its best kernel by default; a test of the loop replays only the checks
    of its own candidates, so the tune is off unless a test (tests/agent/test_tune_after.py)
    turns it on."""
    monkeypatch.setenv("KERNELWRIGHT_TUNE__ENABLED", "false")
    yield


@pytest.fixture(autouse=True)
def _chroma_let_go() -> Iterator[None]:
    """Stop every Chroma system a test left open (tests open stores to fill and read back):
    each keeps its SQLite files and index threads for the life of the process, and a whole run
    of them took pytest past 1024 descriptors, where pexpect's select() fails. The code's own
    opens close themselves (tests/memory/test_store.py checks the doors)."""
    yield
    from chromadb.api.shared_system_client import SharedSystemClient

    systems = SharedSystemClient._identifier_to_system
    for identifier in list(systems):
        systems.pop(identifier).stop()
    SharedSystemClient._identifier_to_refcount.clear()


def chroma_open() -> list[str]:
    """What Chroma still holds open in this process: a directory for each persistent store
    some client has not let go of."""
    from chromadb.api.shared_system_client import SharedSystemClient

    return list(SharedSystemClient._identifier_to_system)


def proposed_launch(candidate: Path) -> dict[str, Any] | None:
    """A hand-written candidate's launch (its .toml's [launch]) as a model's reply carries it:
    over the task's sizes and the knobs the kernel defines (`#ifndef TILE`), as the propose
    prompt asks, so that tune's knob values reach the launch too."""
    sidecar = candidate.with_suffix(".toml")
    if not sidecar.is_file():
        return None
    raw = tomllib.loads(sidecar.read_text())["launch"]
    return {k: _texts(v) for k, v in raw.items()}


def _texts(value: Any) -> Any:
    return [str(v) for v in value] if isinstance(value, list) else str(value)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU:
            item.add_marker(pytest.mark.skip(reason="needs an NVIDIA GPU"))
        if "ncu" in item.keywords and not (HAS_GPU and HAS_NCU):
            item.add_marker(pytest.mark.skip(reason="needs Nsight Compute and a GPU"))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """With KW_FAILURES set (the GPU machine's calls: .ci/device.sh), each failure's report is
    appended to that file as it happens: a call cut short by its time limit keeps why a test
    failed, which pytest prints only at the end of the session."""
    path = os.environ.get("KW_FAILURES")
    if path and report.failed:
        with open(path, "a") as f:
            f.write(f"== {report.nodeid} ({report.when})\n{report.longreprtext}\n\n")
