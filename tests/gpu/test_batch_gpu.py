"""`kernelwright batch` on a real GPU over a few examples, with scripted replies standing in
for the model (no Ollama on the GPU machine): every task gets faster and report.html is
written with its three plots."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from kernelwright.agent.doors.cli_batch import run_batch_command
from kernelwright.agent.llm import ScriptedLLM
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.gpu
NAMES = ("softmax", "transpose")  # sorted: the batch's order


def _reply(path: Path, tags: list[str]) -> str:
    meta: dict[str, object] = {"tags": tags, "rationale": "hand-written"}
    sidecar = path.with_suffix(".toml")
    if sidecar.is_file():
        meta["launch"] = tomllib.loads(sidecar.read_text())["launch"]
    return f"```cuda\n{path.read_text()}\n```\n```json\n{json.dumps(meta)}\n```\n"


def test_batch_over_examples_writes_the_html_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KERNELWRIGHT_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "config.toml").touch()
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", str(tmp_path / "config.toml"))
    root, out = tmp_path / "tasks", tmp_path / "report"
    replies = []
    for name in NAMES:
        shutil.copytree(EXAMPLES / name, root / name)
        candidates = EXAMPLES / name / "candidates"
        replies += [
            _reply(candidates / "wrong.cu", ["coalescing"]),
            "It is wrong.",
            _reply(candidates / "faster.cu", ["shared-memory tiling"]),
            "It is faster.",
        ]
    code = run_batch_command(root, out, budget=2, model=ScriptedLLM(replies))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    batch = json.loads((out / "batch.json").read_text())
    assert [t["id"] for t in batch["tasks"]] == list(NAMES)
    for task in batch["tasks"]:
        assert task["verdict"] == "faster" and task["speedup"] > 1.5, task
        assert [a["verdict"] for a in task["attempts"]] == ["wrong", "correct"]
        assert task["baseline_ms"] > task["best_ms"] > 0
        assert task["roofline_after"] > task["roofline_before"] > 0  # the device's peaks known
    page = (out / "report.html").read_text()
    assert re.findall(r'<figure id="plot-(\w+)">', page) == ["speedup", "attempts", "roofline"]
    assert page.count('src="data:image/png;base64,') == 3
    print((out / "report.md").read_text())
