"""The `kernelwright` command as a user runs it, on a machine without a GPU."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, HAS_GPU, ROOT

KW = shutil.which("kernelwright")
pytestmark = pytest.mark.skipif(KW is None, reason="the kernelwright script is not installed")
no_gpu = pytest.mark.skipif(HAS_GPU, reason="checks the message on a machine without a GPU")


def kw(
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("KERNELWRIGHT_")}
    (tmp_path / "config.toml").touch()  # no user config (a test may have written one)
    base.update(
        KERNELWRIGHT_DATA_DIR=str(tmp_path / "data"),
        KERNELWRIGHT_CONFIG=str(tmp_path / "config.toml"),
        KERNELWRIGHT_OLLAMA_BASE_URL="http://127.0.0.1:9",
        COLUMNS="200",
        **(env or {}),
    )
    env = base
    assert KW is not None
    return subprocess.run(
        [KW, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_missing_task(tmp_path: Path) -> None:
    line = one_error_line(kw(tmp_path, "check", "missing/path"))
    assert "missing/path" in line and "no such file" in line


@no_gpu
def test_check_without_gpu(tmp_path: Path) -> None:
    line = one_error_line(kw(tmp_path, "check", "examples/gelu"))
    assert "GPU" in line


def test_broken_task(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "gelu", tmp_path / "gelu")
    toml = tmp_path / "gelu" / "gelu.toml"
    toml.write_text(toml.read_text().replace('dtype = "float32"', 'dtype = "floot32"', 1))
    line = one_error_line(kw(tmp_path, "check", str(tmp_path / "gelu")))
    assert str(toml) in line and "args[0] (x).dtype" in line and "floot32" in line


def test_candidate_with_wrong_signature(tmp_path: Path) -> None:
    line = one_error_line(
        kw(tmp_path, "check", "examples/gelu", "examples/softmax/candidates/faster.cu")
    )
    assert "faster.cu" in line and "gelu" in line


def test_doctor_reports_what_is_missing(tmp_path: Path) -> None:
    proc = kw(tmp_path, "doctor")
    lines = proc.stdout.splitlines()
    if not HAS_GPU:
        assert any(ln.startswith("FAIL GPU") for ln in lines), proc.stdout
    ollama = next(ln for ln in lines if " Ollama " in ln)
    assert ollama.startswith("FAIL") and "http://127.0.0.1:9" in ollama
    assert "fix: start it: ollama serve" in ollama
    assert any(ln.startswith("ok   memory dir") and str(tmp_path / "data") in ln for ln in lines)
    assert "not ready" in proc.stdout


def test_doctor_json(tmp_path: Path) -> None:
    report = json.loads(kw(tmp_path, "doctor", "--json").stdout)
    assert report["ok"] is False  # Ollama is down
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["Ollama"]["ok"] is False and checks["Ollama"]["fix"] == "start it: ollama serve"
    assert checks["memory dir"]["ok"] is True


def test_doctor_exit_code_says_not_ready(tmp_path: Path) -> None:
    assert kw(tmp_path, "doctor").returncode == 1


def test_bad_backend_flag_is_a_usage_error(tmp_path: Path) -> None:
    proc = kw(tmp_path, "check", "examples/gelu", "--backend", "gcc")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "'gcc' is not one of 'nvrtc', 'nvcc'" in " ".join(proc.stderr.split())


def test_bad_backend_setting_is_one_line(tmp_path: Path) -> None:
    proc = kw(tmp_path, "check", "examples/gelu", env={"KERNELWRIGHT_COMPILE_BACKEND": "gcc"})
    line = one_error_line(proc)
    assert "compile_backend" in line


def test_version(tmp_path: Path) -> None:
    proc = kw(tmp_path, "--version")
    assert proc.returncode == 0 and proc.stdout.strip() == "kernelwright 0.1.0"


@pytest.mark.parametrize(
    "args", [(), ("optimise",), ("check",)], ids=["no-args", "unknown-command", "missing-task"]
)
def test_usage_errors_are_short(tmp_path: Path, args: tuple[str, ...]) -> None:
    proc = kw(tmp_path, *args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_optimize_with_ollama_down_is_one_line_and_leaves_no_run(tmp_path: Path) -> None:
    """One line naming what is missing (the GPU first, then Ollama), and no run left."""
    line = one_error_line(kw(tmp_path, "optimize", "examples/gelu"))
    assert ("ollama serve" in line) if HAS_GPU else ("NVIDIA GPU" in line)
    assert not (tmp_path / "data" / "runs").exists()


def test_optimize_takes_a_kernelbench_problem(tmp_path: Path) -> None:
    """Accepted as a task: it fails on the machine (no GPU here, or Ollama down), in one line,
    not on the format."""
    line = one_error_line(kw(tmp_path, "optimize", "examples/kernelbench/relu_mlp.py"))
    assert ("ollama serve" in line) if HAS_GPU else ("NVIDIA GPU" in line)
    assert "CUDA tasks" not in line
    assert not (tmp_path / "data" / "runs").exists()


def test_sigterm_unwinds_the_run_as_ctrl_c_does(tmp_path: Path) -> None:
    """A `timeout` or CI runner's SIGTERM must run every `with` (the Verifier kills its
    workers there), not leave worker sessions behind."""
    import signal
    import sys

    marker = tmp_path / "unwound"
    code = (
        "import sys, time\n"
        "from kernelwright.agent.doors import cli\n"
        "def app():\n"
        "    try:\n"
        "        print('up', flush=True)\n"
        "        time.sleep(60)\n"
        "    finally:\n"
        "        open(sys.argv[1], 'w').write('yes')\n"
        "cli.app = app\n"
        "cli.main()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(marker)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    assert marker.read_text() == "yes"


def test_h_is_help_and_nonsense_budgets_are_refused(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kernelwright.agent.doors.cli import app

    runner = CliRunner()
    assert runner.invoke(app, ["-h"]).exit_code == 0
    assert runner.invoke(app, ["check", "-h"]).exit_code == 0
    task = str(EXAMPLES / "gelu")
    for args in (
        ["optimize", task, "--budget", "-3"],
        ["optimize", task, "--budget", "0"],
        ["optimize", task, "--minutes", "-1"],
        ["optimize", task, "--plateau", "0"],
        ["batch", str(tmp_path), "--budget", "0"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "Invalid value" in result.output, args


def test_doctor_piped_keeps_one_line_per_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """`kernelwright doctor | grep FAIL` must see each check whole, not wrapped at 80."""
    from typer.testing import CliRunner

    from kernelwright.agent.doors.cli import app

    monkeypatch.setenv("KERNELWRIGHT_OLLAMA_BASE_URL", "http://127.0.0.1:9/" + "x" * 60)
    result = CliRunner().invoke(app, ["doctor"])
    lines = [line for line in result.output.splitlines() if "Ollama " in line[:12]]
    assert len(lines) == 1 and "not reachable" in lines[0] and "fix: start it" in lines[0]


def test_a_candidate_that_is_a_directory_says_so(tmp_path: Path) -> None:
    from kernelwright.tools.errors import TaskError
    from kernelwright.tools.task import load_candidate, load_task

    task = load_task(EXAMPLES / "softmax")
    with pytest.raises(TaskError, match=r"is a directory: a candidate is one \.cu file"):
        load_candidate(task, tmp_path)


def test_doctor_looks_for_the_model_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from kernelwright.agent.doors.cli import app

    monkeypatch.setenv("KERNELWRIGHT_OLLAMA_BASE_URL", "http://127.0.0.1:9")
    result = CliRunner().invoke(app, ["doctor", "--json", "--model", "deepseek-coder-v2:16b"])
    checks = {c["name"]: c for c in json.loads(result.output)["checks"]}
    assert checks["model"]["detail"].startswith("deepseek-coder-v2:16b")


@pytest.mark.skipif(HAS_GPU, reason="the machine has a GPU")
def test_optimize_without_a_gpu_says_so_before_blaming_ollama(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kernelwright.agent.doors.cli import app

    env = {
        "KERNELWRIGHT_OLLAMA_BASE_URL": "http://127.0.0.1:9",
        "KERNELWRIGHT_DATA_DIR": str(tmp_path / "data"),
    }
    from kernelwright.tools.errors import NoGpuError

    result = CliRunner().invoke(app, ["optimize", str(EXAMPLES / "softmax")], env=env)
    # main() prints it as one line; through the app the exception itself is what ended it
    assert isinstance(result.exception, NoGpuError), result.exception


def test_batch_passes_on_only_the_loop_flags_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resume told nothing new says nothing of how the batch started (its state keeps it)."""
    from typer.testing import CliRunner

    from kernelwright.agent.doors import cli_batch
    from kernelwright.agent.doors.cli import app

    seen: list[dict[str, object]] = []

    def spy(*args: object, **kwargs: object) -> int:
        seen.append(kwargs["loop"])  # type: ignore[arg-type]
        return 0

    monkeypatch.setattr(cli_batch, "run_batch_command", spy)
    runner = CliRunner()
    assert runner.invoke(app, ["batch", str(tmp_path), "--minutes", "30"]).exit_code == 0
    assert runner.invoke(app, ["batch", str(tmp_path), "--resume"]).exit_code == 0
    assert runner.invoke(app, ["batch", str(tmp_path), "--no-memory"]).exit_code == 0
    assert seen == [{"minutes": 30.0}, {}, {"memory": False}]
