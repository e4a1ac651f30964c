"""Files that are not UTF-8, met through the doors: `kernelwright check` prints one line and exits
2 (before it needs a GPU), and an MCP client gets that line as the tool's error text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mcp import Client

from kernelwright.agent.doors import jobs, mcp_server
from kernelwright.agent.settings import Settings
from tests.agent.test_cli import KW, kw, one_error_line
from tests.conftest import EXAMPLES
from tests.doors.test_mcp import run_client, text
from tests.tools.test_not_utf8 import copy, spoil

needs_script = pytest.mark.skipif(KW is None, reason="the kernelwright script is not installed")


@needs_script
def test_cli_task_kernel_not_utf8(tmp_path: Path) -> None:
    d = copy(tmp_path)
    expected = spoil(d / "gelu.cu")
    assert one_error_line(kw(tmp_path, "check", str(d))) == f"error: {expected}"


@needs_script
def test_cli_task_toml_not_utf8(tmp_path: Path) -> None:
    d = copy(tmp_path)
    expected = spoil(d / "gelu.toml", "#")
    assert one_error_line(kw(tmp_path, "check", str(d))) == f"error: {expected}"


@needs_script
def test_cli_candidate_not_utf8(tmp_path: Path) -> None:
    cand = tmp_path / "faster.cu"
    shutil.copy(EXAMPLES / "gelu" / "candidates" / "faster.cu", cand)
    expected = spoil(cand)
    line = one_error_line(kw(tmp_path, "check", "examples/gelu", str(cand)))
    assert line == f"error: {expected}"


@needs_script
def test_cli_kernelbench_problem_not_utf8(tmp_path: Path) -> None:
    problem = tmp_path / "relu_mlp.py"
    shutil.copy(EXAMPLES / "kernelbench" / "relu_mlp.py", problem)
    expected = spoil(problem, "#")
    assert one_error_line(kw(tmp_path, "check", str(problem))) == f"error: {expected}"


@needs_script
def test_cli_config_file_not_utf8(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"  # where kw() points KERNELWRIGHT_CONFIG
    config.write_text('model = "m"\n')
    expected = spoil(config, "#")
    assert one_error_line(kw(tmp_path, "check", "examples/gelu")) == f"error: {expected}"


def test_mcp_tool_error_is_the_one_line(tmp_path: Path) -> None:
    d = copy(tmp_path)
    bad_task = spoil(d / "gelu.cu")
    cand = tmp_path / "faster.cu"
    shutil.copy(EXAMPLES / "gelu" / "candidates" / "faster.cu", cand)
    bad_cand = spoil(cand)
    problem = tmp_path / "relu_mlp.py"
    shutil.copy(EXAMPLES / "kernelbench" / "relu_mlp.py", problem)
    bad_problem = spoil(problem, "#")
    settings = Settings(data_dir=tmp_path / "data", ollama_base_url="http://127.0.0.1:9")
    machine = jobs.Machine(settings, arch="sm_90")  # no GPU is reached: loading comes first

    async def session(client: Client) -> None:
        calls = [
            ("check_kernel", {"task": str(d)}, bad_task),
            ("profile_kernel", {"task": str(d)}, bad_task),
            ("optimize_kernel", {"task": str(d), "budget": 1}, bad_task),
            ("check_kernel", {"task": str(EXAMPLES / "gelu"), "candidate": str(cand)}, bad_cand),
            ("check_kernel", {"task": str(problem)}, bad_problem),
        ]
        for tool, args, expected in calls:
            result = await client.call_tool(tool, args)
            assert result.is_error, tool
            assert text(result) == f"Error executing tool {tool}: {expected}"

    run_client(mcp_server.build(machine), session)
