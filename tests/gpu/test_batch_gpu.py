"""`kernelwright batch` on a real GPU over a few examples, with scripted replies standing in
for the model (no Ollama on the GPU machine): every task gets faster and report.html is
written with its three plots; on every GPU at once (`--gpus all`, one Dask worker per GPU) the
report is the plain batch's, and says which GPU ran each task."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from kernelwright.agent.doors.batch_worker import WorkerParts
from kernelwright.agent.doors.cli_batch import run_batch_command
from kernelwright.agent.llm import ScriptedLLM
from tests.conftest import EXAMPLES, proposed_launch
from tests.doors.test_batch_dask import Replies

pytestmark = pytest.mark.gpu
NAMES = ("softmax", "transpose")  # sorted: the batch's order


def _reply(path: Path, tags: list[str]) -> str:
    meta: dict[str, object] = {"tags": tags, "rationale": "hand-written"}
    if (launch := proposed_launch(path)) is not None:
        meta["launch"] = launch
    return f"```cuda\n{path.read_text()}\n```\n```json\n{json.dumps(meta)}\n```\n"


def _tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """The examples in a folder of the test's, their runs and memory in its data directory, and
    the model's replies: per task, a wrong candidate, its review, a faster one and its review."""
    monkeypatch.setenv("KERNELWRIGHT_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "config.toml").touch()
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", str(tmp_path / "config.toml"))
    root = tmp_path / "tasks"
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
    return root, replies


def test_batch_over_examples_writes_the_html_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, replies = _tasks(tmp_path, monkeypatch)
    out = tmp_path / "report"
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


def test_batch_on_all_gpus_reports_as_the_plain_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--gpus all` (one GPU here: one worker, pinned by UUID) against the plain batch, with the
    same replies: the same tasks, verdicts, attempts and techniques, both faster; the report
    also names the GPU and the batch's wall time. The workers share the memory through the
    server the batch starts."""
    root, replies = _tasks(tmp_path, monkeypatch)
    plain, spread = tmp_path / "plain", tmp_path / "gpus"
    assert run_batch_command(root, plain, budget=2, model=ScriptedLLM(replies)) == 0
    per_task = {
        name: {"wrong": replies[4 * i + 1], "correct": replies[4 * i + 3]}
        for i, name in enumerate(NAMES)
    }
    model = Replies(
        {n: [replies[4 * i], replies[4 * i + 2]] for i, n in enumerate(NAMES)}, per_task
    )
    code = run_batch_command(
        root, spread, budget=2, model=ScriptedLLM(), gpus="all", parts=WorkerParts(model=model)
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    a, b = (json.loads((out / "batch.json").read_text()) for out in (plain, spread))
    assert a["counts"] == b["counts"] and a["device"] == b["device"] and a["failed"] == b["failed"]
    for x, y in zip(a["tasks"], b["tasks"], strict=True):
        same = ("id", "status", "verdict", "techniques", "best_attempt", "device", "stop_reason")
        assert {k: x[k] for k in same} == {k: y[k] for k in same}
        assert [(t["verdict"], t["tags"]) for t in x["attempts"]] == [
            (t["verdict"], t["tags"]) for t in y["attempts"]
        ]
        assert x["speedup"] > 1.5 and y["speedup"] > 1.5
        assert x["gpu"] == "" and re.fullmatch(r"GPU \d+ on \S+", y["gpu"])
    assert a["batch_wall_s"] == 0 and b["batch_wall_s"] > 0 and len(b["gpus"]) >= 1
    md = (spread / "report.md").read_text()
    assert "s of wall time on" in md and "| gpu |" in md
    print(md)
