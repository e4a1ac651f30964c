"""The timing protocol's decisions on recorded samples and counts (pure, no GPU): work that
escaped the events, outputs skipped or wrong while timed, the rounds' input changes, and no
garbage collection inside the timing loop."""

from __future__ import annotations

import gc
import time
from typing import Any

import numpy as np

from kernelwright.tools.rounds import PERTURBED, positions
from kernelwright.tools.timing import escaped_work_problem, measure, timed_output_problem

REF = [0.100] * 20
REF_HOST = [0.130] * 20  # 30 us of launch and synchronize around each call


def test_same_gap_as_the_reference_is_fine() -> None:
    assert escaped_work_problem(REF, REF_HOST, [0.05] * 20, [0.081] * 20) == ""


def test_work_after_the_end_event_is_caught() -> None:
    # A side stream: the events see 0.2 ms, the device-wide synchronize waits 2 ms more.
    reason = escaped_work_problem(REF, REF_HOST, [0.2] * 20, [2.23] * 20)
    assert reason.startswith("work escaped the timed region: 2.000 ms per call")


def test_a_small_gap_is_noise_not_escape() -> None:
    assert escaped_work_problem(REF, REF_HOST, [0.05] * 20, [0.095] * 20) == ""


def _counts(**kw: int) -> dict[str, int]:
    base = {"unwritten": 0, "unwritten_calls": 0, "mismatched": 0, "mismatched_calls": 0}
    return {**base, **kw}


def test_timed_outputs_all_right() -> None:
    assert timed_output_problem({}) == ""
    assert timed_output_problem({"calls": 300, "checked": 150, "outputs": {"y": _counts()}}) == ""


def test_outputs_left_untouched_while_timed() -> None:
    timed = {
        "calls": 300,
        "checked": 150,
        "outputs": {"y": _counts(unwritten=99, unwritten_calls=3)},
    }
    reason = timed_output_problem(timed)
    assert reason.startswith("output 'y' not fully written during timing: 3 of 300 timed calls")


def test_outputs_wrong_while_timed() -> None:
    counts = _counts(mismatched=7, mismatched_calls=2)
    reason = timed_output_problem({"calls": 300, "checked": 150, "outputs": {"y": counts}})
    assert reason.startswith("output 'y' wrong during timing: 2 of 150 checked timed calls")


def test_round_changes_are_the_same_in_every_worker_and_distinct() -> None:
    dst, src = positions(7, 3, 0, 1000)
    again = positions(7, 3, 0, 1000)
    assert np.array_equal(dst, again[0]) and np.array_equal(src, again[1])
    assert len(set(dst.tolist())) == len(dst) == PERTURBED  # no target twice: deterministic
    assert dst.max() < 1000 and src.max() < 1000
    assert not np.array_equal(dst, positions(7, 4, 0, 1000)[0])
    small, _ = positions(1, 0, 0, 5)
    assert sorted(small.tolist()) == [0, 1, 2, 3, 4]


class _FakeClock:
    """The Clock's surface for `measure`, without a GPU: each sample just calls."""

    hold_ms = 0.0
    flush_bytes = 1 << 20

    def sync(self) -> None:
        pass

    def sample(self, fn: Any, k: int) -> tuple[float, float]:
        fn(k)
        return 0.01, 0.02


def test_no_garbage_collection_while_timed_and_it_is_restored() -> None:
    seen: list[bool] = []
    timed = {n: (lambda k: seen.append(gc.isenabled())) for n in ("ref", "cand")}
    assert gc.isenabled()
    raw = measure(_FakeClock(), timed, 2, rounds=6, warmup=1, warmup_s=0.0)
    assert seen and not any(seen)
    assert gc.isenabled()
    assert len(raw["ref_ms"]) == len(raw["cand_ms"]) == 6
    assert "tampered" not in raw


def test_switching_the_collector_on_while_timed_is_tampering() -> None:
    def sneaky(k: int) -> None:
        gc.enable()

    raw = measure(
        _FakeClock(), {"ref": lambda k: None, "cand": sneaky}, 1, rounds=3, warmup=1, warmup_s=0.0
    )
    assert raw["tampered"] == ["the garbage collector was switched on while timed calls ran"]
    assert gc.isenabled()


def test_a_budgeted_count_stops_at_its_cap_a_fixed_one_does_not() -> None:
    class SlowClock(_FakeClock):
        def sample(self, fn: Any, k: int) -> tuple[float, float]:
            time.sleep(0.002)  # the estimate sees 0.01 ms; each sample really takes 2 ms
            return super().sample(fn, k)

    timed = {"ref": lambda k: None, "cand": lambda k: None}
    raw = measure(
        SlowClock(), timed, 2, budget_s=0.05, min_rounds=5, max_rounds=3000, warmup=1, cap_s=0.1
    )
    assert 5 <= raw["rounds"] < 100 and len(raw["ref_ms"]) == raw["rounds"]
    fixed = measure(SlowClock(), timed, 2, budget_s=0.001, rounds=40, warmup=1, warmup_s=0.0)
    assert fixed["rounds"] == 40 and len(fixed["cand_ms"]) == 40
