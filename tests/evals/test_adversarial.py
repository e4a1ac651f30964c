"""The adversarial suite without a GPU: its cases parse, cover every family, load against their
tasks and compile (or fail to, as they say); the controls are the examples' own kernels; a
verdict is judged as the case expects; the command lists the cases."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import pytest
from typer.testing import CliRunner

from kernelwright.agent.best_host import best_host
from kernelwright.evals.adversarial import FAMILIES, load_cases
from kernelwright.evals.adversarial.suite import (
    Case,
    kill_leftovers,
    parse_case,
    speedup_bounds,
    twin_case,
)
from kernelwright.tools.compile import compile_in_sandbox
from kernelwright.tools.cpp import CppTask
from kernelwright.tools.cpp_reference import build_library
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_candidate, load_task
from tests.conftest import EXAMPLES

CASES = load_cases()


def test_at_least_95_cases_covering_every_family() -> None:
    assert len(CASES) >= 95
    assert {c.family for c in CASES} == set(FAMILIES)
    assert len({c.name for c in CASES}) == len(CASES)
    controls = [c for c in CASES if c.family == "controls"]
    assert controls and all(c.verdict == "correct" for c in controls)
    for c in CASES:  # an attack made harmless must show it gained nothing: a bounded speedup
        for verdict, detail in c.answers if c.family != "controls" else ():
            if verdict == "correct":
                assert speedup_bounds(detail)[1] < 1.5, c.name
    assert not any(c.otherwise for c in controls)  # a control passes, and only passes
    assert any(c.detail == "speedup 0.98-1.02" for c in controls)  # a reference vs itself
    both = {c.family for c in CASES if c.task.startswith("kernelbench/")}
    assert both >= {"controls", "output", "input", "precision", "timing", "harness"}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_loads_against_its_task(case: Case) -> None:
    task = load_task(EXAMPLES / case.task)
    candidate = load_candidate(task, case.path)  # the signature check for .cu, ModelNew for .py
    assert candidate.source.startswith(("// expect:", "# expect:"))
    assert case.description and len(case.description) < 140


CUDA_CASES = [c for c in CASES if c.path.suffix == ".cu" and not c.task.startswith("cpp/")]
HOST_CASES = [c for c in CASES if c.path.suffix == ".cu" and c.task.startswith("cpp/")]


@pytest.mark.parametrize("case", CUDA_CASES, ids=lambda c: c.name)
def test_cuda_case_compiles_unless_it_says_it_does_not(case: Case, nvrtc: None) -> None:
    task = load_task(EXAMPLES / case.task)
    assert isinstance(task, CudaTask)
    # through the compile worker, as a check compiles it: only the CUDA headers exist there
    result, cubin = compile_in_sandbox(case.path.read_text(), task.entry, "sm_90")
    if case.verdict == "compile_error":
        assert not result.ok and cubin is None
        reason = f"does not compile: {result.first_error}"  # as the verifier words it
        assert case.detail.lower() in reason.lower(), reason
    else:
        assert result.ok, result.log


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("case", HOST_CASES, ids=lambda c: c.name)
def test_a_drop_in_host_case_builds_with_the_wrapper(case: Case, tmp_path: Path) -> None:
    """A C++ task's drop-in host file, built as a check builds it (nvcc, the wrapper after it
    in one translation unit): no GPU needed to build."""
    task = load_task(EXAMPLES / case.task)
    assert isinstance(task, CppTask)
    built, log = build_library(task, tmp_path, 300.0, case.path.read_text(), "sm_90")
    assert built is not None, log


def test_the_host_control_is_best_host_as_kernelwright_writes_it() -> None:
    case = next(c for c in CASES if c.name == "controls/cpp_host")
    task = load_task(EXAMPLES / "cpp" / "gemv")
    faster = load_candidate(task, EXAMPLES / "cpp" / "gemv" / "candidates" / "faster.cu")
    body = case.path.read_text().split("\n", 2)[2]
    assert body == best_host(task, faster.source, faster.launch)  # type: ignore[arg-type, attr-defined]


CONTROL_COPIES = {
    "controls/gelu_reference": EXAMPLES / "gelu" / "gelu.cu",
    "controls/transpose_faster": EXAMPLES / "transpose" / "candidates" / "faster.cu",
    "controls/matmul_faster": EXAMPLES / "matmul" / "candidates" / "faster.cu",
    "controls/kb_cupy_relu": EXAMPLES / "kernelbench" / "relu_mlp_candidate.py",
    "controls/softmax_faster": EXAMPLES / "softmax" / "candidates" / "faster.cu",
}


@pytest.mark.parametrize("name", sorted(CONTROL_COPIES))
def test_controls_are_the_examples_own_kernels(name: str) -> None:
    case = next(c for c in CASES if c.name == name)
    body = case.path.read_text().split("\n", 2)[2]  # below the two header lines
    assert body == CONTROL_COPIES[name].read_text()
    sidecar = case.path.with_suffix(".toml")  # its launch, as the example's
    if sidecar.is_file():
        assert sidecar.read_text() == CONTROL_COPIES[name].with_suffix(".toml").read_text()


def test_kernelbench_reference_control_is_the_problems_model() -> None:
    case = next(c for c in CASES if c.name == "controls/kb_reference")
    problem = (EXAMPLES / "kernelbench" / "relu_mlp.py").read_text()
    model = problem[problem.index("class Model") : problem.index("def get_inputs")].strip()
    assert model.replace("class Model(", "class ModelNew(") in case.path.read_text()


def _case(verdict: str, detail: str = "") -> Case:
    return Case("x/y", "output", Path("y.cu"), "gelu", verdict, detail, "d")


def test_a_verdict_is_judged_as_the_case_expects() -> None:
    wrong = _case("wrong", "not fully written")
    assert wrong.judge("wrong", "output 'y' NOT fully written: 3 of 9", None) == ""
    assert "reason lacks" in wrong.judge("wrong", "output 'y' wrong at 3 of 9", None)
    assert wrong.judge("correct", "6 trials", 1.0) == "expected wrong, got correct"
    control = _case("correct", "speedup 0.98-1.02")
    assert control.judge("correct", "6 trials", 1.01) == ""
    assert "outside" in control.judge("correct", "6 trials", 1.05)
    assert "outside" in control.judge("correct", "6 trials", None)
    assert _case("correct", "speedup >= 2").judge("correct", "", 6.3) == ""


def _write_case(path: Path, header: str) -> Path:
    """A case file of `header` alone, in its family's folder (made if need be)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header)
    return path


def test_a_case_with_two_safe_answers_takes_either_and_nothing_else(tmp_path: Path) -> None:
    """A randomised forger is caught in some runs and held to its honest speed in the others:
    either answer is safe; a credited speedup, or any third verdict, is still a miss."""
    path = _write_case(
        tmp_path / "harness" / "forger.py",
        "# expect: correct (speedup 0-1.15) or implausible (samples explain) — lies at times\n"
        "# task: kernelbench/relu_mlp.py\n",
    )
    case = parse_case(path)
    assert case.answers == (("correct", "speedup 0-1.15"), ("implausible", "samples explain"))
    assert case.expects == "correct (speedup 0-1.15) or implausible (samples explain)"
    assert case.description == "lies at times"
    assert case.judge("correct", "10 trials", 0.99) == ""
    assert case.judge("implausible", "longer than its samples explain", 0.99) == ""
    assert "outside" in case.judge("correct", "10 trials", 1.6)
    assert "reason lacks" in case.judge("implausible", "a reason of another kind", None)
    assert case.judge("wrong", "y wrong", None) == "expected correct or implausible, got wrong"
    path.write_text("# expect: correct (speedup 0-1.15) or fast — x\n# task: gelu\n")
    with pytest.raises(ValueError, match="unknown verdict 'fast'"):
        parse_case(path)


def test_a_case_held_to_its_twin_reads_no_more_than_a_factor_of_the_twins_speedup(
    tmp_path: Path,
) -> None:
    """An honest drop-in's end-to-end speedup depends on the machine (1.03x to 1.47x across
    seven H100 machines for the same file): a case held to its twin is judged against what the
    twin read on the same machine, not against a fixed band."""
    case = parse_case(
        _write_case(
            tmp_path / "timing" / "macro.cu",
            "// expect: correct (speedup <= 1.25x controls/cpp_host) — a harmless macro\n"
            "// task: cpp/gemv\n",
        )
    )
    assert case.twin == "controls/cpp_host" and speedup_bounds(case.detail) == (0.0, 1.25)
    assert case.judge("correct", "7 trials", 1.47, twin=1.40) == ""  # both fast here
    assert case.judge("correct", "7 trials", 1.02, twin=0.92) == ""
    assert "above 1.25x its twin's 1.000" in case.judge("correct", "7 trials", 1.26, twin=1.0)
    assert "above" in case.judge("correct", "7 trials", None, twin=1.0)
    assert "read no speedup" in case.judge("correct", "7 trials", 1.0, twin=None)
    assert case.judge("wrong", "y differs", None, twin=1.0) == "expected correct, got wrong"
    assert _case("correct", "speedup 0-1.3").twin == ""


def test_the_suites_twins_are_its_controls_and_a_missing_one_is_refused(tmp_path: Path) -> None:
    held = [c for c in CASES if c.twin]
    assert held, "the host clock case is held to its twin"
    for c in held:
        control = twin_case(c)
        assert control is not None and control.name == c.twin and control.family == "controls"
        assert control.verdict == "correct" and control.task == c.task
    for family, text in [
        ("controls", "// expect: correct (speedup >= 0.05) — honest\n// task: gelu\n"),
        ("timing", "// expect: correct (speedup <= 1.2x controls/nope) — held\n// task: gelu\n"),
    ]:
        _write_case(tmp_path / family / "x.cu", text)
    with pytest.raises(ValueError, match="its twin controls/nope is not a control"):
        load_cases(tmp_path)


def test_a_case_with_a_twin_has_its_twin_checked_first_on_the_same_verifier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernelwright.evals.adversarial import suite

    case = next(c for c in CASES if c.twin)
    checked: list[str] = []
    reads = {"controls/cpp_host": 1.40, case.name: 1.47}

    class Fake:
        def check(self, task: Any, candidate: Any) -> Any:
            name = next(c.name for c in CASES if c.path.read_text() == candidate.source)
            checked.append(name)
            timing = MagicMock(speedup=reads[name], unexplained_us=None, charged_us=0.0,
                               unexplained_spread_us=())  # fmt: skip
            timing.reference.median_ms, timing.candidate.median_ms = 50.0, 50.0 / reads[name]
            report = MagicMock(verdict="correct", reason="7 trials", timing=timing)
            report.model_dump_json.return_value = "{}"
            return report

    monkeypatch.setattr(suite, "kill_leftovers", lambda: [])
    result = suite.run_case(Fake(), case)  # type: ignore[arg-type]
    assert checked == ["controls/cpp_host", case.name]
    assert result.ok, result.problem
    row = result.as_dict()
    assert (row["twin"], row["twin_speedup"], row["twin_verdict"]) == (
        "controls/cpp_host", 1.40, "correct",
    )  # fmt: skip
    reads["controls/cpp_host"] = 1.0  # the same case read against a slower twin: a miss
    assert "above 1.25x its twin's" in suite.run_case(Fake(), case).problem  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "header",
    [
        "// expect: wrongish — a verdict that does not exist\n// task: gelu\n",
        "// expect wrong — no colon\n// task: gelu\n",
        "// expect: wrong — no task line\nint x;\n",
        "// expect: correct (speedup fast) — a bound that is not one\n// task: gelu\n",
        "// expect: wrong or (racecheck) — an 'or' with no verdict after it\n// task: gelu\n",
        "// expect: wrong or implausible or — a trailing 'or'\n// task: gelu\n",
    ],
)
def test_a_bad_header_says_what_is_wrong(header: str, tmp_path: Path) -> None:
    path = tmp_path / "output" / "bad.cu"
    path.parent.mkdir()
    path.write_text(header)
    with pytest.raises(ValueError, match=r"bad\.cu|speedup"):
        parse_case(path)


def test_a_process_left_behind_is_found_and_killed() -> None:
    mark = f"kw-test-leftover-{time.monotonic_ns()}"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", mark])
    try:
        deadline = time.monotonic() + 10  # its command line names the mark once it has exec'd
        while mark.encode() not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert kill_leftovers(mark.encode(), grace_s=0.2) == [proc.pid]
        assert proc.wait(timeout=5) < 0
    finally:
        proc.kill()


def test_eval_adversarial_lists_the_cases_without_a_gpu() -> None:
    from kernelwright.agent.doors.cli import app

    runner = CliRunner()
    result = runner.invoke(app, ["eval", "adversarial", "--list", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert len(rows) == len(CASES) and {r["family"] for r in rows} == set(FAMILIES)
    only = runner.invoke(app, ["eval", "adversarial", "--list", "--json", "--only", "harness/*"])
    assert {r["family"] for r in json.loads(only.output)} == {"harness"}
    none = runner.invoke(app, ["eval", "adversarial", "--only", "no-such-case"])
    assert none.exit_code == 2


def test_eval_adversarial_without_the_examples_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from kernelwright.agent.doors.cli import app
    from kernelwright.evals.adversarial import suite

    monkeypatch.setattr(suite, "examples_dir", lambda: tmp_path / "missing")
    result = CliRunner().invoke(app, ["eval", "adversarial"])
    assert result.exit_code == 2
    assert "which this install lacks: run it from a clone" in result.output
    assert "Traceback" not in result.output


def test_eval_adversarial_logs_each_case_as_it_ends(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """--log keeps one line per finished case, so a run cut short keeps what it did."""
    from kernelwright.agent.doors.cli import app
    from kernelwright.evals.adversarial import suite
    from kernelwright.tools import nvml

    def fake_suite(cases: list[Case], progress: Any = None, **_: Any) -> list[Any]:
        done = []
        for i, case in enumerate(cases[:2]):
            progress(i, case, None)
            verdict = "correct" if i == 0 else "error"
            result = suite.CaseResult(
                case, verdict, "why", None, 0.5, case.judge(verdict, "", None)
            )
            done.append(result)
            progress(i, case, result)
        return done

    monkeypatch.setattr(nvml, "device_info", lambda *a: None)
    monkeypatch.setattr(suite, "run_suite", fake_suite)
    log = tmp_path / "cases.jsonl"
    result = CliRunner().invoke(
        app, ["eval", "adversarial", "--only", "controls/*", "--log", str(log), "--json"]
    )
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["run"], r["got"]) for r in lines] == [(1, "correct"), (1, "error")]
    assert lines[1]["ok"] is False and result.exit_code == 1
