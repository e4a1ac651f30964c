"""A KernelBench candidate that builds with load_inline, on a real GPU: built once by the
controller's build worker, answered from the cache the next time, and a build that fails while
the candidate falls back is said in the reason (extbuild.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelwright.tools.task import load_candidate, load_task
from kernelwright.tools.verify import Verifier, VerifyOptions
from tests.conftest import EXAMPLES

CASES = Path(__file__).resolve().parents[2] / "evals" / "adversarial" / "cases"

pytestmark = pytest.mark.gpu
TASK = EXAMPLES / "kernelbench" / "relu_mlp.py"
CANDIDATE = CASES / "controls" / "kb_load_inline.py"  # the suite's honest load_inline control


def test_an_unchanged_load_inline_candidate_is_built_once(tmp_path: Path) -> None:
    task = load_task(TASK)
    candidate = load_candidate(task, CANDIDATE)
    verifier = Verifier(VerifyOptions(build_cache_dir=str(tmp_path)))
    try:
        first = verifier.check(task, candidate)
        second = verifier.check(task, candidate)
    finally:
        verifier.close()
    assert first.verdict == "correct", first.reason
    assert second.verdict == "correct", second.reason
    assert first.extensions and not first.extensions[0].cached and first.extensions[0].ok
    # every process of the candidate's side imports it: the further ones from the cache
    assert all(e.cached for e in first.extensions[1:])
    assert second.extensions and all(e.cached and e.seconds < 1 for e in second.extensions)
    assert second.phase_ms["compile"] < first.phase_ms["compile"] / 4


def test_a_build_that_fails_and_a_candidate_that_falls_back_is_said(tmp_path: Path) -> None:
    broken = (
        CANDIDATE.read_text()
        .replace("_ext = load_inline(", "try:\n    _ext = load_inline(")
        .replace(
            'extra_cuda_cflags=["-O3"],\n)',
            'extra_cuda_cflags=["-O3"],\n    )\nexcept Exception:\n    _ext = None',
        )
        .replace("fmaxf(x[i], 0.0f)", "fmaxf(x[i], undefined_name)")
        .replace(
            "        return _ext.relu_cuda(h.contiguous())",
            "        return torch.relu(h) if _ext is None else _ext.relu_cuda(h.contiguous())",
        )
    )
    path = tmp_path / "fallback.py"
    path.write_text(broken)
    task = load_task(TASK)
    verifier = Verifier(VerifyOptions(build_cache_dir=str(tmp_path / "builds")))
    try:
        report = verifier.check(task, load_candidate(task, path))
    finally:
        verifier.close()
    assert report.verdict == "correct", report.reason
    assert "its load_inline build 'kw_relu_mlp_ext' failed" in report.reason
    assert "undefined_name" in report.extensions[0].log
