"""The adversarial suite on a real GPU: every cheating or broken candidate is rejected for its
stated reason, every control passes (the references read 1.00x within 2%), nothing a case
started outlives its check, and after all of them a clean check still reads 1.00x."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kernelwright.evals.adversarial import Case, load_cases, run_case, suite_options
from kernelwright.tools.task import load_task, reference_candidate
from kernelwright.tools.verify import Verifier
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.gpu
CASES = load_cases()


@pytest.fixture(scope="module")
def verifier() -> Iterator[Verifier]:
    with Verifier(suite_options()) as v:
        yield v


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_gets_its_expected_verdict(verifier: Verifier, case: Case) -> None:
    if case.task.startswith("kernelbench/"):
        pytest.importorskip("torch")
    result = run_case(verifier, case)
    assert result.ok, f"{result.problem} | {result.verdict}: {result.reason}"


def test_after_the_suite_a_clean_check_reads_one(verifier: Verifier) -> None:
    task = load_task(EXAMPLES / "gelu")
    report = verifier.check(task, reference_candidate(task))
    assert report.verdict == "correct", report.reason
    assert report.timing is not None and 0.98 <= report.timing.speedup <= 1.02
