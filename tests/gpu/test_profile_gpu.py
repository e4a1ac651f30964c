"""Nsight Compute on a real GPU: metrics, a bottleneck label, and agreement with event timing."""

from __future__ import annotations

import pytest

from kernelwright.tools.profile import profile
from kernelwright.tools.task import load_candidate, load_task, reference_candidate
from tests.conftest import EXAMPLES

pytestmark = [pytest.mark.gpu, pytest.mark.ncu]


def test_profile_labels_a_memory_bound_copy_and_a_latency_bound_naive_rowsum() -> None:
    transpose = load_task(EXAMPLES / "transpose")
    fast = profile(
        transpose, load_candidate(transpose, EXAMPLES / "transpose/candidates/faster.cu")
    )
    assert fast.available, fast.reason
    assert fast.kernel_name == "transpose"
    assert fast.bottleneck == "memory-bound"
    assert fast.duration_ms and fast.duration_ms > 0
    assert fast.registers_per_thread and fast.registers_per_thread > 0
    rowsum = load_task(EXAMPLES / "rowsum")
    naive = profile(rowsum, reference_candidate(rowsum))
    assert naive.available, naive.reason
    assert naive.bottleneck in ("latency-bound", "memory-bound")
    assert naive.achieved_occupancy_pct is not None


def test_profile_of_a_kernel_that_does_not_compile_says_unavailable() -> None:
    task = load_task(EXAMPLES / "gelu")
    from kernelwright.tools.spec import CudaCandidate

    result = profile(task, CudaCandidate(path="bad.cu", source="not cuda"))
    assert not result.available
    assert result.reason.startswith("profiling unavailable")
