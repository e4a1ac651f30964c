"""The loop on a C++ task, on the CPU: the original is the function itself (its time on one
core), the first proposal is a port (prompts/port.yaml), later ones optimize it as a CUDA
kernel checked beside the run's first correct port, and the run ends writing best_host.cu,
checked end to end, with the three speedups in its summary. Scripted replies, real NVRTC
compiles, verifier reports replayed (ReplayGpu)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kernelwright.agent.best_host import best_host
from kernelwright.agent.llm import ScriptedLLM
from kernelwright.agent.optimize import optimize
from kernelwright.agent.settings import Settings
from kernelwright.tools.backend import ReplayGpu
from kernelwright.tools.cpp import CppTask
from kernelwright.tools.cpp_candidates import CppKernel, HostFile
from kernelwright.tools.results import CheckReport, KernelTiming, Speedups, TimingResult
from kernelwright.tools.task import load_task
from tests.conftest import EXAMPLES, proposed_launch

HIST = EXAMPLES / "cpp" / "histogram"
GIVEN = HIST / "candidates"
CPU_MS = 6.6


def reply(path: Path, tags: list[str]) -> str:
    meta: dict[str, Any] = {"tags": tags, "rationale": "scripted"}
    if (launch := proposed_launch(path)) is not None:
        meta["launch"] = launch
    return f"```cuda\n{path.read_text()}\n```\n```json\n{json.dumps(meta)}\n```\n"


def timed(vs_core: float, port: float | None = None, **more: Any) -> tuple[TimingResult, Speedups]:
    cpu = KernelTiming(median_ms=CPU_MS, iqr_ms=0.1, min_ms=6.5, max_ms=7.0, samples=9)
    kernel = cpu.model_copy(update={"median_ms": CPU_MS / vs_core, "iqr_ms": 0.001})
    timing = TimingResult(
        reference=cpu, candidate=kernel, speedup=vs_core, speedup_iqr=0.01, rounds=100,
        input_sets=100, l2_flush_bytes=100 << 20,
    )  # fmt: skip
    speedups = Speedups(cpu_core=vs_core, cpu_ms=CPU_MS, cpu_samples=9, port=port, **more)
    return timing, speedups


def report(task: CppTask, verdict: str, vs_core: float | None, **more: Any) -> CheckReport:
    timing, speedups = timed(vs_core, **more) if vs_core else (None, None)
    return CheckReport(
        task=task.name, candidate="c", verdict=verdict, reason=f"{verdict}: scripted",  # type: ignore[arg-type]
        timing=timing, speedups=speedups,
    )  # fmt: skip


def kernel(task: CppTask, path: Path) -> CppKernel:
    launch = proposed_launch(path)
    from kernelwright.agent.kinds import as_candidate

    made = as_candidate(task, path.read_text(), launch)
    return CppKernel(path="c.cu", source=made.source, launch=made.launch)


def add_faster_and_its_host(gpu: ReplayGpu, hist: CppTask, faster: Path) -> str:
    """The faster kernel's check (11.9x the port), and its best_host.cu's end to end (0.5x)."""
    gpu.add(hist, kernel(hist, faster), report(hist, "correct", 9.5 * 11.9, port=11.9))
    host = best_host(hist, faster.read_text(), proposed_launch(faster))
    gpu.add(
        hist,
        HostFile(path="best_host.cu", source=host),
        report(hist, "correct", 0.5, end_to_end=0.5, end_to_end_ms=13.2, end_to_end_measured=True),
    )
    return host


def run_loop(
    tmp_path: Path, task: CppTask, model: ScriptedLLM, gpu: ReplayGpu, **kw: Any
) -> tuple[dict[str, Any], Any]:
    settings = Settings(data_dir=tmp_path / "data")
    return optimize(task.path, settings, model=model, gpu=gpu, arch="sm_90", memory=False, **kw)


@pytest.fixture
def hist(tmp_path: Path, nvrtc: None) -> CppTask:
    """The histogram example without a port of its own: the run's first correct one is."""
    copy = tmp_path / "histogram"
    shutil.copytree(HIST, copy)
    spec = copy / "histogram.toml"
    spec.write_text("\n".join(ln for ln in spec.read_text().splitlines() if "port =" not in ln))
    task = load_task(copy)
    assert isinstance(task, CppTask) and not task.port_source
    return task


def test_port_first_then_optimize_then_the_drop_in(tmp_path: Path, hist: CppTask) -> None:
    port, wrong, faster = (GIVEN / f"{n}.cu" for n in ("port", "wrong", "faster"))
    gpu = ReplayGpu()
    gpu.add(hist, hist.reference_candidate(), report(hist, "correct", 1.0))
    gpu.add(hist, kernel(hist, port), report(hist, "correct", 0.8 * 11.9, port=1.0))
    gpu.add(hist, kernel(hist, wrong), report(hist, "wrong", None))
    host = add_faster_and_its_host(gpu, hist, faster)
    model = ScriptedLLM(
        [
            reply(port, ["port"]),
            "Ported.",
            reply(wrong, ["vector-access-16b"]),
            "Races.",
            reply(faster, ["shared-memory-privatization"]),
            "Faster.",
        ]
    )
    out, run = run_loop(tmp_path, hist, model, gpu, budget=3, plateau=5)
    a1, a2, a3 = out["attempts"]
    assert [a.verdict for a in (a1, a2, a3)] == ["correct", "wrong", "correct"]
    assert [a1.kept, a2.kept, a3.kept] == [True, False, True]
    first, second, _ = (m[-1]["content"] for m in model.prompts[0:5:2])
    assert "## Task: port histogram() to CUDA" in first
    assert "void histogram(const std::vector<int>& pixels" in first  # the C++ code itself
    assert "- N: int64 scalar = the size N" in first  # a vector's length, given to the kernel
    assert "counts: uint32 [256] pointer, starts as 0" in first
    assert "## Current best kernel" in second and "counts: uint32 [256], read and written" in second
    assert "On entry: counts starts as 0." in second
    assert port.read_text().strip() in second  # the port, optimized from here
    assert (run.path / "best.cu").read_text() == faster.read_text()
    assert (run.path / "best_host.cu").read_text() == host
    summary = (run.path / "summary.md").read_text()
    assert "- vs one core: 113.05x against the C++ function on one core" in summary
    assert "- end to end: 0.50x with the copies" in summary and "below 1x" in summary
    assert "- vs first port: 11.90x" in summary
    assert "- best_host.cu: histogram() with its own signature" in summary
    assert "checked end to end: correct" in summary


def test_the_first_correct_kernel_is_the_port_later_ones_are_timed_beside(
    tmp_path: Path, hist: CppTask
) -> None:
    port, faster = GIVEN / "port.cu", GIVEN / "faster.cu"
    gpu = ReplayGpu()
    gpu.add(hist, hist.reference_candidate(), report(hist, "correct", 1.0))
    gpu.add(hist, kernel(hist, port), report(hist, "correct", 2.0, port=1.0))
    gpu.add(hist, kernel(hist, faster), report(hist, "correct", 20.0, port=10.0))
    host = best_host(hist, faster.read_text(), proposed_launch(faster))
    gpu.add(hist, HostFile(path="best_host.cu", source=host), report(hist, "wrong", None))
    seen: list[Any] = []
    real = gpu.check

    def check(task: Any, candidate: Any) -> CheckReport:
        seen.append(candidate)
        return real(task, candidate)

    gpu.check = check  # type: ignore[method-assign]
    model = ScriptedLLM([reply(port, ["port"]), "Ported.", reply(faster, ["tiling"]), "Faster."])
    out, run = run_loop(tmp_path, hist, model, gpu, budget=2, plateau=5)
    assert [a.kept for a in out["attempts"]] == [True, True]
    kernels = [c for c in seen if isinstance(c, CppKernel)]
    assert kernels[0].port is None  # the first port: timed beside itself
    later = kernels[1].port
    assert later is not None and later.path == "attempt 1" and later.source == port.read_text()
    summary = (run.path / "summary.md").read_text()
    assert "checked end to end: wrong: wrong: scripted" in summary  # said, not hidden
    assert "- vs first port: 10.00x (IQR 0.000) against " in summary
    assert out["best_speedup"] == 20.0  # against one core: the original is the function


def test_a_port_slower_than_one_core_is_ported_again_and_no_drop_in_is_written(
    tmp_path: Path, hist: CppTask
) -> None:
    port, wrong = GIVEN / "port.cu", GIVEN / "wrong.cu"
    gpu = ReplayGpu()
    gpu.add(hist, hist.reference_candidate(), report(hist, "correct", 1.0))
    gpu.add(hist, kernel(hist, port), report(hist, "correct", 0.8, port=1.0))
    gpu.add(hist, kernel(hist, wrong), report(hist, "wrong", None))
    model = ScriptedLLM([reply(port, ["port"]), "Slow.", reply(wrong, ["port"]), "Wrong."])
    out, run = run_loop(tmp_path, hist, model, gpu, budget=2)
    assert [a.kept for a in out["attempts"]] == [False, False]
    second = model.prompts[2][-1]["content"]
    assert "## Task: port histogram() to CUDA" in second
    assert "#1 correct, but 0.80x the C++ function on one CPU core" in second
    assert not (run.path / "best_host.cu").exists()
    assert (
        "no kernel was faster than histogram() on one core: no best_host.cu"
        in (run.path / "summary.md").read_text()
    )
    assert "no CUDA port of histogram() is verified yet" in (run.path / "best.cu").read_text()


def test_the_port_step_picks_no_technique_and_shows_no_worked_example(
    tmp_path: Path, hist: CppTask
) -> None:
    """With the memory on, the search picks a technique for every step but the port: a port's
    gain over one CPU core, credited to the technique the search had picked, would teach the
    memory that the technique gains 10x."""
    from kernelwright.agent.settings import load

    port, faster = GIVEN / "port.cu", GIVEN / "faster.cu"
    gpu = ReplayGpu()
    gpu.add(hist, hist.reference_candidate(), report(hist, "correct", 1.0))
    gpu.add(hist, kernel(hist, port), report(hist, "correct", 0.8 * 11.9, port=1.0))
    add_faster_and_its_host(gpu, hist, faster)
    model = ScriptedLLM(
        [
            reply(port, ["port"]),
            "Ported.",
            reply(faster, ["shared-memory-privatization"]),
            "Faster.",
        ]
    )
    events: list[dict[str, Any]] = []
    out, _ = optimize(
        hist.path,
        load(data_dir=tmp_path / "data"),
        model=model,
        gpu=gpu,
        arch="sm_90",
        budget=2,
        plateau=5,
        progress=events.append,
        tune=False,
    )
    assert [a.verdict for a in out["attempts"]] == ["correct", "correct"]
    said = [str(e.get("message", "")) for e in events]
    first, second = said.index("candidate 1: writing"), said.index("candidate 2: writing")
    searches = [i for i, line in enumerate(said) if line.startswith("search:")]
    assert not any(i < first for i in searches)  # the port: no technique
    assert any(first < i < second for i in searches)  # the step after it: searched for
    first_prompt = model.prompts[0][-1]["content"]
    assert "## Worked example" not in first_prompt
