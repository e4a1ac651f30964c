"""The verifier on a real GPU: every example's reference, faster and wrong candidate."""

from __future__ import annotations

import pytest

from kernelwright.tools.protocol import START_STEPS
from kernelwright.tools.task import load_candidate, load_task, reference_candidate
from kernelwright.tools.verify import Verifier
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.gpu
TASKS = ["gelu", "rowsum", "softmax", "matmul", "stencil", "transpose"]


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier()


@pytest.mark.parametrize("name", TASKS)
def test_reference_against_itself_reads_one(verifier: Verifier, name: str) -> None:
    task = load_task(EXAMPLES / name)
    report = verifier.check(task, reference_candidate(task))
    assert report.verdict == "correct", report.reason
    assert report.check is not None and report.check.reference == "float64 reference"
    assert len(report.check.trials) >= 6
    assert sum(t.held_out for t in report.check.trials) >= 2  # a small size, and large ones
    assert report.timing is not None
    assert 0.98 <= report.timing.speedup <= 1.02, report.timing
    # where each new worker's start went, by its own account, within the check's "start"
    for label in ("reference", "candidate"):
        start = report.worker_start_ms[label]
        assert {"interpreter", "imports", "cuda", "warm-up"} <= set(start) <= set(START_STEPS)
    assert sum(report.worker_start_ms["reference"].values()) <= report.phase_ms["start"] + 20


@pytest.mark.parametrize("name", TASKS)
def test_hand_written_faster_kernel_is_verified_faster(verifier: Verifier, name: str) -> None:
    task = load_task(EXAMPLES / name)
    report = verifier.check(
        task, load_candidate(task, EXAMPLES / name / "candidates" / "faster.cu")
    )
    assert report.verdict == "correct", report.reason
    assert report.timing is not None and report.timing.speedup > 1.05, report.timing


@pytest.mark.parametrize("name", TASKS)
def test_wrong_kernel_is_rejected_with_a_reason(verifier: Verifier, name: str) -> None:
    task = load_task(EXAMPLES / name)
    report = verifier.check(task, load_candidate(task, EXAMPLES / name / "candidates" / "wrong.cu"))
    assert report.verdict == "wrong"
    assert report.reason.startswith("output '"), report.reason
    assert report.timing is None  # a wrong kernel is never timed


def test_an_unchanged_candidate_is_not_built_again(verifier: Verifier) -> None:
    task = load_task(EXAMPLES / "gelu")
    faster = load_candidate(task, EXAMPLES / "gelu" / "candidates" / "faster.cu")
    first, second = verifier.check(task, faster), verifier.check(task, faster)
    assert first.ok and second.ok
    assert second.compile is not None and second.compile.cached
    assert second.phase_ms["compile"] < 50  # a file read, no compile worker
    changed = faster.model_copy(update={"source": faster.source + "\n// edited\n"})
    third = verifier.check(task, changed)
    assert third.compile is not None and not third.compile.cached


def test_a_candidates_compile_options_reach_its_build(verifier: Verifier) -> None:
    from kernelwright.tools.spec import CompileOptions

    # matmul's tiled kernel takes more than 32 registers by default (ptxas will not go below
    # 24 on sm_90: a cap of 16 builds at 24, with a warning)
    task = load_task(EXAMPLES / "matmul")
    faster = load_candidate(task, EXAMPLES / "matmul" / "candidates" / "faster.cu")
    plain = verifier.check(task, faster)
    capped = faster.model_copy(update={"options": CompileOptions(maxrregcount=32)})
    tuned = verifier.check(task, capped)
    assert plain.ok and tuned.ok, tuned.reason
    assert plain.compile is not None and tuned.compile is not None
    assert plain.compile.registers is not None and plain.compile.registers > 32
    assert tuned.compile.registers is not None and tuned.compile.registers <= 32
    assert not tuned.compile.cached  # another build than the plain one's, not its cubin
