"""A task's inputs and starting outputs on the CPU, with NumPy: what the C++ reference of a cpp
task is called on, where no GPU is.

The inputs are the verifier's own: `generate` gives, from the same seed, the bits that
runners.generate makes on the GPU (its kernel kw_generate in kernels.py: splitmix64 of the
seed and the element's index, no state), so that a reference computed here and a candidate run
there see the same inputs. Uniform, positive and randint inputs are bit for bit the GPU's (its
`a + (b - a) * u` is one fused multiply-add, emulated exactly here); normal ones go through
log and cospi, whose last bits may differ between CUDA's math library and NumPy's (a few ulps
of float64: below any float32 input's rounding, but for the odd one on a rounding edge).

An output's starting content is the poison the verifier fills it with, unless the task
declares the value its code reads before writing (`init = "fill:V"`): then it starts as V.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .fills import fill_value

_MASK64 = (1 << 64) - 1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
# The poisons a C++ reference's outputs start as (plan.poisons' form: a quiet NaN at 2, 4 and
# 8 bytes, then its complement): two runs that differ in them show an output read before it is
# written, or left unwritten.
POISONS = (0x7FF8A5A57FC07E5A, ~0x7FF8A5A57FC07E5A & _MASK64)
# Elements per block: the generator's temporaries stay small whatever the array's size.
_BLOCK = 1 << 20


def _mix(z: np.ndarray) -> np.ndarray:
    """kw_mix: splitmix64's finalizer, on uint64 arrays (wrapping arithmetic). In place on one
    fresh array and one temporary: a new array an operation took three times as long."""
    z = z + _GOLDEN
    t = z >> np.uint64(30)
    z ^= t
    z *= _MIX1
    np.right_shift(z, np.uint64(27), out=t)
    z ^= t
    z *= _MIX2
    np.right_shift(z, np.uint64(31), out=t)
    z ^= t
    return z


def _mantissas(seed: int, index: np.ndarray) -> np.ndarray:
    """kw_unit's 53 random bits for (seed, index): unit is these times 2**-53."""
    with np.errstate(over="ignore"):
        bits = _mix(np.uint64(seed & _MASK64) ^ _mix(index.astype(np.uint64)))
    return bits >> np.uint64(11)


def unit(seed: int, index: np.ndarray) -> np.ndarray:
    """kw_unit: a uniform double in [0, 1) from (seed, index), a multiple of 2**-53."""
    return _mantissas(seed, index).astype(np.float64) * (1.0 / 9007199254740992.0)


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    big = np.abs(a) > 2.0**995  # where 2**27 a would overflow: split a 2**-28, exactly scaled
    s = np.where(big, a * 2.0**-28, a)
    c = 134217729.0 * s  # 2**27 + 1 (Veltkamp)
    hi = c - (c - s)
    hi = np.where(big, hi * 2.0**28, hi)
    return hi, a - hi


def _two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def fma(x: Any, y: Any, z: Any) -> np.ndarray:
    """x * y + z rounded once, as the GPU's fused multiply-add (float64 arrays; no overflow or
    underflow in the product or the sum): Boldo and Melquiond's emulation, the exact product
    and sum, their tails added rounding to odd, then one rounding to nearest."""
    x, y, z = (np.asarray(v, dtype=np.float64) for v in (x, y, z))
    uh, ul = _two_prod(x, y)
    th, tl = _two_sum(z, uh)
    v, err = _two_sum(tl, ul)
    even = (v.view(np.uint64) & np.uint64(1)) == 0
    inexact = (err != 0) & even
    v = np.where(inexact, np.nextafter(v, np.copysign(np.inf, err)), v)  # round to odd
    return th + v


def cospi(x: np.ndarray) -> np.ndarray:
    """cos(pi x) as CUDA's cospi computes it, to an ulp or two everywhere (pure): reduced to
    |r| <= 1/4 first (exactly), so the rounding of pi x never meets the steep part of the
    curve. np.cos(np.pi * x) was off by up to 6e-11 relative near the zeros, where the GPU's is
    not."""
    n = np.rint(2.0 * x)
    r = x - n / 2.0  # exact: x and n / 2 are within a factor of two of each other, or r is x
    q = n.astype(np.int64) & 3  # the quadrant: cos, -sin, -cos, sin of pi r
    pr = np.pi * r
    odd = (q & 1).astype(bool)
    out = np.cos(pr, where=~odd, out=np.empty_like(pr))  # each element's one of the two only
    np.sin(pr, where=odd, out=out)
    return np.negative(out, where=(q == 1) | (q == 2), out=out)


def _fixed_point(w: float, a: float) -> tuple[int, int, int] | None:
    """(k1, k2, shift) with w * m * 2**-53 + a == (k1 * m + k2) * 2**-shift exactly for every
    53-bit m, in int64, or None. Then fma(w, u, a) is that integer converted to a double
    (rounded once, to nearest even, as the fused add rounds) and scaled by a power of two
    (exact): the bounds in use (-1 to 1, -100 to 100, -1000 to 1000, 0.5 to 2) take this way,
    at a tenth of the emulation's cost."""
    if not (math.isfinite(w) and math.isfinite(a)):
        return None
    wn, wd = w.as_integer_ratio()  # the denominators are powers of two
    an, ad = a.as_integer_ratio()
    wd <<= 53  # w * m * 2**-53 is wn * m / wd; wn's factors of two move into wd while they can
    zeros = min((wn & -wn).bit_length() - 1 if wn else 0, wd.bit_length() - 1)
    wn, wd = wn >> zeros, wd >> zeros
    d = max(wd, ad)
    k1, k2 = wn * (d // wd), an * (d // ad)
    shift = d.bit_length() - 1
    if abs(k1) * ((1 << 53) - 1) + abs(k2) >= 1 << 63 or shift > 1000:
        return None
    return k1, k2, shift


def values(n: int, seed: int, kind: int, a: float, b: float, start: int = 0) -> np.ndarray:
    """Elements start..start+n of kw_generate's float64 values for (seed, kind, a, b), before
    they are stored in the argument's dtype."""
    i = np.arange(start, start + n, dtype=np.uint64)
    if kind == 1:  # normal: a + b * sqrt(-2 log(1 - u)) * cospi(2 u2), its last add fused
        u = unit(seed, np.uint64(2) * i)
        u2 = unit(seed, np.uint64(2) * i + np.uint64(1))
        radius = b * np.sqrt(-2.0 * np.log(1.0 - u))
        if a == 0.0:  # fma(x, y, 0) rounds x * y once, as x * y + 0 does (signed zeros too)
            return radius * cospi(2.0 * u2) + 0.0
        return fma(radius, cospi(2.0 * u2), np.full(n, a))
    m = _mantissas(seed, np.uint64(2) * i)
    fixed = _fixed_point(b - a, a)
    if fixed is not None:  # a + (b - a) * u, fused, in exact integers
        k1, k2, shift = fixed
        exact = m.view(np.int64) * np.int64(k1) + np.int64(k2)
        v = exact.astype(np.float64) * 2.0**-shift
    else:
        u = m.astype(np.float64) * (1.0 / 9007199254740992.0)
        v = fma(np.full(n, b - a), u, np.full(n, a))
    if kind == 2:  # integers in [a, b)
        v = np.floor(v)
        v = np.where(v >= b, b - 1, v)
    return v


def distribution(init: str, dtype: str) -> tuple[int, float, float]:
    """(kind, a, b) of the generator for an argument's `init`: the verifier's own mapping."""
    from .runners import distribution as gpu_distribution  # pure Python; runners needs CuPy

    return gpu_distribution(init, dtype)


def generate(dtype: str, shape: tuple[int, ...], seed: int, init: str) -> np.ndarray:
    """One argument's input from `seed`: runners.generate's bits (see the module's docstring).
    `init` may also be "fill:V": every element V."""
    n = math.prod(shape)
    fill = fill_value(init)
    if fill is not None:
        return np.full(shape, fill, dtype=dtype)
    kind, a, b = distribution(init, dtype)
    out = np.empty(n, dtype=dtype)
    for start in range(0, n, _BLOCK):
        stop = min(n, start + _BLOCK)
        with np.errstate(invalid="ignore", over="ignore"):
            out[start:stop] = values(stop - start, seed, kind, a, b, start).astype(dtype)
    return out.reshape(shape)


def poisoned(shape: tuple[int, ...], dtype: str, bits: int) -> np.ndarray:
    """An array of `shape` whose every element holds `bits` (cut to the element's width), as
    runners.poisoned fills an output on the GPU."""
    itemsize = np.dtype(dtype).itemsize
    out = np.empty(shape, dtype=dtype)
    out.view(_UINT[itemsize]).fill(bits & ((1 << (8 * itemsize)) - 1))
    return out


def starting_output(dtype: str, shape: tuple[int, ...], init: str, poison: int) -> np.ndarray:
    """An `out` argument before the call: its declared value (fill:V), else the poison."""
    fill = fill_value(init)
    return np.full(shape, fill, dtype=dtype) if fill is not None else poisoned(shape, dtype, poison)


def arg_seed(seed: int, index: int) -> int:
    """The seed of the task's `index`-th argument (CudaRunner.inputs' rule)."""
    return seed * 7919 + index
