"""The timing's verdicts against the controller's clock: pure functions over recorded samples
(no GPU)."""

from __future__ import annotations

import pytest

from kernelwright.tools import verdicts
from kernelwright.tools.schedule import Rounds
from kernelwright.tools.task import load_task
from kernelwright.tools.timing import unexplained_us
from tests.conftest import EXAMPLES


def _rounds(cand_ms: float, hidden_ms: float = 0.0, n: int = 16, batch: int = 8) -> Rounds:
    """Recorded rounds: the reference 1 ms a call, the candidate `cand_ms`, each worker's
    harness 0.3 ms a call; the candidate keeps `hidden_ms` more a call out of its samples."""
    out = Rounds()
    out.ref = [{"ms": 1.0, "host_ms": 1.05} for _ in range(n)]
    out.cand = [{"ms": cand_ms, "host_ms": cand_ms + 0.05} for _ in range(n)]
    for _ in range(n // batch):
        ref_wall = batch * (1.0 + 0.3)
        cand_wall = batch * (cand_ms + 0.3 + hidden_ms)
        out.walls.append((cand_wall, batch * cand_ms, ref_wall, batch * 1.0, batch))
    out.ref_quiet_us = [10.0] * (n // batch)
    out.ref_settled_us = [10.0] * (n // batch)
    out.cand_quiet_us = [10.0] * (n // batch)
    return out


def test_unexplained_time_is_per_call_beyond_the_references_harness() -> None:
    assert unexplained_us(_rounds(0.5).walls) == pytest.approx(0.0)
    assert unexplained_us(_rounds(0.5, hidden_ms=0.4).walls) == pytest.approx(400.0)
    assert unexplained_us(_rounds(0.5, hidden_ms=-0.1).walls) == pytest.approx(-100.0)


@pytest.mark.parametrize(
    ("hidden_ms", "speedup", "why"),
    [
        (0.0, 2.0, ""),  # honest
        (0.01, 2.0, ""),  # within the spread between honest workers' calls: not charged
        (-0.2, 2.0, ""),  # less harness time than the reference's: noise, not credit
        (0.05, 1.0 / (0.5 + 0.035), ""),  # charged beyond the allowance
        (0.16, 1.0 / (0.5 + 0.145), ""),
        (0.6, 1.0 / (0.5 + 0.585), "work escaped the timed region"),  # more than its own time
    ],
)
def test_a_kernelbench_candidate_is_held_to_the_controllers_clock(
    hidden_ms: float, speedup: float, why: str
) -> None:
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    timing, problem = verdicts.timing(task, _rounds(0.5, hidden_ms), None, None, None)
    assert timing.speedup == pytest.approx(speedup) and timing.rounds == 16
    assert timing.unexplained_us == pytest.approx(hidden_ms * 1e3)
    assert (why in problem) if why else problem == ""
    assert bool(timing.charged_us) == (hidden_ms * 1e3 > verdicts.ALLOW_CALL_US)


@pytest.mark.parametrize(
    ("slower_ms", "charged_us", "why"),
    [
        (0.0, 0.0, ""),
        (0.05, 0.0, ""),  # making the inputs varies more: within ALLOW_US
        (-0.3, 0.0, ""),  # faster than the reference's worker: no credit
        (0.3, 240.0, ""),  # work on the inputs before the call was asked for: charged
        (0.8, 740.0, "work escaped the timed region"),  # more than its own 0.5 ms
    ],
)
def test_work_done_before_the_call_is_charged_too(
    slower_ms: float, charged_us: float, why: str
) -> None:
    """Two phases: the candidate knows a round's inputs before the call is asked for; a first
    phase slower than the reference's is work it did on them, and is charged."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    rounds = _rounds(0.5)
    rounds.ref_prepare_ms = [0.2] * 16
    rounds.cand_prepare_ms = [0.2 + slower_ms] * 16
    timing, problem = verdicts.timing(task, rounds, None, None, None)
    assert timing.charged_us == pytest.approx(charged_us)
    assert timing.prepare_us == pytest.approx(slower_ms * 1e3)
    assert timing.speedup == pytest.approx(1.0 / (0.5 + charged_us / 1e3))
    assert (why in problem) if why else problem == ""


@pytest.mark.parametrize(
    ("calls", "slower_ms", "hidden_ms", "charged_us"),
    [
        (1, 0.05, 0.01, 0.0),  # one call a round: 60 us and 15 us of noise allowed per call
        (8, 0.05, 0.004, 0.0),  # eight: 50 us more a round is 6 us a call (16 allowed), 4 (5)
        (8, 0.4, 0.0, 400 / 8 - (60 + 7 * 10) / 8),  # work on eight input sets: charged
        (8, 0.0, 0.01, 10 - (15 + 7 * 4) / 8),  # 10 us a call out of its samples: charged
    ],
)
def test_rounds_of_several_calls_spread_the_allowance_over_them(
    calls: int, slower_ms: float, hidden_ms: float, charged_us: float
) -> None:
    """Honest workers' phases differ by about the same per round, whatever its calls take: with
    several calls a round, what is allowed per call shrinks, and hidden work shows."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    rounds = _rounds(0.1, hidden_ms=hidden_ms)
    rounds.calls = calls
    rounds.ref_prepare_ms = [0.2 * calls] * (16 // calls)
    rounds.cand_prepare_ms = [0.2 * calls + slower_ms] * (16 // calls)
    timing, problem = verdicts.timing(task, rounds, None, None, None)
    assert timing.charged_us == pytest.approx(charged_us)
    assert timing.calls_per_round == calls and problem == ""


def test_a_cuda_task_reports_the_figure_without_judging_it() -> None:
    task = load_task(EXAMPLES / "gelu")
    timing, problem = verdicts.timing(task, _rounds(0.5, hidden_ms=0.4), None, None, None)
    assert problem == "" and timing.unexplained_us == pytest.approx(400.0)


def test_work_left_on_the_gpu_while_the_reference_is_timed() -> None:
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    rounds = _rounds(0.5, n=32)
    rounds.ref_quiet_us = [12.0, 2400.0, 11.0, 13.0]  # a timeslice: another context ran
    rounds.ref_settled_us = [12.0, 14.0, 11.0, 13.0]  # ... and the batch waited it out
    timing, problem = verdicts.timing(task, rounds, None, None, None)
    assert problem == "" and "waited for it to settle" in " ".join(timing.notes)
    rounds.ref_settled_us = [12.0, 2400.0, 11.0, 13.0]  # it never settled
    _, problem = verdicts.timing(task, rounds, None, None, None)
    assert "the GPU stayed busy" in problem and "work left running" in problem
    cuda = load_task(EXAMPLES / "gelu")
    _, problem = verdicts.timing(cuda, rounds, None, None, None)
    assert "by another process on this GPU" in problem


def test_forged_samples_longer_than_the_workers_own_clock() -> None:
    task = load_task(EXAMPLES / "gelu")
    rounds = _rounds(0.5)
    rounds.cand[3] = {"ms": 5.0, "host_ms": 0.6}
    _, problem = verdicts.timing(task, rounds, None, None, None)
    assert "event 5.0000 ms > host 0.6000 ms" in problem


def test_a_round_whose_work_is_all_in_its_first_call_reads_its_whole_time() -> None:
    """Several calls a round: the candidate holds every input set of the round at once, so it
    could do all the work in the first call and answer the rest from it. Per call, the median
    would read 30x; the round is the unit compared, and it reads what the work took."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    rounds = _rounds(1.0)
    rounds.calls = 4
    rounds.cand = [
        {"ms": ms, "host_ms": ms + 0.05} for _ in range(4) for ms in (3.9, 1 / 30, 1 / 30, 1 / 30)
    ]
    timing, problem = verdicts.timing(task, rounds, None, None, None)
    assert problem == "" and timing.speedup == pytest.approx(1.0, rel=1e-6)
    assert timing.candidate.median_ms == pytest.approx(1.0, rel=1e-6)
    assert timing.rounds == 16 and timing.candidate.samples == 4
