"""measure_examples: what it would check (--dry-run, on the CPU), and what it writes back into
the shipped index from the verifier's reports (a scripted GPU stands in for the real one)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from kernelwright.evals import measure_examples
from kernelwright.memory import shipped
from kernelwright.tools.results import CheckReport, DeviceInfo
from kernelwright.tools.task import Candidate, Task
from tests.agent.test_graph import report

H100 = DeviceInfo(
    name="NVIDIA H100 80GB HBM3", arch="sm_90", driver_version="580", memory_total_bytes=80 << 30
)


@pytest.fixture
def index(tmp_path: Path) -> Path:
    """A copy of the shipped set, for the script to write into."""
    shutil.copytree(shipped.index_path().parent, tmp_path / "examples")
    return tmp_path / "examples" / "index.yaml"


def test_dry_run_lists_every_pair_and_writes_nothing(
    index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = index.read_text()
    assert measure_examples.main(["--dry-run", "--index", str(index)]) == 0
    lines = capsys.readouterr().out.splitlines()
    pairs = shipped.read_index(index).pairs
    assert len(lines) == len(pairs) + 1 and lines[-1].startswith(f"{len(pairs)} pair(s) would")
    assert lines[0].startswith(f"{pairs[0].name}: {pairs[0].technique} on examples/{pairs[0].task}")
    kb = next(line for line in lines if line.startswith("relu-mlp-fusion"))
    assert "; checks after (" in kb  # its before is PyTorch eager itself
    assert "gelu_naive.cu (block [256], grid [ceil_div(N, 256)])" in lines[0]
    assert "checks before then after" in lines[0]
    state = lines[0].rsplit("(", 1)[1]
    first = pairs[0]
    assert state == (
        f"measured correct {first.speedup:.2f}x on {first.gpu} {first.measured_on})"
        if first.measured
        else "not measured)"
    )
    assert index.read_text() == before


def test_bad_input_is_one_line(index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert measure_examples.main(["--dry-run", "--index", str(index), "--pairs", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no pair 'nope'" in err
    (index.parent / "gelu_vec4.cu").write_text('extern "C" __global__ void gelu(float* x) {}')
    assert measure_examples.main(["--dry-run", "--index", str(index)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gelu_vec4.cu" in err


class ScriptedGpu:
    """Answers each check with the next report, and keeps what it was asked."""

    def __init__(self, reports: list[CheckReport]) -> None:
        self.reports = reports
        self.asked: list[tuple[Task, Candidate]] = []

    def check(self, task: Task, candidate: Candidate) -> CheckReport:
        self.asked.append((task, candidate))
        return self.reports.pop(0).model_copy(update={"device": H100})

    def profile(self, task: Task, candidate: Candidate) -> Any:
        raise AssertionError("not asked")

    sanitize = profile

    def close(self) -> None:
        pass


def plans_for(index: Path, names: list[str]) -> list[Any]:
    pairs = [p for p in shipped.read_index(index).pairs if p.name in names]
    return [(p, measure_examples.plan(p, index, measure_examples.EXAMPLES)) for p in pairs]


def test_the_after_is_timed_against_the_before_and_written_back(index: Path, nvrtc: None) -> None:
    plans = plans_for(index, ["gelu-vector-access", "rowsum-unroll"])  # in the index's order
    (pair, checks), _ = plans
    task = checks[0][1]
    ok = report(task, "correct", 1.0)
    gpu = ScriptedGpu([ok, report(task, "correct", 1.368), ok, report(task, "correct", 0.967)])
    untouched = next(p for p in shipped.read_index(index).pairs if p.name == "rowsum-coalescing")
    assert measure_examples.measure_all(shipped.read_index(index), plans, index, gpu) == 0
    # the before is checked against the task, the after against the before
    (t1, before), (t2, after) = gpu.asked[:2]
    assert t1.source == task.source and before.source == shipped.source(pair, pair.before, index)
    assert t2.source == before.source and after.source == shipped.source(pair, pair.after, index)
    written = {p.name: p for p in shipped.read_index(index).pairs}
    gelu = written["gelu-vector-access"]
    assert (gelu.measured, gelu.verdict, gelu.speedup) == (True, "correct", 1.368)
    assert (gelu.gpu, gelu.arch) == ("NVIDIA H100 80GB HBM3", "sm_90") and gelu.measured_on
    assert (written["rowsum-unroll"].speedup, written["rowsum-unroll"].shown) == (0.967, True)
    assert written["rowsum-coalescing"] == untouched  # not asked for: left as it was


def test_a_side_that_fails_is_recorded_and_never_shown(index: Path, nvrtc: None) -> None:
    plans = plans_for(index, ["gelu-grid-stride"])
    task = plans[0][1][0][1]
    wrong = report(task, "wrong", None, "output 'y' wrong at 3 of 1,000 elements")
    gpu = ScriptedGpu([report(task, "correct", 1.0), wrong])
    assert measure_examples.measure_all(shipped.read_index(index), plans, index, gpu) == 1
    pair = next(p for p in shipped.read_index(index).pairs if p.name == "gelu-grid-stride")
    assert pair.verdict == "after wrong: output 'y' wrong at 3 of 1,000 elements"
    assert pair.speedup is None and pair.measured and not pair.shown
