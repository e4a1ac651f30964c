"""The C++ task kind end to end on a real GPU (issue 14): each of the six examples/cpp checked
with its naive port, a better kernel and a wrong one against its C++ function (three labelled
speedups), the function itself on one core, a port that disagrees with the function refused,
best_host.cu built with nvcc and checked end to end, and the loop with a scripted proposer
porting, rejecting and optimizing."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelwright.agent.best_host import best_host
from kernelwright.agent.llm import ScriptedLLM
from kernelwright.agent.optimize import optimize
from kernelwright.agent.settings import Settings
from kernelwright.tools.cpp import CppTask
from kernelwright.tools.cpp_candidates import HostFile
from kernelwright.tools.task import load_candidate
from kernelwright.tools.verify import Verifier, VerifyOptions
from tests.conftest import EXAMPLES, proposed_launch
from tests.tools.test_cpp_examples import NAMES, example

pytestmark = pytest.mark.gpu

CPP = EXAMPLES / "cpp"
# What the better kernel must gain over the naive port, paired on the GPU: clear room where the
# port is poor (uncoalesced rows, contended atomics, one chunk a thread), little where it is
# already near the memory's bandwidth (axpy, jacobi2d: there it must not be slower).
GAIN = {
    "axpy": 0.9,
    "gemv": 3.0,
    "histogram": 2.0,
    "prefix_sum": 1.5,
    "jacobi2d": 0.9,
    "minmax": 3.0,
}


@pytest.fixture(scope="module")
def verifier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Verifier]:
    cache = tmp_path_factory.mktemp("cpp-cache")
    with Verifier(VerifyOptions(prestart=True, reference_cache_dir=str(cache))) as v:
        yield v


def _candidate(task: CppTask, which: str) -> object:
    return load_candidate(task, Path(task.path).parent / "candidates" / f"{which}.cu")


@pytest.mark.parametrize("name", NAMES)
def test_a_port_a_better_kernel_and_a_wrong_one(name: str, verifier: Verifier) -> None:
    task = example(name)
    port = verifier.check(task, _candidate(task, "port"))  # type: ignore[arg-type]
    assert port.verdict == "correct", port.reason
    assert port.check is not None and port.check.reference == "C++ reference"
    assert any(t.held_out for t in port.check.trials)
    s = port.speedups
    assert s is not None and s.cpu_core and s.cpu_ms and s.end_to_end and s.copies_ms
    assert port.timing is not None and port.timing.speedup == pytest.approx(s.cpu_core)
    assert port.timing.reference.median_ms == pytest.approx(s.cpu_ms)  # against the C++ function
    assert s.port == pytest.approx(1.0, abs=0.05), "the port beside itself"
    assert "the task's port (port.cu)" in s.port_is
    assert s.end_to_end < s.cpu_core  # the copies cost something

    better = verifier.check(task, _candidate(task, "faster"))  # type: ignore[arg-type]
    assert better.verdict == "correct", better.reason
    assert better.speedups is not None and better.speedups.port is not None
    assert better.speedups.port > GAIN[name], better.speedups
    wrong = verifier.check(task, _candidate(task, "wrong"))  # type: ignore[arg-type]
    assert wrong.verdict == "wrong", wrong.reason
    print(
        f"{name}: port {s.cpu_core:.1f}x one core, {s.end_to_end:.2f}x end to end; better "
        f"{better.speedups.port:.2f}x the port ({better.speedups.cpu_core:.1f}x one core); "
        f"wrong: {wrong.reason}"
    )


def test_the_function_itself_runs_on_one_core_against_itself(verifier: Verifier) -> None:
    task = example("gemv")
    report = verifier.check(task, task.reference_candidate())
    assert report.verdict == "correct", report.reason
    assert report.timing is not None and report.timing.speedup == 1.0
    assert report.timing.reference.samples >= 3 and report.speedups is not None
    assert report.speedups.cpu_ms == pytest.approx(report.timing.reference.median_ms)


def test_a_port_that_disagrees_with_the_function_is_an_error(
    tmp_path: Path, verifier: Verifier
) -> None:
    """The GPU-side reference is checked against the C++ function in every check: a wrong port
    would make every kernel timed beside it look wrong (or right) in the timed calls."""
    copy = tmp_path / "gemv"
    shutil.copytree(CPP / "gemv", copy)
    spec = copy / "gemv.toml"
    spec.write_text(spec.read_text().replace("candidates/port.cu", "candidates/wrong.cu"))
    task = example("gemv", tmp_path)
    report = verifier.check(task, _candidate(task, "faster"))  # type: ignore[arg-type]
    assert report.verdict == "error"
    assert "the task's port (wrong.cu) disagrees with the C++ function" in report.reason


def test_a_kernel_with_no_port_yet_is_audited_and_an_honest_one_passes(
    tmp_path: Path, verifier: Verifier
) -> None:
    """With no port, the kernel is timed beside itself and a few of its timed calls are held
    to the C++ function afterwards (cpp_check.CppReference.audit): an honest kernel passes on
    the GPU's own sketches, the NumPy sketch of the function's outputs agreeing with them."""
    copy = tmp_path / "histogram"
    shutil.copytree(CPP / "histogram", copy)
    spec = copy / "histogram.toml"
    spec.write_text("\n".join(ln for ln in spec.read_text().splitlines() if "port =" not in ln))
    task = example("histogram", tmp_path)
    assert task.port() is None
    report = verifier.check(task, _candidate(task, "faster"))  # type: ignore[arg-type]
    assert report.verdict == "correct", report.reason
    assert report.speedups is not None and "itself" in report.speedups.port_is


@pytest.mark.parametrize("name", NAMES)
def test_best_host_is_the_function_end_to_end(
    name: str, tmp_path: Path, verifier: Verifier
) -> None:
    task = example(name)
    better = _candidate(task, "faster")
    path = tmp_path / "best_host.cu"
    path.write_text(best_host(task, better.source, better.launch))  # type: ignore[attr-defined]
    host = load_candidate(task, path)
    assert isinstance(host, HostFile)
    report = verifier.check(task, host)
    assert report.verdict == "correct", report.reason
    s = report.speedups
    assert s is not None and s.end_to_end_measured and s.end_to_end and s.end_to_end_ms
    assert s.cpu_ms == pytest.approx(report.timing.reference.median_ms)  # type: ignore[union-attr]
    print(f"{name}: best_host.cu {s.end_to_end_ms:.3f} ms, {s.end_to_end:.2f}x end to end")


def _reply(path: Path, tags: list[str]) -> str:
    meta: dict[str, object] = {"tags": tags, "rationale": "hand-written"}
    if (launch := proposed_launch(path)) is not None:
        meta["launch"] = launch
    return f"```cuda\n{path.read_text()}\n```\n```json\n{json.dumps(meta)}\n```\n"


@pytest.mark.parametrize("name", NAMES)
def test_the_loop_ports_rejects_and_optimizes(name: str, tmp_path: Path) -> None:
    """Without a port of its own, the run's first correct kernel is the GPU-side reference."""
    copy = tmp_path / name
    shutil.copytree(CPP / name, copy)
    spec = next(copy.glob("*.toml"))
    spec.write_text("\n".join(ln for ln in spec.read_text().splitlines() if "port =" not in ln))
    given = copy / "candidates"
    model = ScriptedLLM(
        [
            _reply(given / "port.cu", ["port"]),
            "Ported.",
            _reply(given / "wrong.cu", ["coalescing"]),
            "It is wrong.",
            _reply(given / "faster.cu", ["shared-memory tiling"]),
            "It is faster.",
        ]
    )
    settings = Settings(data_dir=tmp_path / "data")
    out, run = optimize(copy, settings, model=model, budget=3, plateau=5, memory=False)
    port, wrong, better = out["attempts"]
    # kept where faster than one core (prefix_sum's naive port is not: it is ported again)
    assert port.verdict == "correct" and port.kept == (port.speedup > 1.005)
    assert wrong.verdict == "wrong" and not wrong.kept
    assert better.verdict == "correct" and better.kept, better.reason
    summary = (run.path / "summary.md").read_text()
    for label in (
        "vs one core",
        "end to end",
        "vs first port",
        "the first correct port (attempt 1)",
    ):
        assert label in summary, summary
    assert "best_host.cu: " in summary and "to end: correct" in summary, summary
    host = (run.path / "best_host.cu").read_text()
    assert host.startswith("// kernelwright: drop-in host function")
    print(summary)
