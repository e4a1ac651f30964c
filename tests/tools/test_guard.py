"""What a KernelBench worker notices a candidate change in it (no GPU): rebound harness
attributes, the problem's Model, and threads busy while timed calls run."""

from __future__ import annotations

import threading
import time
import types

import pytest

from kernelwright.tools import guard, timing
from kernelwright.tools.guard import Guard


def _problem() -> types.ModuleType:
    problem = types.ModuleType("kw_problem_test")

    class Model:
        def forward(self, x: int) -> int:
            return x

    Model.__module__ = problem.__name__
    problem.Model = Model  # type: ignore[attr-defined]
    problem.batch_size = 8  # type: ignore[attr-defined]
    return problem


def test_nothing_changed_nothing_reported() -> None:
    problem = _problem()
    g = Guard({"kw_problem": problem, "kw_problem.Model": problem.Model})
    problem.batch_size = 4  # type: ignore[attr-defined]  # the harness sets sizes: not watched
    assert g.tampered() == []


def test_rebinding_timers_and_the_problem_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = _problem()
    g = Guard({"kw_problem": problem, "kw_problem.Model": problem.Model})
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    monkeypatch.setattr(problem.Model, "forward", lambda self, x: x + 1)
    monkeypatch.setattr(timing, "host_clock_problem", lambda *a: "")
    found = g.tampered()
    assert "time.perf_counter was replaced" in found
    assert "kw_problem.Model.forward was replaced" in found
    assert "timing.host_clock_problem was replaced" in found


def test_a_thread_busy_during_timing_is_reported() -> None:
    g = Guard()
    g.start_timing()
    stop = time.perf_counter() + 0.05

    def spin() -> None:
        while time.perf_counter() < stop:
            pass

    worker = threading.Thread(target=spin)
    worker.start()
    worker.join()  # dead by now: its CPU time still counts
    found = g.tampered(timing=True)
    assert any(line.startswith("background threads used") for line in found), found


def test_no_gpu_no_persisting_l2() -> None:
    if guard._libcuda is None:
        assert guard.persisting_l2_bytes() == 0
