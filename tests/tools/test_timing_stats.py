"""The statistics on raw timing samples, and the verdicts on them."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from kernelwright.tools.timing import (
    host_clock_problem,
    median_interval,
    ratio_settled,
    roofline_floor_ms,
    speedup,
    summarize,
)


def test_summarize_median_and_iqr() -> None:
    t = summarize([5.0, 1.0, 3.0, 2.0, 4.0, 100.0, 6.0, 7.0, 8.0])
    assert t.median_ms == 5.0
    assert t.iqr_ms == pytest.approx(7.0 - 3.0)
    assert (t.min_ms, t.max_ms, t.samples) == (1.0, 100.0, 9)


def test_summarize_one_sample() -> None:
    t = summarize([0.25])
    assert (t.median_ms, t.iqr_ms, t.samples) == (0.25, 0.0, 1)


def test_speedup_is_median_of_per_round_ratios() -> None:
    ref = [2.0, 2.0, 2.0, 10.0, 2.0]
    cand = [1.0, 1.0, 1.0, 1.0, 4.0]
    ratio, iqr = speedup(ref, cand)
    assert ratio == 2.0  # ratios 2, 2, 2, 10, 0.5
    assert iqr == pytest.approx(0.0)
    # ratios 0.5, 3, 0.5: the median ratio, not median(ref) / median(cand) = 1.5
    ratio, iqr = speedup([1.0, 3.0, 5.0], [2.0, 1.0, 10.0])
    assert ratio == 0.5 and iqr == pytest.approx(1.25)


def test_host_clock_problem() -> None:
    assert host_clock_problem([0.1, 0.2], [0.15, 0.3]) == ""
    assert host_clock_problem([0.1], [0.1]) == ""
    forged = host_clock_problem([0.1, 5.0], [0.15, 1.0])
    assert "event 5.0000 ms > host 1.0000 ms" in forged
    assert host_clock_problem([-0.1], [1.0]) != ""
    assert host_clock_problem([math.nan], [1.0]) != ""
    assert host_clock_problem([0.1, 0.1], [0.2]) != ""
    assert host_clock_problem([], []) != ""


def test_roofline_floor() -> None:
    # 3.35 TB/s moving 3.35 GB: 1 ms
    assert roofline_floor_ms(3.35e9, None, 3350.0, None) == pytest.approx(1.0)
    # FLOPs are set against 16x the fp32 rate: 16 * 50 TFLOP/s for 8e11 FLOP is 1 ms
    assert roofline_floor_ms(None, 8e11, None, 50.0) == pytest.approx(1.0)
    assert roofline_floor_ms(3.35e9, 8e11 * 2, 3350.0, 50.0) == pytest.approx(2.0)  # the larger
    assert roofline_floor_ms(1e9, 1e9, None, None) is None
    assert roofline_floor_ms(None, None, 3350.0, 50.0) is None


def test_the_median_interval_narrows_with_more_rounds() -> None:
    rng = random.Random(4)
    few = [rng.gauss(1.0, 0.1) for _ in range(20)]
    many = [rng.gauss(1.0, 0.1) for _ in range(2000)]
    lo, hi = median_interval(few)
    assert lo < statistics.median(few) < hi
    lo2, hi2 = median_interval(many)
    assert hi2 - lo2 < (hi - lo) / 4 and lo2 < 1.0 < hi2


def test_a_ratio_is_settled_once_its_interval_is_tight() -> None:
    rng = random.Random(5)
    ref = [1.0 + rng.gauss(0, 0.002) for _ in range(400)]
    assert ratio_settled(ref, [0.5] * 400, 0.005)  # a quiet 2x: known within 0.5%
    noisy = [1.0 + rng.gauss(0, 0.2) for _ in range(40)]
    assert not ratio_settled(noisy, [1.0] * 40, 0.005)
    assert not ratio_settled([1.0, 1.0], [1.0, 1.0], 0.5)  # too few to say
