"""The loop end to end on a real GPU, with scripted replies standing in for the model: it keeps
the hand-written faster kernel, rejects the wrong one, and reports the measured speedup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelwright.agent.llm import ScriptedLLM
from kernelwright.agent.optimize import optimize
from kernelwright.agent.settings import Settings
from tests.conftest import EXAMPLES, proposed_launch

pytestmark = pytest.mark.gpu


def _reply(path: Path, tags: list[str]) -> str:
    meta: dict[str, object] = {"tags": tags, "rationale": "hand-written"}
    if (launch := proposed_launch(path)) is not None:
        meta["launch"] = launch
    return f"```cuda\n{path.read_text()}\n```\n```json\n{json.dumps(meta)}\n```\n"


@pytest.mark.parametrize("name", ["softmax", "transpose"])
def test_loop_keeps_the_faster_kernel_and_rejects_the_wrong_one(tmp_path: Path, name: str) -> None:
    task = EXAMPLES / name
    model = ScriptedLLM(
        [
            _reply(task / "candidates" / "wrong.cu", ["coalescing"]),
            "It is wrong.",
            _reply(task / "candidates" / "faster.cu", ["shared-memory tiling"]),
            "It is faster.",
        ]
    )
    out, run = optimize(task, Settings(data_dir=tmp_path), model=model, budget=2, plateau=5)
    wrong, faster = out["attempts"]
    assert wrong.verdict == "wrong" and not wrong.kept
    assert faster.verdict == "correct" and faster.kept and faster.speedup > 1.5
    assert out["best_speedup"] == faster.speedup
    assert (run.path / "best.cu").read_text() == (task / "candidates" / "faster.cu").read_text()
    print(f"{name}: kept {faster.speedup:.2f}x, rejected: {wrong.reason}")
