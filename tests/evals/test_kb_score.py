"""KernelBench's scores (evals/kb_score.py) against cases worked out by hand: fast_p counts every
problem in its denominator and only speedups strictly above p; the geometric mean is over the
correct problems and 0 when there are none; ours beside them count a failure as 1.0x."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelwright.evals.kb_score import (
    FAST_P,
    fast_label,
    fast_p,
    geomean_correct,
    geomean_failures_as_one,
    median_correct,
    median_failures_as_one,
    score,
    speedups_from_times,
)


def test_labels() -> None:
    assert [fast_label(p) for p in FAST_P] == ["fast_0", "fast_1", "fast_1.2"]


def test_fast_p_counts_failures_in_the_denominator() -> None:
    # 4 problems: 2.0x, 0.5x (correct but slower), and two failures
    s = [2.0, 0.5, None, None]
    assert fast_p(s, 0.0) == 0.5  # fast_0 is the share correct: 2 of 4
    assert fast_p(s, 1.0) == 0.25
    assert fast_p(s, 1.2) == 0.25
    assert fast_p(s, 2.0) == 0.0  # 2.0 is not strictly above 2.0


def test_ties_at_p_do_not_count() -> None:
    s = [1.0, 1.2, 1.2000001, None]
    assert fast_p(s, 0.0) == 0.75
    assert fast_p(s, 1.0) == 0.5  # 1.2 and 1.2000001; not 1.0
    assert fast_p(s, 1.2) == 0.25  # only 1.2000001


def test_all_failed() -> None:
    s: list[float | None] = [None, None, None]
    assert [fast_p(s, p) for p in FAST_P] == [0.0, 0.0, 0.0]
    assert geomean_correct(s) == 0.0  # KernelBench returns 0 when nothing is correct
    assert geomean_failures_as_one(s) == 1.0
    assert median_failures_as_one(s) == 1.0
    assert median_correct(s) is None


def test_no_problems() -> None:
    assert fast_p([], 1.0) == 0.0  # KernelBench: 0 when n is 0
    assert geomean_correct([]) == 0.0
    assert geomean_failures_as_one([]) is None
    assert median_failures_as_one([]) is None and median_correct([]) is None


def test_means_and_medians_by_hand() -> None:
    s = [2.0, 8.0, None]
    assert geomean_correct(s) == pytest.approx(4.0)  # sqrt(2 * 8)
    assert geomean_failures_as_one(s) == pytest.approx(16 ** (1 / 3))  # (2 * 8 * 1) ** (1/3)
    assert median_failures_as_one(s) == 2.0  # median of 1, 2, 8
    assert median_correct(s) == 5.0  # median of 2, 8
    assert median_failures_as_one([0.5, None]) == 0.75


def test_speedups_from_times_as_kernelbench_forms_them() -> None:
    """Baseline over actual, for the correct ones: 0.1/0.2, 0.2/0.3, 0.05/0.01."""
    s = speedups_from_times(
        [True, False, True, True, False], [0.1, 0.15, 0.2, 0.05, 0.3], [0.2, 0.15, 0.3, 0.01, 0.2]
    )
    assert s[1] is None and s[4] is None
    assert s[0] == pytest.approx(0.5) and s[2] == pytest.approx(2 / 3) and s[3] == pytest.approx(5)
    assert geomean_correct(s) == pytest.approx((5 / 3) ** (1 / 3))  # 0.5 * 2/3 * 5 = 5/3
    assert fast_p(s, 1.0) == pytest.approx(0.2)
    assert fast_p(s, 0.0) == pytest.approx(0.6)
    with pytest.raises(ValueError, match="differ in length"):
        speedups_from_times([True], [1.0, 2.0], [1.0])


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_a_speedup_that_is_not_a_positive_number_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="positive finite"):
        score([1.5, bad])


def test_score_gathers_everything() -> None:
    s = score([3.0, 1.0, None, 0.75], compiled=[True, True, True, False])
    assert (s.problems, s.compiled, s.correct) == (4, 3, 3)
    assert s.fast == {"fast_0": 0.75, "fast_1": 0.25, "fast_1.2": 0.25}
    assert s.geomean_correct == pytest.approx((3 * 1 * 0.75) ** (1 / 3))
    assert s.geomean_failures_as_one == pytest.approx((3 * 1 * 0.75) ** (1 / 4))
    assert s.median_failures_as_one == 1.0 and s.median_correct == 1.0
    assert s.as_dict()["fast"]["fast_1.2"] == 0.25
    assert score([2.0, None]).compiled == 1  # by default, the correct ones
    with pytest.raises(ValueError, match="differ in length"):
        score([2.0], compiled=[True, False])


outcomes = st.lists(
    st.one_of(st.none(), st.floats(min_value=1e-3, max_value=1e3, allow_nan=False)),
    max_size=40,
)


@settings(derandomize=True, database=None, max_examples=200, deadline=None)
@given(outcomes)
def test_properties(s: list[float | None]) -> None:
    n, correct = len(s), [x for x in s if x is not None]
    values = [fast_p(s, p) for p in (0.0, 0.5, 1.0, 1.2, 2.0)]
    assert values == sorted(values, reverse=True)  # fast_p never grows with p
    assert fast_p(s, 0.0) == (len(correct) / n if n else 0.0)
    if correct:
        g = geomean_correct(s)
        assert min(correct) * (1 - 1e-9) <= g <= max(correct) * (1 + 1e-9)
        # the product's root, as KernelBench computes it, is the same number
        assert g == pytest.approx(float(np.prod(correct) ** (1 / len(correct))), rel=1e-9)
    else:
        assert geomean_correct(s) == 0.0
