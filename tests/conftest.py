"""Skip tests by what the machine has (after Kernel Tuner's test/context.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU:
            item.add_marker(pytest.mark.skip(reason="needs an NVIDIA GPU"))
        if "ncu" in item.keywords and not (HAS_GPU and HAS_NCU):
            item.add_marker(pytest.mark.skip(reason="needs Nsight Compute and a GPU"))
