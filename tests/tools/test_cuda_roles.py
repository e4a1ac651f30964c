"""The CUDA task's worker-side measures that need no GPU to check (NumPy arrays stand in)."""

from __future__ import annotations

import math

import numpy as np

from kernelwright.tools.cuda_roles import worst_miss


def test_the_worst_miss_a_chunk_at_a_time_is_the_whole_outputs() -> None:
    rng = np.random.default_rng(3)
    want = rng.standard_normal(10_007)
    got = (want + rng.standard_normal(want.size) * 1e-4).astype(np.float32)
    whole = float(np.max(np.abs(got.astype(np.float64) - want) / (1e-3 + 1e-4 * np.abs(want))))
    for chunk in (7, 1000, 1 << 22):
        assert worst_miss(got, want, 1e-3, 1e-4, chunk) == whole
    # the worst element in the last, short chunk is seen
    got[-1] = want[-1] + 1.0
    assert worst_miss(got, want, 1e-3, 1e-4, 1000) > 900


def test_nan_against_a_finite_value_is_unknown_and_non_finite_truth_is_left_out() -> None:
    want = np.array([1.0, np.inf, np.nan, 2.0])
    got = np.array([1.0, 5.0, 7.0, 2.0], dtype=np.float32)
    assert worst_miss(got, want, 1e-3, 0.0, 2) == 0.0  # where the truth is not finite: out
    got[3] = np.nan
    assert math.isinf(worst_miss(got, want, 1e-3, 0.0, 2))
    assert worst_miss(np.zeros(0, np.float32), np.zeros(0), 1e-3, 0.0) == 0.0
