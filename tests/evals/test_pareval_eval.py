"""`kernelwright eval pareval`: ParEval's figures against hand-computed cases, the clone's
problems imported with their types (tests/fixtures/pareval_fake), and the command end to end
on the CPU: the real batch over the imported problems with scripted replies (one a real
kernel, compiled), the checks replayed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelwright.agent.best_host import best_host
from kernelwright.agent.doors.cli_eval import run_pareval_command
from kernelwright.agent.kinds import as_candidate
from kernelwright.agent.llm import ScriptedLLM
from kernelwright.evals import pareval_run
from kernelwright.evals.pareval_score import NOT_BUILT, Outcome, Sample, by_type
from kernelwright.tools.backend import ReplayGpu
from kernelwright.tools.cpp import CppTask
from kernelwright.tools.cpp_candidates import CppKernel, HostFile
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.task import load_task
from tests.agent.test_graph_cpp import report
from tests.conftest import FIXTURES

FAKE = FIXTURES / "pareval_fake"


def test_figures_by_type_as_parevals_k1_and_the_runs_best() -> None:
    a = Outcome("a", "reduce", (Sample("correct", 2.0), Sample("wrong"), Sample("compile_error")))
    b = Outcome("b", "reduce", (Sample("correct", 4.0), Sample("correct", 1.0)))
    c = Outcome("c", "graph", ())  # its run never checked a kernel: failed, still counted
    d = Outcome("d", "graph", (Sample("compile_error"), Sample("error")))
    table = by_type([a, b, c, d])
    assert list(table) == ["graph", "reduce", "all"]
    r, g, every = table["reduce"], table["graph"], table["all"]
    assert (r.problems, r.samples) == (2, 5)
    assert r.build_at_1 == pytest.approx((2 / 3 + 1) / 2)
    assert r.pass_at_1 == pytest.approx((1 / 3 + 1) / 2)
    assert r.speedup_at_1 == pytest.approx((2.0 + 2.5) / 2)  # each problem's mean, then theirs
    assert (r.pass_at_n, r.speedup_at_n) == (1.0, pytest.approx(3.0))  # bests 2.0 and 4.0
    assert (g.build_at_1, g.pass_at_1, g.speedup_at_1, g.pass_at_n) == (0.0, 0.0, None, 0.0)
    assert every.build_at_1 == pytest.approx((2 / 3 + 1 + 0 + 0) / 4)
    assert every.pass_at_1 == pytest.approx((1 / 3 + 1) / 4)
    assert every.speedup_at_1 == pytest.approx(2.25)  # over the problems with a correct kernel
    assert (every.pass_at_n, every.samples) == (0.5, 7)
    assert "error" in NOT_BUILT and "wrong" not in NOT_BUILT


def test_the_clones_problems_are_imported_with_their_types(tmp_path: Path) -> None:
    data = pareval_run.prepare(FAKE, tmp_path / "all")
    assert [(p["name"], p["type"]) for p in data["problems"]] == [
        ("00_transform_scale_from", "transform"),
        ("01_histogram_parity_counts", "histogram"),
        ("02_graph_max_degree", "graph"),
    ]
    assert [s["name"] for s in data["skipped"]] == ["03_geometry_farthest_point"]
    assert sorted(p.name for p in (tmp_path / "all" / "problems").iterdir()) == [
        p["name"] for p in data["problems"]
    ]
    assert json.loads((tmp_path / "all" / pareval_run.IMPORTED).read_text()) == data
    assert [p.name for p in (tmp_path / "all").iterdir() if p.name.startswith("kw-")] == []
    one = pareval_run.prepare(FAKE, tmp_path / "one", ["02_graph_max_degree"])
    assert [p["name"] for p in one["problems"]] == ["02_graph_max_degree"]
    with pytest.raises(KernelwrightError, match="nope: no such problem"):
        pareval_run.prepare(FAKE, tmp_path / "bad", ["nope"])
    with pytest.raises(KernelwrightError, match=r"03_geometry_farthest_point: skipped \("):
        pareval_run.prepare(FAKE, tmp_path / "bad2", ["03_geometry_farthest_point"])


PORT = """extern "C" __global__ void scaleFrom(double alpha, double* x, int start, long long N)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= start && i < N) {
        x[i] *= alpha;
    }
}
"""


def test_the_command_runs_the_batch_and_scores_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nvrtc: None
) -> None:
    """The real batch over the three imported problems, each given one kernel: a port of
    scaleFrom (compiled; its check replayed as correct at 3x one core), and replies that hold
    no kernel for the other two (nothing built). --json prints pareval.json alone; a second
    run into the same folder is refused."""
    out = tmp_path / "run"
    pareval_run.prepare(FAKE, out)
    gpu = ReplayGpu()
    for folder in sorted((out / "problems").iterdir()):
        task = load_task(folder)
        assert isinstance(task, CppTask)
        gpu.add(task, task.reference_candidate(), report(task, "correct", 1.0))
        if task.function == "scaleFrom":
            made = as_candidate(task, PORT, None)
            kernel = CppKernel(path="c.cu", source=made.source, launch=made.launch)
            gpu.add(task, kernel, report(task, "correct", 3.0, port=1.0))
            host = HostFile(path="best_host.cu", source=best_host(task, PORT, None))
            gpu.add(task, host, report(task, "correct", 0.5, end_to_end=0.5))
    reply = f"```cuda\n{PORT}```\n```json\n{json.dumps({'tags': ['port']})}\n```\n"
    # the batch runs the problems in name order: scaleFrom's port first, then words only
    model = ScriptedLLM([reply, "Ported.", *["I would rather not write code."] * 30])
    kw = {"model": model, "gpu": gpu, "loop": {"memory": False, "tune": False}}
    code = run_pareval_command(FAKE, out, resume=True, as_json=True, budget=1, **kw)
    assert code == 0
    printed = json.loads(capsys.readouterr().out)  # stdout is the JSON alone
    assert printed == json.loads((out / "pareval.json").read_text())
    samples = {p["name"]: p["samples"] for p in printed["problems"]}
    assert samples["00_transform_scale_from"] == [{"verdict": "correct", "speedup": 3.0}]
    for name in ("01_histogram_parity_counts", "02_graph_max_degree"):
        assert samples[name] and all(s["verdict"] in NOT_BUILT for s in samples[name])
    figures = printed["figures"]
    assert figures["transform"]["pass_at_1"] == 1.0 and figures["graph"]["build_at_1"] == 0.0
    every = figures["all"]
    assert every["problems"] == 3 and every["pass_at_n"] == pytest.approx(1 / 3)
    assert every["speedup_at_1"] == every["speedup_at_n"] == 3.0
    assert (
        "| transform | 1 | 1 | 100% | 100% | 3.00x | 100% | 3.00x |"
        in (out / "pareval.md").read_text()
    )
    assert run_pareval_command(FAKE, out, **kw) == 2
    assert "already holds a ParEval run" in capsys.readouterr().err
    assert run_pareval_command(FAKE, tmp_path / "none", resume=True, **kw) == 2
    assert run_pareval_command(tmp_path, tmp_path / "x", **kw) == 2  # not a clone
    assert not (tmp_path / "x").exists()


def test_a_missing_model_is_one_line_and_leaves_no_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No Ollama answering on loopback (a port nothing listens on): the import it had made is
    removed with the folder, so the same command runs once the model is up."""
    monkeypatch.setenv("KERNELWRIGHT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KERNELWRIGHT_OLLAMA_BASE_URL", "http://127.0.0.1:9")
    out = tmp_path / "run"
    code = run_pareval_command(FAKE, out, names=["02_graph_max_degree"], gpu=ReplayGpu())
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error:"), err
