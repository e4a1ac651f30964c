"""`kernelwright check` loads what a check needs and not the loop's machinery: LangChain,
Ollama's client, LangGraph and Chroma took 1.9 s of imports here (6 s on a fresh install on the
H100, before Python had cached their bytecode), about a third of a KernelBench check's time
outside the check itself."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES

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
