"""Large trials compared on the GPU, for real: the facts CuPy finds are NumPy's, memory handed
over as a descriptor maps and reads back, and a transpose wrong at one element, or with its
last row unwritten, only at large sizes, is caught there with the reason the host gives."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from kernelwright.tools import correctness, vmm
from kernelwright.tools.task import load_candidate, load_task, reference_candidate
from kernelwright.tools.verify import Verifier, VerifyOptions
from tests.conftest import EXAMPLES
from tests.tools.test_devcompare import CASES, _arrays

pytestmark = pytest.mark.gpu

WRONG_AT_ONE = r"""
extern "C" __global__ void transpose(const float* x, float* y, int m, int n)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < m && c < n) {
        float v = x[(size_t)r * n + c];
        if ((size_t)m * n > 10000000 && r == m - 1 && c == n - 1) v += 1.0f;  // large only
        y[(size_t)c * m + r] = v;
    }
}
"""
LAST_ROW_UNWRITTEN = r"""
extern "C" __global__ void transpose(const float* x, float* y, int m, int n)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if ((size_t)m * n > 10000000 && r == m - 1) return;  // large only
    if (r < m && c < n) y[(size_t)c * m + r] = x[(size_t)r * n + c];
}
"""


@pytest.mark.parametrize("case", CASES)
def test_cupy_finds_the_facts_numpy_finds(case: str) -> None:
    import cupy

    got, exp = _arrays(case)
    on_host = correctness.facts(np, got, exp, 1e-5, 1e-5)
    on_gpu = correctness.facts(cupy, cupy.asarray(got), cupy.asarray(exp), 1e-5, 1e-5)
    assert on_gpu.keys() == on_host.keys()
    for key, value in on_host.items():
        if isinstance(value, float):
            assert on_gpu[key] == pytest.approx(value, rel=1e-12, abs=0.0), key
        else:
            assert on_gpu[key] == value, key


def test_memory_handed_over_as_a_descriptor_reads_back() -> None:
    import cupy

    assert vmm.supported(0)
    shared = vmm.Allocator(0)
    with cupy.cuda.using_allocator(shared):
        a = cupy.arange(3 << 20, dtype=cupy.float32)
    mapping, offset = shared.holding(a.data.ptr)
    fd = mapping.export()
    cupy.cuda.runtime.deviceSynchronize()
    del a
    shared.release()  # unmapped here: the descriptor keeps the memory
    seen = vmm.open_fd(os.dup(fd), mapping.size, 0)
    try:
        mem = cupy.cuda.UnownedMemory(seen.ptr, seen.size, seen)
        back = cupy.ndarray((3 << 20,), cupy.float32, cupy.cuda.MemoryPointer(mem, offset))
        assert bool((back == cupy.arange(3 << 20, dtype=cupy.float32)).all())
        del back, mem
    finally:
        seen.unmap()
    with pytest.raises(vmm.VmmError):  # more than the allocation holds
        vmm.open_fd(fd, mapping.size * 4, 0)


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier()


def test_the_transposes_large_trials_are_compared_on_the_gpu(verifier: Verifier) -> None:
    task = load_task(EXAMPLES / "transpose")
    report = verifier.check(task, reference_candidate(task))
    assert report.verdict == "correct", report.reason
    assert report.check is not None
    on_gpu = [t for t in report.check.trials if t.on_gpu]
    assert len(on_gpu) >= 2 and any(t.phase == "post-timing" for t in on_gpu)
    assert not any(t.on_gpu for t in report.check.trials if t.sizes in task.checks)


@pytest.mark.parametrize(
    ("source", "reason"),
    [(WRONG_AT_ONE, "output 'y' wrong at 1 of "), (LAST_ROW_UNWRITTEN, "output 'y' has NaN at ")],
)
def test_a_kernel_wrong_only_at_large_sizes_is_caught_on_the_gpu_as_on_the_host(
    verifier: Verifier, tmp_path: Path, source: str, reason: str
) -> None:
    task = load_task(EXAMPLES / "transpose")
    path = tmp_path / "candidate.cu"
    path.write_text(source)
    candidate = load_candidate(task, path)
    on_gpu = verifier.check(task, candidate)
    assert on_gpu.verdict == "wrong" and on_gpu.reason.startswith(reason), on_gpu.reason
    assert on_gpu.check is not None and on_gpu.check.trials[-1].on_gpu
    host = Verifier(VerifyOptions(compare_on_gpu=False))
    try:
        on_host = host.check(task, candidate)
    finally:
        host.close()
    assert on_host.verdict == "wrong" and on_host.reason.startswith(reason), on_host.reason
    assert on_host.check is not None and not on_host.check.trials[-1].on_gpu
