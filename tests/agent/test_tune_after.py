"""The tune after `optimize` (on by default; `--no-tune` and the settings turn it off): the run's
best kernel tuned through the same verifier, the winner's options and launch in best.toml, what
was tried in tune.json, the summary and the end of `kernelwright optimize`; chat keeps the
tuned sidecar with the kernel. No GPU: the loop's checks are replayed, the tune's answered from
the kernel's knobs; the builds are real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kernelwright.agent.doors import jobs
from kernelwright.agent.doors.cli import app
from kernelwright.agent.llm import ScriptedLLM
from kernelwright.agent.nodes.common import as_candidate
from kernelwright.agent.optimize import optimize
from kernelwright.agent.settings import Settings
from kernelwright.tools.backend import ReplayGpu, candidate_key
from kernelwright.tools.knobs import knob_values
from kernelwright.tools.results import CheckReport
from kernelwright.tools.spec import CompileOptions, CudaTask
from kernelwright.tools.task import load_candidate, load_task, reference_candidate
from tests.agent.test_graph import FASTER, FASTER_LAUNCH, GELU, reply, report


class TuningReplay(ReplayGpu):
    """The loop's checks replayed; a configuration of the faster kernel that the recording
    lacks (the tune's) answered from its ITEMS knob: 2 float4s per thread are 10% faster."""

    def __init__(self, task: CudaTask, start: float = 1.3) -> None:
        super().__init__()
        self.add(task, reference_candidate(task), report(task, "correct", 1.0))
        self.add(task, as_candidate(task, FASTER, FASTER_LAUNCH), report(task, "correct", start))
        self.tuned: list[CompileOptions] = []

    def check(self, task: Any, candidate: Any) -> CheckReport:
        if candidate_key(task, candidate) in self.checks or candidate.source != FASTER:
            return super().check(task, candidate)
        self.tuned.append(candidate.options)
        items = knob_values(candidate.source, candidate.options.defines)["ITEMS"]
        speed = 1.3 * (1.1 if items == 2 else 0.95)
        r = report(task, "correct", speed)
        assert r.timing is not None
        return r.model_copy(update={"timing": r.timing.model_copy(update={"speedup_iqr": 0.01})})


@pytest.fixture
def gelu(nvrtc: None) -> CudaTask:
    task = load_task(GELU)
    assert isinstance(task, CudaTask)
    return task


def run(tmp_path: Path, gpu: ReplayGpu, **kw: Any) -> tuple[dict[str, Any], Any]:
    model = ScriptedLLM([reply(FASTER, FASTER_LAUNCH, ["vector-access-16b"]), "Vectors."])
    settings = Settings(data_dir=tmp_path / "data", cache_dir=tmp_path / "cache")
    # 8 checks, 32 builds at most: the search (seeded) reaches ITEMS=2 among the first
    tune = settings.tune.model_copy(update={"budget": 8})
    settings = settings.model_copy(update={"tune": tune})
    return optimize(GELU, settings, model=model, gpu=gpu, arch="sm_90", budget=1, **kw)


def test_the_best_kernel_is_tuned_after_the_run_and_its_configuration_kept(
    tmp_path: Path, gelu: CudaTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KERNELWRIGHT_TUNE__ENABLED")  # the default: on
    gpu = TuningReplay(gelu)
    out, rundir = run(tmp_path, gpu)
    assert out["best_speedup"] == pytest.approx(1.3)  # the loop's own best, as it measured it
    tuned = out["tune"]
    assert tuned["improved"] and tuned["best"] == "ITEMS=2"
    assert tuned["gain"] == pytest.approx(1.1)
    assert gpu.tuned and all(o.defines != (("BLOCK", 128),) for o in gpu.tuned)  # a no-op
    # best.cu with best.toml is the tuned kernel: its launch, and the option that won
    best = load_candidate(gelu, rundir.path / "best.cu")
    assert best.options == CompileOptions(defines=(("ITEMS", 2),))
    assert best.launch is not None and best.launch.grid == ("ceil_div(N, 1024)",)
    assert json.loads((rundir.path / "tune.json").read_text()) == tuned
    summary = (rundir.path / "summary.md").read_text()
    assert "## Tune" in summary and "1.100x over the kernel as given with ITEMS=2" in summary
    assert "| ITEMS=2 | correct |" in summary
    assert "- numerics not tried: not asked for (--numerics" in summary  # off by default: said
    outcome = jobs.outcome_of(rundir.path)  # a door reads it back from the run directory
    assert outcome.tune == tuned


def test_no_tune_leaves_the_best_kernel_as_the_loop_found_it(
    tmp_path: Path, gelu: CudaTask
) -> None:
    gpu = TuningReplay(gelu)
    out, rundir = run(tmp_path, gpu, tune=False)
    assert "tune" not in out and not gpu.tuned
    assert not (rundir.path / "tune.json").exists()
    assert "[compile]" not in (rundir.path / "best.toml").read_text()
    assert jobs.outcome_of(rundir.path).tune is None
    _, again = run(tmp_path / "off", TuningReplay(gelu))  # the settings say off (conftest)
    assert not (again.path / "tune.json").exists()


def test_a_best_kernel_that_cannot_be_tuned_says_why_and_the_run_keeps_its_best(
    tmp_path: Path, gelu: CudaTask
) -> None:
    # the re-check of the best kernel disagrees with the loop's: no tune, nothing lost
    out, rundir = run(tmp_path, _Flaky(gelu), tune=True)
    assert "only a correct kernel is tuned" in out["tune"]["error"]
    assert (rundir.path / "best.cu").read_text() == FASTER
    assert "not tuned: only a correct kernel is tuned" in (rundir.path / "summary.md").read_text()


class _Flaky(TuningReplay):
    """The loop's check of the faster kernel passes; its re-check after the run does not."""

    def __init__(self, task: CudaTask) -> None:
        super().__init__(task)
        self.seen = 0

    def check(self, task: Any, candidate: Any) -> CheckReport:
        if candidate.source == FASTER:
            self.seen += 1
            if self.seen > 1:
                return report(task, "wrong", None, "output 'y' wrong at 3 elements")
        return super().check(task, candidate)


def test_optimize_prints_what_the_tune_tried_and_passes_no_tune(
    tmp_path: Path, gelu: CudaTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, Any]] = []
    tuned = {
        "start": "defaults",
        "start_speedup": 1.3,
        "best": "ITEMS=2",
        "best_speedup": 1.43,
        "gain": 1.1,
        "improved": True,
        "written": None,
        "tried": [
            {
                "config": "ITEMS=2",
                "verdict": "correct",
                "speedup": 1.43,
                "speedup_iqr": 0.01,
                "gain": 1.1,
                "kept": True,
                "reason": "",
            }
        ],
        "dropped": [],
        "left_unchecked": 3,
        "remembered": 0,
        "seconds": 4.0,
    }

    def fake(machine: Any, task: Path, **kw: Any) -> jobs.RunOutcome:
        seen.append(kw)
        return jobs.RunOutcome(
            "gelu",
            tmp_path,
            True,
            "budget",
            [],
            FASTER,
            None,
            1.3,
            [],
            tuned if kw["tune"] is None else None,
        )

    monkeypatch.setattr(jobs, "optimize", fake)
    (tmp_path / "config.toml").touch()
    env = {"KERNELWRIGHT_CONFIG": str(tmp_path / "config.toml")}
    shown = CliRunner().invoke(app, ["optimize", str(GELU)], env=env)
    assert shown.exit_code == 0, shown.output
    assert "Tuning the best kernel" in shown.stdout and "ITEMS=2" in shown.stdout
    assert "tune: 1.100x over the kernel as given with ITEMS=2" in shown.stdout
    off = CliRunner().invoke(app, ["optimize", str(GELU), "--no-tune", "--json"], env=env)
    assert off.exit_code == 0, off.output
    assert [k["tune"] for k in seen] == [None, False] and json.loads(off.stdout)["tune"] is None


def test_chat_keeps_the_tuned_options_with_the_kernel_it_accepts(
    tmp_path: Path, gelu: CudaTask
) -> None:
    import shutil

    from rich.console import Console

    from kernelwright.agent.doors.chat import ChatSession

    shutil.copytree(GELU, tmp_path / "gelu")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # the loop's best was the original (no launch of its own); the tune found an option for it
    (run_dir / "best.cu").write_text(gelu.source)
    (run_dir / "best.toml").write_text("[compile]\nmaxrregcount = 64\n")
    settings = Settings(data_dir=tmp_path / "data")
    session = ChatSession(jobs.Machine(settings, gpu=ReplayGpu()), Console(), lambda q: True)
    session.load(str(tmp_path / "gelu"))
    source = gelu.source + "// tuned\n"
    session.best = jobs.RunOutcome("gelu", run_dir, True, "budget", [], source, None, 1.2, [])
    session.accept()
    kept = tmp_path / "gelu" / "gelu.best.toml"
    assert kept.read_text() == "[compile]\nmaxrregcount = 64\n"
    task = load_task(tmp_path / "gelu")
    assert load_candidate(task, tmp_path / "gelu" / "gelu.best.cu").options.maxrregcount == 64
