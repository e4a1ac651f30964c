"""The loop end to end on a KernelBench problem on a real GPU, with scripted replies standing in
for the model: a wrong ModelNew (min for max in the relu) and the hand-written one in
examples/kernelbench/relu_mlp_candidate.py. The real verifier rejects the wrong one and times
the other against PyTorch eager; the loop keeps whichever is faster and says by how much."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from kernelwright.agent.llm import ScriptedLLM
from kernelwright.agent.nodes.common import KEEP_MARGIN
from kernelwright.agent.optimize import optimize
from kernelwright.agent.settings import Settings
from tests.conftest import EXAMPLES

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in ("torch", "cupy")),
        reason="KernelBench problems need torch and cupy (pip install 'kernelwright[torch]')",
    ),
]

PROBLEM = EXAMPLES / "kernelbench" / "relu_mlp.py"
CANDIDATE = (EXAMPLES / "kernelbench" / "relu_mlp_candidate.py").read_text()
WRONG = CANDIDATE.replace("fmaxf(x[i], 0.0f)", "fminf(x[i], 0.0f)").replace(
    "fmax(x[i], 0.0)", "fmin(x[i], 0.0)"
)


def _reply(source: str, tags: list[str]) -> str:
    meta = json.dumps({"tags": tags, "rationale": "hand-written"})
    return f"```python\n{source}```\n```json\n{meta}\n```\n"


def test_loop_rejects_the_wrong_model_new_and_keeps_the_faster(tmp_path: Path) -> None:
    assert WRONG != CANDIDATE
    model = ScriptedLLM(
        [
            _reply(WRONG, ["kernel-fusion"]),
            "It is wrong.",
            _reply(CANDIDATE, ["kernel-fusion"]),
            "It was timed.",
        ]
    )
    out, run = optimize(PROBLEM, Settings(data_dir=tmp_path), model=model, budget=2, plateau=5)
    wrong, candidate = out["attempts"]
    assert wrong.verdict == "wrong" and not wrong.kept, wrong.reason
    assert candidate.verdict == "correct", candidate.reason
    assert candidate.speedup is not None and candidate.speedup > 0
    faster = candidate.speedup > KEEP_MARGIN
    assert candidate.kept == faster
    assert out["best_speedup"] == (candidate.speedup if faster else 1.0)
    best = (run.path / "best.py").read_text()
    assert best == CANDIDATE if faster else best.endswith("ModelNew = Model\n")
    assert not (run.path / "best.cu").exists()
    assert "in best.py" in (run.path / "summary.md").read_text()
    print(
        f"relu_mlp: candidate {candidate.speedup:.2f}x PyTorch eager "
        f"(IQR {candidate.speedup_iqr}), {'kept' if faster else 'not kept'}; "
        f"rejected: {wrong.reason}"
    )
