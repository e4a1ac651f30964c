"""One machine of jobs: `kernelwright check` and `optimize` call the same jobs that chat and MCP
call (agent/doors/jobs.py), with the GPU those jobs make from the settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kernelwright.agent import options
from kernelwright.agent.doors import jobs
from kernelwright.agent.doors.cli import app
from kernelwright.agent.settings import Settings
from kernelwright.tools import nvml
from kernelwright.tools.results import SanitizeResult
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_task, reference_candidate
from tests.conftest import EXAMPLES
from tests.doors.test_chat import gelu_replay


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "config.toml").touch()
    return {
        "KERNELWRIGHT_CONFIG": str(tmp_path / "config.toml"),
        "KERNELWRIGHT_DATA_DIR": str(tmp_path / "data"),
        "KERNELWRIGHT_OLLAMA_BASE_URL": "http://127.0.0.1:9",
        "KERNELWRIGHT_RUN_TIMEOUT_S": "7",
    }


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The GPUs the jobs make from the settings, answered from recorded reports."""
    made: list[dict[str, Any]] = []
    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    replay = gelu_replay(EXAMPLES / "gelu")
    not_here = SanitizeResult(available=False, reason="compute-sanitizer is not installed")
    replay.add(task, reference_candidate(task), not_here)

    def local_gpu(settings: Settings, **kw: Any) -> Any:
        made.append({"settings": settings, **kw})
        return replay

    monkeypatch.setattr(options, "local_gpu", local_gpu)
    monkeypatch.setattr(nvml, "device_info", lambda *a: type("D", (), {"arch": "sm_90"})())
    return made


def test_the_command_lines_check_is_the_doors_check(
    env: dict[str, str], made: list[dict[str, Any]]
) -> None:
    args = ["check", str(EXAMPLES / "gelu"), "--json", "--no-profile", "--sanitize"]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["verdict"] == "correct" and report["timing"]["speedup"] == 1.0
    assert report["sanitizer"]["available"] is False  # and the command says so
    assert "compute-sanitizer did not run: compute-sanitizer is not installed" in result.stderr
    (gpu,) = made  # one GPU, made from the settings, for one check: no spare workers
    assert gpu["settings"].run_timeout_s == 7.0
    assert gpu["prestart"] is False and callable(gpu["progress"])


def test_the_command_lines_optimize_is_the_doors_optimize(
    env: dict[str, str], made: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, Any]] = []
    run_dir = Path(env["KERNELWRIGHT_DATA_DIR"]) / "runs" / "gelu-1"

    def optimize(machine: jobs.Machine, task: Path, **kw: Any) -> jobs.RunOutcome:
        seen.append({"task": task, "gpu": machine.gpu(), **kw})
        return jobs.RunOutcome("gelu", run_dir, True, "plateau", [], "", None, 1.0, [])

    monkeypatch.setattr(jobs, "optimize", optimize)
    args = ["optimize", str(EXAMPLES / "gelu"), "--json", "--minutes", "2", "--plateau", "3"]
    result = CliRunner().invoke(app, [*args, "--budget", "5", "--no-memory"], env=env)
    assert result.exit_code == 0, result.output
    (call,) = seen
    assert call["task"] == EXAMPLES / "gelu" and call["budget"] == 5
    assert call["max_seconds"] == 120.0 and call["plateau"] == 3 and call["memory"] is False
    assert call["resume"] is False
    assert made[0]["prestart"] is True  # a loop checks again and again: spares help
    out = json.loads(result.stdout)
    assert out["run_dir"] == str(run_dir) and out["stop_reason"] == "plateau"
    assert out["best_speedup"] == 1.0 and out["attempts"] == [] and out["choices"] == []


def test_resume_without_a_run_says_so_before_a_gpu_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_gpu(*a: Any) -> Any:
        raise AssertionError("the GPU was asked for")

    monkeypatch.setattr(nvml, "device_info", no_gpu)
    machine = jobs.Machine(Settings(data_dir=tmp_path))
    with pytest.raises(Exception, match="no unfinished run of gelu to resume"):
        jobs.optimize(machine, EXAMPLES / "gelu", budget=1, progress=lambda e: None, resume=True)
