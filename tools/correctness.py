"""Compare a candidate's raw outputs with the expected ones (pure NumPy, in the controller).

Per output: every element written (poison gone in at least one of two runs with different
poison), the two runs agree, no NaN, and each element within atol + rtol * |expected| of a
reference computed in float64 where the task allows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Default (atol, rtol) by output dtype, against a float64 reference.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-2),
    "float32": (1e-5, 1e-5),
    "float64": (1e-10, 1e-10),
}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@dataclass(frozen=True)
class Outcome:
    ok: bool
    reason: str = ""
    max_abs_err: float | None = None
    max_rel_err: float | None = None


def tolerance(dtype: str, atol: float | None, rtol: float | None) -> tuple[float, float]:
    d_atol, d_rtol = TOLERANCES.get(dtype, (0.0, 0.0))
    return (d_atol if atol is None else atol, d_rtol if rtol is None else rtol)


def poison_bits(dtype: str, bits: int) -> int:
    return bits & ((1 << (8 * np.dtype(dtype).itemsize)) - 1)


def _index(flat: int, shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat, shape)) + "]"


def unwritten(name: str, runs: list[np.ndarray], poisons: list[int]) -> str:
    """Elements still holding the poison in every run, i.e. never written."""
    if not runs:
        return ""
    mask = np.ones(runs[0].shape, dtype=bool)
    for out, bits in zip(runs, poisons, strict=True):
        mask &= out.view(UINT[out.dtype.itemsize]) == poison_bits(str(out.dtype), bits)
    n = int(mask.sum())
    if n == 0:
        return ""
    first = _index(int(np.flatnonzero(mask)[0]), runs[0].shape)
    return (
        f"output '{name}' not fully written: {n:,} of {mask.size:,} elements untouched "
        f"(first at {first})"
    )


def compare(name: str, got: np.ndarray, expected: np.ndarray, atol: float, rtol: float) -> Outcome:
    """got against expected elementwise; NaN in got never matches."""
    if got.shape != expected.shape:
        return Outcome(False, f"output '{name}' has shape {got.shape}, expected {expected.shape}")
    if got.dtype.kind in "iub" and expected.dtype.kind in "iub":
        bad = got != expected
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            return Outcome(
                False,
                f"output '{name}' wrong at {int(bad.sum()):,} of {bad.size:,} "
                f"elements (first at {_index(i, got.shape)}: got {got.flat[i]}, "
                f"expected {expected.flat[i]})",
                0.0,
                0.0,
            )
        return Outcome(True, max_abs_err=0.0, max_rel_err=0.0)
    # Large float32 outputs against float32 expectations compare in float32: the difference of
    # two close floats is exact, and it halves the memory traffic of the largest checks.
    work = np.float32 if got.dtype == expected.dtype == np.float32 else np.float64
    within = _within(got.reshape(-1), expected.reshape(-1), work, atol, rtol)
    if within is not None:  # the common case; anything else is worked out below, and described
        return Outcome(True, max_abs_err=within[0], max_rel_err=within[1])
    g = got.astype(work, copy=False)
    e = expected.astype(work, copy=False)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.subtract(g, e)
        np.abs(err, out=err)
        bound = np.abs(e)
        bound *= rtol
        bound += atol
        finite = bool(np.isfinite(bound).all())
        bad = ~(err <= bound)  # NaN in got (or in the error) is bad
        if not finite:
            same_inf = np.isinf(g) & (g == e)
            err[same_inf] = 0.0
            bad = ~(err <= atol + rtol * np.abs(e))
            bad |= np.isinf(e) & (g != e)  # an infinite bound would accept anything
        bad |= np.isnan(err) & ~(np.isinf(g) & (g == e))
    if bad.any():
        nan = np.isnan(g)
        if nan.any():
            i = int(np.flatnonzero(nan)[0])
            return Outcome(
                False,
                f"output '{name}' has NaN at {int(nan.sum()):,} of {nan.size:,} "
                f"elements (first at {_index(i, got.shape)})",
            )
        i = int(np.flatnonzero(bad)[0])
        worst = int(np.argmax(np.where(bad, np.nan_to_num(err, nan=np.inf), -1.0)))
        return Outcome(
            False,
            f"output '{name}' wrong at {int(bad.sum()):,} of {bad.size:,} elements "
            f"(max abs error {float(err.flat[worst]):.3g} at {_index(worst, got.shape)}: "
            f"got {float(g.flat[worst]):.6g}, expected {float(e.flat[worst]):.6g}; first at "
            f"{_index(i, got.shape)}; tolerance atol={atol:g} rtol={rtol:g})",
            float(np.nanmax(err)) if err.size else 0.0,
            _max_rel(err, e),
        )
    return Outcome(
        True, max_abs_err=float(err.max()) if err.size else 0.0, max_rel_err=_max_rel(err, e)
    )


# Outputs are first checked a chunk at a time in buffers that stay in cache: whole-array
# temporaries of a 256 MB output are fresh pages each time, and faulting them in cost more than
# the arithmetic (0.15 to 1.9 s per compare of 64M floats, against well under 0.1 s chunked).
CHUNK = 1 << 20
LARGE = 4 << 20  # elements: above this no relative error is reported (it would cost a pass)


def _within(
    g: np.ndarray, e: np.ndarray, work: type, atol: float, rtol: float
) -> tuple[float, float | None] | None:
    """(largest absolute error, largest relative error) if every element is within tolerance
    and every bound is finite, else None. Flat arrays, chunk by chunk."""
    err: np.ndarray = np.empty(min(CHUNK, g.size), dtype=work)
    bound: np.ndarray = np.empty_like(err)
    flags = np.empty(err.size, dtype=bool)
    worst, worst_rel = 0.0, 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, g.size, CHUNK):
            gs, es = g[start : start + CHUNK], e[start : start + CHUNK]
            n = gs.size
            er, bo, fl = err[:n], bound[:n], flags[:n]
            np.subtract(gs, es, out=er, dtype=work)
            np.abs(er, out=er)
            np.abs(es, out=bo, dtype=work)
            bo *= rtol
            bo += atol
            if not np.isfinite(bo, out=fl).all() or not np.less_equal(er, bo, out=fl).all():
                return None
            worst = max(worst, float(er.max()))
            if g.size <= LARGE:
                worst_rel = max(worst_rel, _max_rel(er, es) or 0.0)
    return worst, (worst_rel if g.size <= LARGE else None)


def _max_rel(err: np.ndarray, e: np.ndarray) -> float | None:
    """Largest relative error; None for very large outputs, where it would cost another pass."""
    if err.size == 0:
        return 0.0
    if err.size > LARGE:
        return None
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        rel = err.astype(np.float64) / np.maximum(
            np.abs(e.astype(np.float64)), np.finfo(np.float64).tiny
        )
    return float(np.nanmax(rel)) if not np.isnan(rel).all() else None


def runs_agree(name: str, first: np.ndarray, second: np.ndarray, atol: float, rtol: float) -> str:
    """Two runs on the same inputs with different poison must give the same answer."""
    outcome = compare(name, second, first, atol, rtol)
    if outcome.ok:
        return ""
    return (
        f"output '{name}' differs between two runs with different poison: the kernel reads "
        f"memory it did not write, or races"
    )
