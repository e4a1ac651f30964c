"""The timing's verdicts against the controller's clock: pure functions over recorded samples
(no GPU)."""

from __future__ import annotations

import pytest

from kernelwright.tools import verdicts
from kernelwright.tools.schedule import Rounds
from kernelwright.tools.task import load_task
from kernelwright.tools.timing import five_percentiles, unexplained_per_round_us, unexplained_us
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


def test_the_spread_over_rounds_shows_what_the_median_leaves_out() -> None:
    """A candidate that hides time in a minority of batches moves the median little; the
    check's result says how the batches spread, so the allowance can be set from it."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    rounds = _rounds(0.5, n=80, batch=8)  # ten pairs of batches, honest
    cw, cs, rw, rs, k = rounds.walls[0]
    for i in (2, 5, 7):  # three of ten: 0.3 ms a call kept out of the samples
        rounds.walls[i] = (cw + 0.3 * k, cs, rw, rs, k)
    assert unexplained_per_round_us(rounds.walls) == pytest.approx(
        [300.0 if i in (2, 5, 7) else 0.0 for i in range(10)]
    )
    timing, _ = verdicts.timing(task, rounds, None, None, None)
    assert timing.unexplained_us == pytest.approx(0.0)  # the median
    p10, p25, p50, p75, p90 = timing.unexplained_spread_us
    assert p10 == p25 == p50 == pytest.approx(0.0) and 0.0 < p75 < p90 == pytest.approx(300.0)
    assert five_percentiles([]) == () and five_percentiles([4.0]) == (4.0,) * 5


@pytest.mark.parametrize("forged", [0, 4, 6])
def test_a_forger_lying_in_any_share_of_its_batches_is_held_to_the_clocks_sum(forged: int) -> None:
    """A candidate 0.5 ms a call (the reference 1 ms) that reports 30% of each call in
    `forged` of its ten batches; the controller's clock sees each batch's wall as it is, give
    or take up to 0.25 ms a call (summing to nothing). With a majority forged, the rounds'
    median is a lie and the batches' median charge only part of it (it read 3.1x here, 1.67x
    on an H100); the clock's sum over every batch holds the speedup within 2% of what it
    bears out. An honest one, with the same noise, reads as before."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    rounds = _rounds(0.5, n=80, batch=8)
    noise = [-0.2, -0.15, -0.1, 0.0, 0.2, 0.25, -0.05, 0.0, 0.0, 0.05]  # ms a call, by batch
    for b in range(10):
        cw, cs, rw, rs, k = rounds.walls[b]
        lying = b < forged
        rounds.walls[b] = (cw + noise[b] * k, cs * (0.3 if lying else 1.0), rw, rs, k)
        for i in range(b * 8, b * 8 + 8):
            rounds.cand[i] = {"ms": 0.15, "host_ms": 0.2} if lying else rounds.cand[i]
    timing, _ = verdicts.timing(task, rounds, None, None, None)
    bound = verdicts.clock_bound(rounds.walls)
    # every batch but the one the clock saw slowest (batch 5, 0.25 ms a call long): the clock's
    kept = [x for b, x in enumerate(noise) if b != 5]  # mean call over the other nine
    assert bound == pytest.approx(1.0 / (0.5 + sum(kept) / 9 - verdicts.ALLOW_CALL_US / 1e3))
    assert timing.speedup <= bound * (1 + verdicts.CLOCK_SLACK) + 1e-9
    held = any("held to" in n for n in timing.notes)
    assert held == (forged == 6)  # a minority: the median already reads the honest rounds
    if forged == 0:
        assert timing.speedup == pytest.approx(2.0)
    assert verdicts.clock_bound([]) is None


def _batches(n: int, cand_ms: float, long_ms: dict[int, float], lying: set[int]) -> Rounds:
    """`n` batches of one call (the reference 1 ms, the candidate `cand_ms`, 0.3 ms of harness
    a call on each side); batch b's call runs `long_ms[b]` longer by the clock, and the
    batches in `lying` report 30% of their call."""
    out = Rounds()
    for b in range(n):
        forged = b in lying
        out.ref.append({"ms": 1.0, "host_ms": 1.05})
        out.cand.append({"ms": cand_ms * (0.3 if forged else 1.0), "host_ms": cand_ms + 0.05})
        cand_wall = cand_ms + 0.3 + long_ms.get(b, 0.0)
        out.walls.append((cand_wall, cand_ms * (0.3 if forged else 1.0), 1.3, 1.0, 1))
    out.ref_quiet_us = out.ref_settled_us = out.cand_quiet_us = [10.0] * n
    return out


def test_one_long_batch_of_an_honest_candidate_does_not_hold_it_down() -> None:
    """KernelBench 1/87 on an H100: its own Model read 1.009x by its rounds, and one of its 32
    batches ran 2.2 ms long by the controller's clock, which the sum over every batch held to
    0.919x. The clock's sum leaves out the one batch it saw slowest; two long batches still
    count (one of them), and a forger lying in 40% of its batches is still held."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    honest = _batches(32, 1.0, {17: 2.2}, set())
    timing, _ = verdicts.timing(task, honest, None, None, None)
    assert verdicts.clock_bound(honest.walls) == pytest.approx(1.0 / (1.0 - 0.008))
    assert timing.speedup == pytest.approx(1.0) and not any("held to" in n for n in timing.notes)
    # without leaving it out, the sum would have read it 0.94x: what the hiccup cost
    everything = 32 / (32 * 1.0 + 2.2 - 32 * 0.008)
    assert everything < 0.95
    two = _batches(32, 1.0, {3: 2.2, 17: 2.2}, set())
    assert verdicts.clock_bound(two.walls) == pytest.approx(31 / (31 * 1.0 + 2.2 - 31 * 0.008))
    # a forger (0.5 ms a call, 30% reported in 13 of 32 batches) with a hiccup of its own
    forger = _batches(32, 0.5, {20: 2.2}, set(range(0, 32, 5)) | set(range(1, 32, 5)))
    timing, _ = verdicts.timing(task, forger, None, None, None)
    assert timing.speedup <= 1.0 / (0.5 - 0.008) * (1 + verdicts.CLOCK_SLACK) + 1e-9
    # under CLOCK_TRIM_BATCHES batches nothing is left out
    few = _batches(verdicts.CLOCK_TRIM_BATCHES - 1, 1.0, {2: 2.2}, set())
    n = verdicts.CLOCK_TRIM_BATCHES - 1
    assert verdicts.clock_bound(few.walls) == pytest.approx(n / (n + 2.2 - n * 0.008))


@pytest.mark.parametrize(
    ("hidden_ms", "speedup", "why"),
    [
        (0.0, 2.0, ""),  # honest
        (0.003, 2.0, ""),  # within the spread between honest workers' calls: not charged
        (-0.2, 2.0, ""),  # less harness time than the reference's: noise, not credit
        (0.05, 1.0 / (0.5 + 0.05 - verdicts.ALLOW_CALL_US / 1e3), ""),  # beyond the allowance
        (0.16, 1.0 / (0.5 + 0.16 - verdicts.ALLOW_CALL_US / 1e3), ""),
        (0.6, 1.0 / (0.5 + 0.6 - verdicts.ALLOW_CALL_US / 1e3), "work escaped the timed region"),
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


def test_work_done_on_the_inputs_before_the_call_is_charged() -> None:
    """A call's message makes its input set, then times the call: work the candidate does on
    the inputs as they are made (before its timed window) is in the message's wall time, not
    its samples, and is charged like any other time its samples do not explain."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    timing, problem = verdicts.timing(task, _rounds(0.5, hidden_ms=0.3), None, None, None)
    assert timing.charged_us == pytest.approx(300 - verdicts.ALLOW_CALL_US)
    assert problem == ""
    _, problem = verdicts.timing(task, _rounds(0.5, hidden_ms=0.8), None, None, None)
    assert "work escaped the timed region" in problem  # more than its own 0.5 ms


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
    """Several calls a round: the round, not the call, is the unit compared, so work moved
    between a round's calls (here, as if all of it were done in the first: per call, the
    median would read 30x) reads what it took. (A worker holds one input set at a time, each
    made after the call before it: schedule.py.)"""
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


def test_each_pair_of_processes_reads_its_own_ratio() -> None:
    """Several processes a side: the result says what each pair's rounds read, so a check
    whose figure came from one pair that settled apart shows it."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    out = Rounds(processes=3)
    for n, (cand_ms, harness_ms) in enumerate([(0.5, 0.3), (0.6, 0.3), (0.5, 0.32)]):
        for _ in range(8):  # rounds of one call
            out.ref.append({"ms": 1.0, "host_ms": 1.05})
            out.cand.append({"ms": cand_ms, "host_ms": cand_ms + 0.05})
            out.walls.append((cand_ms + harness_ms, cand_ms, 1.3, 1.0, 1))
            out.process.append(n)
    timing, _ = verdicts.timing(task, out, None, None, None)
    assert timing.processes == 3
    assert timing.process_speedups == pytest.approx((2.0, 1.0 / 0.6, 2.0))
    assert timing.process_unexplained_us == pytest.approx((0.0, 0.0, 20.0))
    one, _ = verdicts.timing(task, _rounds(0.5), None, None, None)
    assert one.process_speedups == one.process_unexplained_us == ()


def test_a_gpu_whose_kernels_reach_host_memory_is_said_in_a_cuda_tasks_timing_notes() -> None:
    """HMM (or Grace Hopper): a CUDA task's kernel could read and write its own worker's host
    memory, where that task's samples are taken unbounded by the controller's clock; said, not
    decided on. A KernelBench candidate's samples are bounded anyway: nothing said there."""
    from kernelwright.tools.results import DeviceInfo
    from kernelwright.tools.verdicts import timing_notes

    hmm = DeviceInfo(name="GH200", arch="sm_90", driver_version="580", memory_total_bytes=1,
                     pageable_memory_access=True)  # fmt: skip
    plain = hmm.model_copy(update={"pageable_memory_access": False})
    said = timing_notes(None, None, [], [], python=False, device=hmm)
    assert len(said) == 1 and "pageable host memory (HMM)" in said[0]
    assert timing_notes(None, None, [], [], python=True, device=hmm) == ()
    assert timing_notes(None, None, [], [], python=False, device=plain) == ()
    assert timing_notes(None, None, [], [], python=False) == ()


def test_the_workers_word_on_pageable_memory_reaches_the_device_info_only_as_a_bool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernelwright.tools import nvml, verify
    from kernelwright.tools.errors import NoGpuError

    def no_nvml(*a: object) -> object:
        raise NoGpuError("stand-in")

    monkeypatch.setattr(nvml, "device_info", no_nvml)
    assert verify._device_info({"cc": 90, "pageable": True}).pageable_memory_access is True
    assert verify._device_info({"cc": 90, "pageable": False}).pageable_memory_access is False
    assert verify._device_info({"cc": 90, "pageable": "yes"}).pageable_memory_access is None
    assert verify._device_info({"cc": 90}).pageable_memory_access is None
