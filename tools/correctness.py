"""Compare a candidate's raw outputs with the expected ones (pure NumPy, in the controller).

Per output: every element written (poison gone in at least one of two runs with different
poison), the two runs agree, no NaN, and each element within atol + rtol * |expected| of a
reference computed in float64 where the task allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    if not (got.dtype.kind in "iub" and expected.dtype.kind in "iub"):
        work = _work(got.dtype, expected.dtype)
        within = _within(got.reshape(-1), expected.reshape(-1), work, atol, rtol)
        if within is not None:  # the common case; anything else is worked out below, and described
            return Outcome(True, max_abs_err=within[0], max_rel_err=within[1])
    return outcome(name, got.shape, facts(np, got, expected, atol, rtol), atol, rtol)


def _work(got: Any, expected: Any) -> Any:
    # Large float32 outputs against float32 expectations compare in float32: the difference of
    # two close floats is exact, and it halves the memory traffic of the largest checks.
    return np.float32 if got == expected == np.float32 else np.float64


def facts(xp: Any, got: Any, expected: Any, atol: float, rtol: float) -> dict[str, Any]:
    """What a comparison of got with expected found, as plain numbers: computed with `xp`,
    NumPy here in the controller or CuPy in the reference's worker, where a large trial's
    outputs stay on the GPU (devcompare.py). Same shapes; `outcome` words it."""
    g_flat, e_flat = got.reshape(-1), expected.reshape(-1)
    size = int(g_flat.size)

    def at(a: Any, i: int) -> Any:
        return a[i].item()

    if got.dtype.kind in "iub" and expected.dtype.kind in "iub":
        bad = g_flat != e_flat
        n_bad = int(bad.sum())
        if not n_bad:
            return {"kind": "int", "n_bad": 0, "size": size}
        i = int(xp.flatnonzero(bad)[0])
        return {
            "kind": "int",
            "n_bad": n_bad,
            "size": size,
            "first": i,
            "got": at(g_flat, i),
            "exp": at(e_flat, i),
        }
    work = _work(got.dtype, expected.dtype)
    g = g_flat.astype(work, copy=False)
    e = e_flat.astype(work, copy=False)
    with np.errstate(invalid="ignore", over="ignore"):
        err = xp.subtract(g, e)
        xp.abs(err, out=err)
        bound = xp.abs(e)
        bound *= rtol
        bound += atol
        finite = bool(xp.isfinite(bound).all())
        bad = ~(err <= bound)  # NaN in got (or in the error) is bad
        if not finite:
            same_inf = xp.isinf(g) & (g == e)
            err[same_inf] = 0.0
            bad = ~(err <= atol + rtol * xp.abs(e))
            bad |= xp.isinf(e) & (g != e)  # an infinite bound would accept anything
        bad |= xp.isnan(err) & ~(xp.isinf(g) & (g == e))
    n_bad = int(bad.sum())
    out: dict[str, Any] = {"kind": "float", "n_bad": n_bad, "size": size}
    if n_bad:
        nan = xp.isnan(g)
        n_nan = int(nan.sum())
        if n_nan:
            return {**out, "n_nan": n_nan, "first": int(xp.flatnonzero(nan)[0])}
        worst = int(xp.argmax(xp.where(bad, xp.nan_to_num(err, nan=np.inf), -1.0)))
        return {
            **out,
            "first": int(xp.flatnonzero(bad)[0]),
            "worst": worst,
            "err": at(err, worst),
            "got": at(g, worst),
            "exp": at(e, worst),
            "max_abs": float(xp.nanmax(err)) if size else 0.0,
            "max_rel": _max_rel(err, e, xp),
        }
    return {**out, "max_abs": float(err.max()) if size else 0.0, "max_rel": _max_rel(err, e, xp)}


def outcome(
    name: str, shape: tuple[int, ...], found: dict[str, Any], atol: float, rtol: float
) -> Outcome:
    """The verdict on one output from what `facts` found."""
    n_bad, size = int(found["n_bad"]), int(found["size"])
    if found["kind"] == "int":
        if not n_bad:
            return Outcome(True, max_abs_err=0.0, max_rel_err=0.0)
        return Outcome(
            False,
            f"output '{name}' wrong at {n_bad:,} of {size:,} elements (first at "
            f"{_index(int(found['first']), shape)}: got {found['got']}, expected {found['exp']})",
            0.0,
            0.0,
        )
    if not n_bad:
        return Outcome(True, max_abs_err=found["max_abs"], max_rel_err=found["max_rel"])
    if found.get("n_nan"):
        return Outcome(
            False,
            f"output '{name}' has NaN at {int(found['n_nan']):,} of {size:,} "
            f"elements (first at {_index(int(found['first']), shape)})",
        )
    return Outcome(
        False,
        f"output '{name}' wrong at {n_bad:,} of {size:,} elements "
        f"(max abs error {float(found['err']):.3g} at {_index(int(found['worst']), shape)}: "
        f"got {float(found['got']):.6g}, expected {float(found['exp']):.6g}; first at "
        f"{_index(int(found['first']), shape)}; tolerance atol={atol:g} rtol={rtol:g})",
        found["max_abs"],
        found["max_rel"],
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


def _max_rel(err: Any, e: Any, xp: Any = np) -> float | None:
    """Largest relative error; None for very large outputs, where it would cost another pass."""
    if err.size == 0:
        return 0.0
    if err.size > LARGE:
        return None
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        rel = err.astype(xp.float64) / xp.maximum(
            xp.abs(e.astype(xp.float64)), np.finfo(np.float64).tiny
        )
    return float(xp.nanmax(rel)) if not bool(xp.isnan(rel).all()) else None


def runs_agree(name: str, first: np.ndarray, second: np.ndarray, atol: float, rtol: float) -> str:
    """Two runs on the same inputs with different poison must give the same answer."""
    outcome = compare(name, second, first, atol, rtol)
    return "" if outcome.ok else runs_differ(name)


def runs_differ(name: str) -> str:
    return (
        f"output '{name}' differs between two runs with different poison: the kernel reads "
        f"memory it did not write, or races"
    )
