"""Candidates that hang, crash, write nothing or touch their inputs: each gets a verdict and a
readable reason, and the next candidate is unaffected."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelwright.tools.spec import CudaCandidate
from kernelwright.tools.task import load_task, reference_candidate
from kernelwright.tools.verify import Verifier, VerifyOptions
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.gpu

HEAD = 'extern "C" __global__ void gelu(const float* x, float* y, int n) {\n'
BODIES = {
    "hang": ("timeout", "no progress", "  while (((volatile const float*)x)[0] < 1e30f) { }\n"),
    "illegal": (
        "crashed",
        "illegal",
        "  float* p = (float*)0x10; p[threadIdx.x] = 1.0f; y[0] = p[1];\n",
    ),
    "nothing": ("wrong", "not fully written", "  \n"),
    "mutate_input": (
        "wrong",
        "input modified",
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) { float v = x[i]; y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * "
        "(v + 0.044715f * v * v * v))); ((float*)x)[i] = 0.0f; }\n",
    ),
    "nan": (
        "wrong",
        "NaN",
        '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = nanf("");\n',
    ),
    "syntax": ("compile_error", "does not compile", "  this is not C++;\n"),
}


@pytest.mark.parametrize("case", list(BODIES))
def test_hostile_candidate_gets_a_verdict_and_the_next_check_is_clean(case: str) -> None:
    verdict, words, body = BODIES[case]
    task = load_task(EXAMPLES / "gelu")
    verifier = Verifier(VerifyOptions(run_timeout_s=8))
    report = verifier.check(task, CudaCandidate(path=f"{case}.cu", source=HEAD + body + "}\n"))
    assert report.verdict == verdict, report.reason
    assert words.lower() in report.reason.lower(), report.reason
    after = verifier.check(task, reference_candidate(task))
    assert after.verdict == "correct", after.reason


def test_kernelbench_problem_against_itself_and_a_cupy_candidate() -> None:
    pytest.importorskip("torch")
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    verifier = Verifier()
    report = verifier.check(task, reference_candidate(task))
    assert report.verdict == "correct", report.reason
    assert report.timing is not None and 0.97 <= report.timing.speedup <= 1.03
    cand = verifier.check(
        task,
        __import__("kernelwright.tools.task", fromlist=["x"]).load_candidate(
            task, Path(EXAMPLES / "kernelbench" / "relu_mlp_candidate.py")
        ),
    )
    assert cand.verdict == "correct", cand.reason
    assert cand.check is not None and cand.check.reference == "PyTorch eager in float64"
