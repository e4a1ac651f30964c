"""Every timed output, compared with the reference's on the same inputs, without moving it.

Both workers reduce each output to a few numbers (kernels.py): two sums of its finite elements
with random signs, the sum of |x| and of x^2, the counts of NaN and infinities, and where the
non-finite ones are. The signs come from a seed the controller sends with each round, so no
worker knows them before its inputs exist. A signed sum over the whole output can only match
the reference's if (nearly) every element does: to produce it, a candidate must have produced
the output, or done as much work. The controller compares:

- the counts and positions of infinities exactly, and no NaN at all;
- the sums of |x| and x^2 within what honest differences allow (triangle inequalities), and
  each signed sum within Z times the bound on the sum of honest differences: if every element
  is within t_i = k (atol + rtol |r_i|) of the reference kernel's, the difference of two such
  sums is a sum of +-d_i with |d_i| <= t_i, and by Hoeffding's inequality exceeds
  Z sqrt(sum t_i^2) with probability at most 2 exp(-Z^2 / 2). k is 1 plus the reference
  kernel's own miss of the truth the trials hold the candidate to, in tolerances (the
  candidate within one tolerance of the truth, the reference within its miss): 1 where the
  reference is the truth (a CUDA task's own kernel, a C++ function), 1 plus what the
  reference's worker measured in the trials otherwise, and never more than 2. A flat k = 2
  let a candidate be 1.5 tolerances off in every timed call (TF32 tensor cores there,
  exact FP32 in the trials) and read correct;
- over all rounds, the mean of z^2 against 1 (its mean for honest differences is at most 1),
  which catches errors a little above tolerance spread over every call.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from typing import Any

Z_MAX = 6.0  # a false alarm per signed sum: at most 2 exp(-18), about 3e-8
FIELDS = ("s0", "s1", "abs", "sq", "nan", "pinf", "ninf", "where")


def sketch(ptr: int, n: int, dtype: str, seeds: tuple[int, int]) -> list[float]:
    """The sketch of `n` contiguous elements of `dtype` at device address `ptr` (worker).
    Every block writes all its fields, so the buffers are reused call after call: a timing
    round's harness work is kept small (what two processes take for it differs in proportion)."""
    import numpy as np

    from . import kernels

    part, host = _buffers()
    kernels.function(kernels.SKETCH[dtype])(
        (kernels.SKETCH_BLOCKS,),
        (256,),
        (np.uint64(ptr), np.uint64(n), np.uint64(seeds[0]), np.uint64(seeds[1]), part),
    )
    part.get(out=host)
    return host.sum(axis=0).tolist()


def sketch_of(values: Any, seeds: tuple[int, int]) -> list[float]:
    """What kw_sketch computes, in NumPy, on the host (pure): the same fields from the same sign
    seeds (tests/gpu/test_harness_gpu.py holds the two equal on a GPU). For outputs computed
    on the CPU, as a C++ function's are."""
    import numpy as np

    idx = np.arange(np.size(values), dtype=np.uint64)

    def mix(z: Any) -> Any:
        with np.errstate(over="ignore"):
            z = z + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            return z ^ (z >> np.uint64(31))

    v = np.asarray(values).astype(np.float64).ravel()
    finite = np.isfinite(v)
    w = [np.where(mix(np.uint64(s) ^ mix(idx)) & np.uint64(1), 1.0, -1.0) for s in seeds]
    f = np.where(finite, v, 0.0)
    code = np.where(np.isnan(v), 1.0, np.where(v > 0, 2.0, 3.0)) * ~finite
    return [
        float((w[0] * f).sum()),
        float((w[1] * f).sum()),
        float(np.abs(f).sum()),
        float((f * f).sum()),
        float(np.isnan(v).sum()),
        float(np.isposinf(v).sum()),
        float(np.isneginf(v).sum()),
        float((w[0] * code).sum()),
    ]


@functools.cache
def _buffers() -> tuple[Any, Any]:
    """The blocks' partial sums, on the device and on the host: made once per worker."""
    import cupy
    import numpy as np

    from . import kernels

    shape = (kernels.SKETCH_BLOCKS, kernels.SKETCH_FIELDS)
    return cupy.empty(shape, dtype=cupy.float64), np.empty(shape, dtype=np.float64)


def problem(
    name: str,
    cand: Sequence[float],
    ref: Sequence[float],
    n: int,
    atol: float,
    rtol: float,
    against: str = "the reference kernel's",
    times: float = 1.0,
) -> tuple[str, list[float]]:
    """Why the candidate's output cannot be the reference's within tolerance ("" if it can),
    and the signed sums' z scores (pure). `against` names whose output `ref` is; `times`: how
    many tolerances an honest candidate's element may be from it (honest_times), 1 to 2."""
    times = min(2.0, max(1.0, times)) if times == times else 2.0
    if len(cand) != len(FIELDS) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in cand
    ):  # every sum an honest worker sends is finite: it counts NaN and infinities apart
        return f"{name}: the worker sent no valid sketch", []
    c, r = dict(zip(FIELDS, cand, strict=True)), dict(zip(FIELDS, ref, strict=True))
    if c["nan"]:
        return f"{name} has NaN at {int(c['nan']):,} elements", []
    if (c["pinf"], c["ninf"], c["where"]) != (r["pinf"], r["ninf"], r["where"]):
        return (
            f"{name} has {int(c['pinf'] + c['ninf']):,} infinities where the reference has "
            f"{int(r['pinf'] + r['ninf']):,} (or at other places)"
        ), []
    finite = max(0.0, n - r["nan"] - r["pinf"] - r["ninf"])
    bound = times * math.sqrt(
        max(0.0, finite * atol**2 + 2 * atol * rtol * r["abs"] + rtol**2 * r["sq"])
    )
    # Both sums are rounded in float64, each in its own order of values: a little slack, from
    # the reference's |x| alone (twice it: an honest output's is as large). The candidate's own
    # sums never widen it: zeros with a +-3e38 pair where the round's signs agree had bought
    # a slack of 4e25, and a worker that reported a huge "abs" one as large.
    rounding = (n / (264 * 256) + 300) * 2.3e-16
    slack = rounding * 2 * abs(r["abs"]) + 1e-300
    # The candidate's sums of |x| and x^2 are its output's too: if every element is within
    # t_i = k (atol + rtol |r_i|) of the reference's, sum |x| is within sum t_i of the
    # reference's, and sqrt(sum x^2) within sqrt(sum t_i^2) = bound (triangle inequalities).
    spread = times * (finite * atol + rtol * abs(r["abs"]))
    if not abs(c["abs"] - r["abs"]) <= spread + slack:  # NaN included
        return (
            f"{name} differs from {against} on the same inputs: its sum of |x| over all "
            f"{n:,} elements is {c['abs']:.6g} against {r['abs']:.6g}, further apart than "
            f"outputs within tolerance can be (atol={atol:g} rtol={rtol:g})"
        ), []
    norm = math.sqrt(c["sq"]) if c["sq"] >= 0 else math.inf
    ref_norm = math.sqrt(max(0.0, r["sq"]))
    if not abs(norm - ref_norm) <= bound + rounding * 2 * ref_norm + 1e-300:
        return (
            f"{name} differs from {against} on the same inputs: its root sum of squares "
            f"over all {n:,} elements is {norm:.6g} against {ref_norm:.6g}, further apart "
            f"than outputs within tolerance can be (atol={atol:g} rtol={rtol:g})"
        ), []
    zs = [(c[k] - r[k]) / (bound + slack) for k in ("s0", "s1")]
    worst = max(abs(z) for z in zs)
    if not worst <= Z_MAX:  # NaN included
        return (
            f"{name} differs from {against} on the same inputs: a signed sum over "
            f"all {n:,} elements is off by {worst:.3g} times the bound for outputs within "
            f"tolerance (atol={atol:g} rtol={rtol:g})"
        ), zs
    return "", zs


def _mean_square(zs: Sequence[float]) -> float:
    return statistics.fmean(z * z for z in zs)


def chance_limit(m: int) -> float:
    """The most mean z^2 over m signed sums that honest outputs show but by rare chance: 1
    and 3 of its standard deviations (at most sqrt(2 / m)) above it."""
    return 1.0 + 3.0 * math.sqrt(2.0 / max(m, 1))


def drift_limit(m: int) -> float:
    """The most mean z^2 over m signed sums that outputs within tolerance can show: their mean
    is at most 1, and 6 of its standard deviations (at most sqrt(2 / m)) above it."""
    return 1.0 + 6.0 * math.sqrt(2.0 / m) + 0.05


def drift_undecided(zs: Sequence[float]) -> bool:
    """Whether more timed calls would decide the drift test (pure): the mean z^2 is above the
    most honest differences give on average (1) and not yet past the limit for this many
    signed sums, which falls toward 1.05 as they grow. A matmul on TF32 tensor cores in its
    timed calls alone read a mean of 2.49 over 64 signed sums, past that limit (2.11), in one
    run of two, and passed the other: its check had stopped at 32 calls (H200)."""
    return bool(zs) and 1.0 < _mean_square(zs) <= drift_limit(max(len(zs), 8))


def drift_suspect(zs: Sequence[float]) -> bool:
    """Whether timed outputs whose drift test is undecided are further from the reference's
    than honest ones would be by chance (pure): a mean z^2 above 1 + 3 sqrt(2 / m). Honest
    outputs' mean is at most 1, yet over few signed sums its sample passes 1 often (at a true
    0.81, over 4 sums 29% of the time); past that threshold, 0.4% of the time at 0.81 over 4
    sums, and 1.1% over 4 to 8 sums (0.4% over 52) for outputs at the very edge of the
    tolerance everywhere (a true 1). Not past the drift limit, which drift_problem decides.
    The price: a candidate 1.3 tolerances off everywhere (1.69) is suspect over 52 sums only
    about half the time, 1.25 off rarely."""
    m = len(zs)
    return bool(zs) and chance_limit(m) < _mean_square(zs) <= drift_limit(max(m, 8))


def drift_left_undecided(zs: Sequence[float]) -> str:
    """Why timed outputs whose drift test the rounds ended before deciding, suspect
    (drift_suspect), cannot be vouched for (pure)."""
    m = len(zs)
    mean = _mean_square(zs) if zs else math.nan
    return (
        f"implausible: during timing the outputs were further from the reference's than "
        f"outputs within tolerance give (mean z^2 {mean:.2f} over {m} signed sums, more than "
        f"{chance_limit(m):.2f} for this many by chance), and the rounds ended before enough "
        f"calls could decide it (wrong past {drift_limit(max(m, 8)):.2f})"
    )


def drift_problem(zs: Sequence[float], against: str = "the reference kernel's") -> str:
    """Over all timed calls: honest differences give a mean z^2 of at most 1 (pure). `against`
    names whose outputs the candidate's were held to."""
    m = len(zs)
    if m < 8:
        return ""
    mean = _mean_square(zs)
    limit = drift_limit(m)
    if mean > limit:
        return (
            f"during timing: outputs are consistently further from {against} than "
            f"the tolerance allows (mean z^2 {mean:.2f} over {m} signed sums, at most "
            f"{limit:.2f} for outputs within tolerance)"
        )
    return ""
