"""The tune after a run in the other doors: batch's --no-tune (kept for a resume) and its report's
tune column, read from each run's tune.json; MCP's optimize_kernel `tune` argument."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from kernelwright.agent.doors import jobs, mcp_server
from kernelwright.agent.doors.batch_records import BatchState, TaskState
from kernelwright.agent.doors.batch_report import markdown, task_report
from kernelwright.agent.doors.cli_batch import run_batch_command
from kernelwright.agent.llm import ScriptedLLM
from kernelwright.agent.settings import Settings
from kernelwright.tools.backend import ReplayGpu
from tests.doors.test_batch import H100, own_data_dir, replay, root, script

__all__ = ["own_data_dir", "root"]  # the batch tests' fixtures, used here too


def test_batch_no_tune_reaches_each_task_and_a_resume_keeps_it(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from kernelwright.agent import optimize as optimize_mod

    seen: list[dict[str, Any]] = []
    real = optimize_mod.optimize

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(optimize_mod, "optimize", spy)
    out = tmp_path / "out"
    code = run_batch_command(
        root,
        out,
        budget=2,
        model=ScriptedLLM(script(root)),
        gpu=replay(root),
        device=H100,
        loop={"tune": False},
    )
    assert code in (0, 1) and seen and all(k["tune"] is False for k in seen)
    assert json.loads((out / "batch-state.json").read_text())["tune"] is False
    seen.clear()
    capsys.readouterr()
    state = BatchState.load(out)
    assert state is not None and state.tune is False  # what a resume runs with
    default = run_batch_command(
        root,
        tmp_path / "out2",
        budget=2,
        model=ScriptedLLM(script(root)),
        gpu=replay(root),
        device=H100,
    )
    assert default in (0, 1) and all(k["tune"] is None for k in seen)  # None: the settings'


def test_the_report_shows_each_tasks_tune_gain(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "gelu"
    run.mkdir(parents=True)
    (run / "attempts.jsonl").touch()
    (run / "tune.json").write_text(json.dumps({"gain": 1.07, "best": "ITEMS=2", "tried": []}))
    task = TaskState(id="gelu", slug="gelu", path="gelu.toml", kind="cuda", status="done")
    task.run_dir = str(run)
    report = task_report(task, tmp_path)
    assert (report.tune_gain, report.tune_best) == (1.07, "ITEMS=2")
    (run / "tune.json").write_text(json.dumps({"error": "only a correct kernel is tuned: wrong"}))
    failed = task_report(task, tmp_path)
    assert failed.tune_gain is None and failed.tune_best.startswith("not tuned: only")
    data = {
        "dir": str(tmp_path), "device": "", "proposals_by": "x", "budget": 1,
        "counts": {"tasks": 1, "faster": 0, "unchanged": 1, "failed": 0, "skipped_files": 0},
        "started": "", "written": "", "wall_s": 0.0, "batch_wall_s": 0.0, "gpus": [],
        "failed": [], "skipped": [],
    }  # fmt: skip
    table = markdown(data, [report])
    assert "| tune gain |" in table and "| 1.07x (ITEMS=2) |" in table


def test_mcp_optimize_takes_tune(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def fake(machine: Any, task: Path, **kw: Any) -> jobs.RunOutcome:
        seen.append(kw["tune"])
        (tmp_path / "summary.md").write_text("ok")
        tuned = {"gain": 1.0} if kw["tune"] is None else None
        return jobs.RunOutcome("gelu", tmp_path, True, "budget", [], "", None, 1.0, [], tuned)

    monkeypatch.setattr(jobs, "optimize", fake)
    settings = Settings(data_dir=tmp_path / "data")
    machine = jobs.Machine(settings, gpu=ReplayGpu(), model=ScriptedLLM(), arch="sm_90")

    async def main() -> None:
        async with Client(mcp_server.build(machine)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            tune = tools["optimize_kernel"].input_schema["properties"]["tune"]
            assert tune["default"] is True and "compile options" in tune["description"]
            on = await client.call_tool("optimize_kernel", {"task": "gelu"})
            off = await client.call_tool("optimize_kernel", {"task": "gelu", "tune": False})
            assert on.structured_content["tune"] == {"gain": 1.0}
            assert off.structured_content["tune"] is None

    anyio.run(main)
    assert seen == [None, False]  # on: as the settings say; off: off
