"""Comparing a candidate's outputs with the expected ones."""

from __future__ import annotations

import numpy as np
import pytest

from kernelwright.tools.correctness import (
    CHUNK,
    LARGE,
    compare,
    runs_agree,
    tolerance,
    unwritten,
)


def test_within_tolerance_passes() -> None:
    expected = np.linspace(-1, 1, 1000)
    got = (expected + 5e-6).astype(np.float32)
    outcome = compare("y", got, expected, atol=1e-5, rtol=1e-5)
    assert outcome.ok and outcome.reason == ""
    assert outcome.max_abs_err is not None and 0 < outcome.max_abs_err < 1e-5


def test_outside_tolerance_names_output_and_index() -> None:
    expected = np.zeros((4, 5), dtype=np.float64)
    got = expected.astype(np.float32)
    got[2, 3] = 0.5
    outcome = compare("y", got, expected, atol=1e-5, rtol=1e-5)
    assert not outcome.ok
    assert "output 'y'" in outcome.reason and "[2, 3]" in outcome.reason
    assert "1 of 20" in outcome.reason
    assert outcome.max_abs_err == pytest.approx(0.5)


def test_rtol_scales_with_expected() -> None:
    expected = np.array([1000.0, 1.0])
    assert compare("y", np.array([1000.5, 1.0]), expected, atol=0.0, rtol=1e-3).ok
    assert not compare("y", np.array([1000.0, 1.5]), expected, atol=0.0, rtol=1e-3).ok


def test_nan_never_matches() -> None:
    got = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    outcome = compare("y", got, np.array([1.0, 2.0, 3.0]), atol=1.0, rtol=1.0)
    assert not outcome.ok and "NaN" in outcome.reason and "[1]" in outcome.reason
    # not even where the reference itself is NaN
    assert not compare("y", got, np.array([1.0, np.nan, 3.0]), atol=1.0, rtol=1.0).ok


def test_nan_in_expected_only_fails() -> None:
    got = np.array([1.0, 2.0])
    assert not compare("y", got, np.array([1.0, np.nan]), atol=1.0, rtol=1.0).ok


def test_infinities() -> None:
    expected = np.array([np.inf, -np.inf, 1.0])
    assert compare("y", expected.copy(), expected, atol=1e-5, rtol=1e-5).ok
    assert not compare("y", np.array([np.inf, -np.inf, np.inf]), expected, atol=1e-5, rtol=1e-5).ok


@pytest.mark.parametrize("got", [-np.inf, 0.0, 1e30])
def test_anything_but_the_same_infinity_fails(got: float) -> None:
    assert not compare("y", np.array([got]), np.array([np.inf]), atol=1e-5, rtol=1e-5).ok


def test_shape_mismatch() -> None:
    outcome = compare("y", np.zeros((3, 4)), np.zeros((4, 3)), atol=1.0, rtol=1.0)
    assert not outcome.ok and "(3, 4)" in outcome.reason and "(4, 3)" in outcome.reason


def test_integers_compare_exactly() -> None:
    expected = np.arange(10, dtype=np.int32)
    assert compare("idx", expected.copy(), expected, atol=1.0, rtol=1.0).ok
    got = expected.copy()
    got[7] += 1
    outcome = compare("idx", got, expected, atol=10.0, rtol=10.0)  # tolerance does not apply
    assert not outcome.ok and "output 'idx'" in outcome.reason and "[7]" in outcome.reason
    assert "got 8, expected 7" in outcome.reason


def _poisoned(shape: tuple[int, ...], bits: int) -> np.ndarray:
    out = np.zeros(shape, dtype=np.float32)
    out.view(np.uint32)[...] = bits
    return out


NAN_BITS, FINITE_BITS = 0x7FC01234, 0x4E6E6B28


def test_unwritten_one_run() -> None:
    out = _poisoned((3, 4), NAN_BITS)
    out[:, :3] = 1.0
    reason = unwritten("y", [out], [NAN_BITS])
    assert "output 'y' not fully written" in reason
    assert "3 of 12" in reason and "[0, 3]" in reason
    out[:, 3] = 2.0
    assert unwritten("y", [out], [NAN_BITS]) == ""


def test_unwritten_needs_poison_in_every_run() -> None:
    a, b = _poisoned((8,), NAN_BITS), _poisoned((8,), FINITE_BITS)
    a[:5] = 0.25
    b[:5] = 0.25
    # element 6 happens to hold the second run's poison value but was written in the first run
    a[6] = b[6] = np.uint32(FINITE_BITS).view(np.float32)
    reason = unwritten("y", [a, b], [NAN_BITS, FINITE_BITS])
    assert "2 of 8" in reason and "[5]" in reason
    # the upper 32 bits of the poison do not matter for a float32 output
    assert unwritten("y", [a, b], [NAN_BITS | (0xDEAD << 32), FINITE_BITS]) == reason


def test_runs_agree() -> None:
    first = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    assert runs_agree("y", first, first.copy(), 1e-5, 1e-5) == ""
    second = first.copy()
    second[2] = 4.0
    reason = runs_agree("y", first, second, 1e-5, 1e-5)
    assert "output 'y' differs between two runs" in reason


def test_tolerance_defaults_and_overrides() -> None:
    assert tolerance("float32", None, None) == (1e-5, 1e-5)
    assert tolerance("float16", None, None) == (1e-2, 1e-2)
    assert tolerance("float64", None, None) == (1e-10, 1e-10)
    assert tolerance("int32", None, None) == (0.0, 0.0)
    assert tolerance("float32", 1e-3, None) == (1e-3, 1e-5)
    assert tolerance("float32", None, 0.0) == (1e-5, 0.0)


# Outputs above LARGE elements are checked chunk by chunk first; whatever that pass lets
# through must be exactly what the single pass accepts.
BIG = LARGE + 3 * CHUNK // 2 + 7  # not a whole number of chunks: the last one is partial


@pytest.mark.parametrize(
    ("where", "value", "words"),
    [
        (0, 0.5, "wrong at 1 of"),
        (BIG - 1, 0.5, "wrong at 1 of"),  # in the partial last chunk
        (CHUNK, np.nan, "NaN at 1 of"),
        (LARGE, np.inf, "wrong at 1 of"),
    ],
)
def test_large_outputs_fail_as_the_single_pass_would(where: int, value: float, words: str) -> None:
    expected = np.linspace(-1, 1, BIG, dtype=np.float32)
    got = expected.copy()
    got[where] = value
    outcome = compare("y", got, expected, atol=1e-5, rtol=1e-5)
    assert not outcome.ok
    assert words in outcome.reason and f"[{where}]" in outcome.reason


def test_large_outputs_with_infinite_expectations_take_the_careful_pass() -> None:
    expected = np.linspace(-1, 1, BIG, dtype=np.float32)
    expected[BIG // 2] = np.inf
    assert compare("y", expected.copy(), expected, atol=1e-5, rtol=1e-5).ok
    got = expected.copy()
    got[BIG // 2] = 1e30
    assert not compare("y", got, expected, atol=1e-5, rtol=1e-5).ok


def test_large_outputs_within_tolerance_report_the_largest_error() -> None:
    expected = np.linspace(-1, 1, BIG)  # float64, as the reference sends mid-size outputs
    got = expected.astype(np.float32)
    got[BIG - 3] += np.float32(4e-6)
    outcome = compare("y", got, expected, atol=1e-5, rtol=1e-5)
    assert outcome.ok and outcome.max_rel_err is None
    worst = np.abs(got.astype(np.float64) - expected).max()
    assert outcome.max_abs_err == pytest.approx(worst) and worst > 3e-6
