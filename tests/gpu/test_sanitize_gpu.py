"""compute-sanitizer on a real GPU: the launches it watches cannot be told from a trial's (their
arrays' addresses, seeds and poison), an access just outside an array is still seen, an honest
kernel passes, and a kernel the sanitizer does not get through is no pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelwright.tools import sanitize
from kernelwright.tools.task import Candidate, Task, load_candidate, load_task, reference_candidate
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.gpu

GELU_BODY = """
    if (i < n) {
        float v = x[i];
        float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}
"""


@pytest.fixture(autouse=True)
def needs_the_sanitizer() -> None:
    if sanitize.available() is None:
        pytest.skip("compute-sanitizer is not installed on this machine")


def gelu_with(tmp_path: Path, prologue: str) -> tuple[Task, Candidate]:
    task = load_task(EXAMPLES / "gelu")
    source = (
        'extern "C" __global__ void gelu(const float* x, float* y, int n)\n{\n'
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n" + prologue + GELU_BODY
    )
    path = tmp_path / "candidate.cu"
    path.write_text(source)
    return task, load_candidate(task, path)


def test_an_honest_kernel_passes_at_both_sizes() -> None:
    task = load_task(EXAMPLES / "gelu")
    found = sanitize.sanitize(task, reference_candidate(task))
    assert found.available and found.finished and found.ok, found.reason
    # the check size the trials show, a held-out size near the check sizes, and the size long
    # (sanitize.long_sizes: within the watched bytes, x and y in float32), in a random order
    small = sanitize.small_sizes(task)
    assert len(found.launch_sizes) == 3 and found.sizes == found.launch_sizes[0]
    assert small in found.launch_sizes
    held, long = sorted((s for s in found.launch_sizes if s != small), key=lambda s: s["N"])
    assert held not in task.checks and held["N"] <= 1.5 * max(c["N"] for c in task.checks)
    assert small["N"] < long["N"] and long["N"] * 8 <= sanitize.WATCHED_BYTES


def test_a_kernel_that_misbehaves_only_where_a_trial_places_its_arrays_is_seen(
    tmp_path: Path,
) -> None:
    """A trial's array sits 256 bytes into a block of the pool (past its guard band); the
    sanitizer's child used to give each array a bare allocation, 512-byte aligned: a kernel
    could write out of bounds only at a trial's alignment and never be watched doing it."""
    task, cand = gelu_with(
        tmp_path,
        "    bool trial = ((unsigned long long)y & 511ull) == 256ull;\n"
        "    if (i == 0 && trial) *((volatile float*)(y + n + 80)) = (float)n;\n",
    )
    found = sanitize.sanitize(task, cand, tools=("memcheck",))
    assert found.available and not found.ok, found.reason
    assert found.errors.get("memcheck", 0) > 0


def test_a_read_just_before_an_array_is_seen(tmp_path: Path) -> None:
    """The 256 bytes before each watched array are its own allocation's, never written:
    initcheck sees a read there (memcheck no longer can)."""
    task, cand = gelu_with(
        tmp_path, "    if (i == 0 && x[-1] == 12345.0f) { y[0] = 0.0f; return; }\n"
    )
    found = sanitize.sanitize(task, cand, tools=("initcheck",))
    assert found.available and not found.ok and found.errors["initcheck"] > 0, found.reason


def test_a_read_just_past_an_array_is_seen(tmp_path: Path) -> None:
    task, cand = gelu_with(
        tmp_path, "    if (i == 0 && x[n] == 12345.0f) { y[0] = 0.0f; return; }\n"
    )
    found = sanitize.sanitize(task, cand, tools=("memcheck",))
    assert found.available and not found.ok and found.errors["memcheck"] > 0, found.reason


def test_a_kernel_the_sanitizer_does_not_get_through_is_no_pass(tmp_path: Path) -> None:
    # a spin with no clock in it (a kernel that reads a clock is turned away before it runs:
    # the next test), on a volatile read of its input that never changes (a loop over a
    # volatile local ran to its end at once on an H200: the compiler kept none of it)
    task, cand = gelu_with(
        tmp_path,
        "    if (i == 0) { while (*(volatile const float*)x == *(volatile const float*)x) { } }\n",
    )
    found = sanitize.sanitize(task, cand, timeout_s=8, tools=("memcheck",))
    assert found.available and not found.ok and not found.finished, found.reason
    assert "did not finish on this candidate" in found.reason


def test_a_kernel_that_reads_the_clock_is_no_pass_before_it_runs(tmp_path: Path) -> None:
    """A kernel that can time itself can tell the sanitizer's slowness: no pass, said why."""
    task, cand = gelu_with(
        tmp_path,
        "    long long t0 = clock64();\n"
        "    if (clock64() - t0 > 100000LL && i == 0) { y[0] = 0.0f; }\n",
    )
    found = sanitize.sanitize(task, cand, timeout_s=60, tools=("memcheck",))
    assert found.available and not found.ok, found.reason
    assert "reads the GPU's clock (%clock64)" in found.reason
