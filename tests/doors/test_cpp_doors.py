"""The doors take a C++ task wherever they take a task path (no GPU: reports replayed): a batch
finds it, chat loads and measures it, MCP checks a kernel for it, and `check` prints its three
speedups, each labelled."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kernelwright.agent.doors import jobs, mcp_server
from kernelwright.agent.doors.batch import discover
from kernelwright.agent.doors.chat import ChatSession
from kernelwright.agent.doors.cli import _speedup_rows
from kernelwright.agent.llm import ScriptedLLM
from kernelwright.agent.settings import Settings
from kernelwright.tools.backend import ReplayGpu
from kernelwright.tools.cpp import CppTask
from kernelwright.tools.results import CheckReport, Speedups
from kernelwright.tools.task import load_candidate, load_task
from tests.agent.test_graph_cpp import report
from tests.conftest import EXAMPLES
from tests.doors.test_mcp import run_client, text

CPP = EXAMPLES / "cpp"


def _hist() -> CppTask:
    task = load_task(CPP / "histogram")
    assert isinstance(task, CppTask)
    return task


def test_a_batch_finds_cpp_tasks_and_passes_over_their_candidates(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    shutil.copytree(CPP / "histogram", root / "histogram")
    shutil.copytree(EXAMPLES / "gelu", root / "gelu")
    (root / "histogram" / "inputs.py").write_text("def make(np, rng, sizes):\n    return {}\n")
    found, skipped = discover(root)
    assert [(f.id, f.kind) for f in found] == [("gelu", "cuda"), ("histogram", "cpp")]
    why = {p.relative_to(root).as_posix(): r for p, r in ((s.path, s.reason) for s in skipped)}
    assert why["histogram/candidates"] == "a candidates folder"
    assert why["histogram/inputs.py"].startswith("not a KernelBench problem")


def test_chat_loads_and_measures_a_cpp_task(tmp_path: Path) -> None:
    task = _hist()
    gpu = ReplayGpu()
    gpu.add(task, task.reference_candidate(), report(task, "correct", 1.0))
    buf = io.StringIO()
    machine = jobs.Machine(
        Settings(data_dir=tmp_path / "data"), gpu=gpu, model=ScriptedLLM(), arch="sm_90"
    )
    chat = ChatSession(machine, Console(file=buf, width=200), confirm=lambda q: False)
    chat.handle(f"/load {CPP / 'histogram'}")
    chat.handle("/profile")
    said = buf.getvalue()
    assert "loaded histogram: histogram.cpp, histogram(const std::vector<int>& pixels" in said
    assert "optimize ports it to CUDA first" in said
    assert "time: 6.6000 ms" in said  # the function itself, on one core


def test_mcp_checks_a_kernel_for_a_cpp_task(tmp_path: Path, nvrtc: None) -> None:
    task = _hist()
    faster = load_candidate(task, CPP / "histogram" / "candidates" / "faster.cu")
    gpu = ReplayGpu()
    gpu.add(task, faster, report(task, "correct", 95.0, port=11.9))
    machine = jobs.Machine(
        Settings(data_dir=tmp_path / "data"), gpu=gpu, model=ScriptedLLM(), arch="sm_90"
    )
    server = mcp_server.build(machine)
    path = CPP / "histogram" / "candidates" / "faster.cu"

    async def session(client: object) -> None:
        result = await client.call_tool(  # type: ignore[attr-defined]
            "check_kernel", {"task": str(CPP / "histogram"), "candidate": str(path)}
        )
        assert not result.is_error, text(result)
        answer = result.structured_content
        assert answer["verdict"] == "correct" and answer["speedup"] == 95.0
        assert answer["report"]["speedups"]["port"] == 11.9

    run_client(server, session)


def test_check_prints_the_three_speedups_each_labelled() -> None:
    s = Speedups(
        cpu_core=95.0, cpu_ms=6.6, cpu_samples=9, end_to_end=0.55, end_to_end_ms=12.0,
        copies_ms=11.93, port=11.9, port_iqr=0.02, port_is="the task's port (port.cu)",
    )  # fmt: skip
    table = Table()
    table.add_column()
    table.add_column()
    _speedup_rows(table, s)
    buf = io.StringIO()
    Console(file=buf, width=300).print(table)
    printed = buf.getvalue()
    assert "vs one core" in printed and "95.00x against the C++ function on one core" in printed
    assert "0.55x with the copies" in printed and "below 1x" in printed
    assert "11.90x (IQR 0.020) against the task's port (port.cu)" in printed
    dumped = json.loads(CheckReport(task="t", candidate="c", verdict="correct", reason="",
                                    speedups=s).model_dump_json())  # fmt: skip
    assert dumped["speedups"]["end_to_end"] == 0.55  # and in --json
