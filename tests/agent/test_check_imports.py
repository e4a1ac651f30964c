"""`kernelwright check` loads what a check needs and not the loop's machinery: LangChain,
Ollama's client, LangGraph and Chroma took 1.9 s of imports here (6 s on a fresh install on the
H100, before Python had cached their bytecode), about a third of a KernelBench check's time
outside the check itself."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES, HAS_GPU

HEAVY = ("chromadb", "langchain_core", "langchain_ollama", "langgraph", "ollama")

PROBE = """
import atexit, sys
heavy = {heavy!r}
def report():
    print("HEAVY", sorted({{m.split(".")[0] for m in sys.modules}} & set(heavy)), flush=True)
atexit.register(report)
sys.argv = ["kernelwright", *{argv!r}]
from kernelwright.agent.doors.cli import main
main()
"""


def _loaded(*argv: str) -> tuple[str, str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY, argv=list(argv))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("HEAVY"))
    return line.removeprefix("HEAVY "), out.stdout + out.stderr


@pytest.mark.parametrize(
    "task, candidate",
    [
        ("gelu/gelu.toml", "gelu/candidates/faster.cu"),
        ("kernelbench/relu_mlp.py", "kernelbench/relu_mlp_candidate.py"),
    ],
)
def test_a_check_loads_none_of_the_loops_libraries(task: str, candidate: str) -> None:
    loaded, said = _loaded("check", str(EXAMPLES / task), str(EXAMPLES / candidate), "--json")
    assert loaded == "[]", said
    # it got as far as a verdict, or (in CI) to the GPU it lacks
    assert '"verdict"' in said or "no NVIDIA GPU here" in said, said


def test_the_probe_sees_them_when_they_load() -> None:
    """The same probe on `memory stats`, which opens Chroma: it would say so."""
    loaded, said = _loaded("memory", "stats")
    assert "chromadb" in loaded, said


HEAD = """
import sys
from kernelwright.agent import options
class Head:
    def close(self):
        print("CLOSED", flush=True)
def head_start(settings, task, *, prestart=False):
    late = {late!r}
    print("HEAD", task.name, prestart, sorted(m for m in late if m in sys.modules), flush=True)
    return Head()
options.head_start = head_start
sys.argv = ["kernelwright", *{argv!r}]
from kernelwright.agent.doors.cli import main
main()
"""
LATE = ("kernelwright.tools.verify", "kernelwright.tools.task", "kernelwright.agent.doors.jobs")


def _head(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HEAD.format(late=LATE, argv=list(argv))],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_check_starts_its_workers_before_it_imports_the_verifier_or_loads_the_task() -> None:
    """Its workers import PyTorch for seconds; this process's own imports and the task's
    loading go on meanwhile. A task that does not load still gets its one-line error, and
    the workers started for it are stopped."""
    out = _head("check", "no/such/problem.py")
    assert out.stdout.splitlines() == ["HEAD problem.py False []", "CLOSED"], out
    assert out.returncode == 2 and "no/such/problem.py" in out.stderr, out.stderr


@pytest.mark.skipif(HAS_GPU, reason="on a GPU the verifier would take the stand-in as its pool")
def test_workers_started_early_stop_when_there_is_no_gpu_to_hand_them_to() -> None:
    out = _head("check", str(EXAMPLES / "gelu" / "gelu.toml"), "--json")
    assert out.stdout.splitlines() == ["HEAD gelu.toml False []", "CLOSED"], out
    assert "no NVIDIA GPU here" in out.stderr, out.stderr
