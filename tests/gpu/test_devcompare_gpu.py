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


def _more_cases() -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Beyond the CPU tier's: every dtype pair, NaN and infinite expectations, errors that
    are infinite or NaN, a large output (no relative error), ties for the worst element."""
    rng = np.random.default_rng(11)
    out = [(case, *_arrays(case)) for case in CASES]
    base = rng.standard_normal(5000) * 10
    for g_dt in ("float16", "float32", "float64"):
        for e_dt in ("float16", "float32", "float64"):
            exp = base.astype(e_dt)
            got = exp.astype(g_dt)
            out.append((f"{g_dt}/{e_dt} within", got.copy(), exp))
            got[[7, 4000]] += 3  # two equal errors: the first is the worst
            got[100] = np.inf
            out.append((f"{g_dt}/{e_dt} wrong", got, exp))
    exp = base.copy()
    exp[[3, 9]] = np.nan, -np.inf
    got = base.copy()
    got[9] = -np.inf
    out.append(("NaN expected", got, exp))
    got = base.copy()
    got[[2, 5]] = np.inf, -np.inf
    out.append(("infinite errors", got, base.copy()))
    big = rng.standard_normal(5_000_000).astype(np.float32)
    wrong = big.copy()
    wrong[4_999_999] *= 1.001
    out.append(("large within", big.copy(), big))
    out.append(("large wrong at the end", wrong, big))
    ints = np.arange(10_000, dtype=np.int32)
    bad = ints.copy()
    bad[[9000, 9001]] = -1
    out.append(("int32 within", ints.copy(), ints))
    out.append(("int32 wrong", bad, ints))
    return out


@pytest.mark.parametrize("case", _more_cases(), ids=lambda c: c[0])
def test_the_harness_kernel_finds_the_facts_numpy_finds(case: tuple) -> None:
    import cupy

    from kernelwright.tools.devcompare import device_facts

    _, got, exp = case
    atol, rtol = 1e-5, 1e-5
    on_host = correctness.facts(np, got, exp, atol, rtol)
    on_gpu = device_facts(cupy.asarray(got), cupy.asarray(exp), atol, rtol)
    assert on_gpu.keys() == on_host.keys()
    for key, value in on_host.items():  # to the bit, NaN as NaN
        same = value == on_gpu[key] or (value != value and on_gpu[key] != on_gpu[key])
        assert same and type(value) is type(on_gpu[key]), (key, value, on_gpu[key])
    words = correctness.outcome("y", got.shape, on_gpu, atol, rtol)
    assert words == correctness.outcome("y", got.shape, on_host, atol, rtol)


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
