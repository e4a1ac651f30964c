"""A cpp task's inputs on the CPU are the verifier's: the bits runners.generate makes on the GPU
(kernels.py's kw_generate, whose `a + (b - a) * u` is one fused multiply-add), checked here
against the same generator in C++ with std::fma; and outputs start as their poison or their
declared value."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from kernelwright.tools import cpp_inputs, fills
from kernelwright.tools.kernels import SOURCE

REPLICA = r"""
#include <cmath>
static inline unsigned long long kw_mix(unsigned long long z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline double kw_unit(unsigned long long seed, unsigned long long i) {
    return (double)(kw_mix(seed ^ kw_mix(i)) >> 11) * (1.0 / 9007199254740992.0);
}
// kw_generate's uniform (0) and integer (2) kinds, its multiply-add fused as on the GPU
extern "C" void generate(double* out, unsigned long long n, unsigned long long seed, int kind,
                         double a, double b) {
    for (unsigned long long i = 0; i < n; ++i) {
        double v = std::fma(b - a, kw_unit(seed, 2 * i), a);
        if (kind == 2) { v = std::floor(v); if (v >= b) v = b - 1; }
        out[i] = v;
    }
}
extern "C" void fmas(const double* x, const double* y, const double* z, double* out, long n) {
    for (long i = 0; i < n; ++i) out[i] = std::fma(x[i], y[i], z[i]);
}
"""


@pytest.fixture(scope="module")
def replica(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    d = tmp_path_factory.mktemp("replica")
    (d / "r.cpp").write_text(REPLICA)
    cmd = ["g++", "-O2", "-ffp-contract=off", "-shared", "-fPIC", "-o", "r.so", "r.cpp"]
    subprocess.run(cmd, cwd=d, check=True)
    return ctypes.CDLL(str(d / "r.so"))


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


def test_the_replica_is_the_gpu_generators_arithmetic() -> None:
    """The C++ replica's lines are kernels.py's (a change there must reach cpp_inputs.py)."""
    for line in (
        "z += 0x9E3779B97F4A7C15ull;",
        "z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;",
        "z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;",
        "return (double)(kw_mix(seed ^ kw_mix(i)) >> 11) * (1.0 / 9007199254740992.0);",
        "double u = kw_unit(seed, 2 * i), v;",
        "v = floor(a + (b - a) * u);",
        "v = a + (b - a) * u;",
    ):
        assert line in SOURCE, line


def test_fma_is_rounded_once(replica: ctypes.CDLL) -> None:
    rng = np.random.default_rng(0)
    n = 200_000
    x, y = rng.standard_normal(n) * 1e3, rng.standard_normal(n)
    for z in (rng.standard_normal(n), -(x * y), rng.standard_normal(n) * 1e-9):
        want = np.empty(n)
        replica.fmas(_ptr(x), _ptr(y), _ptr(z), _ptr(want), ctypes.c_long(n))
        got = cpp_inputs.fma(x, y, z)
        assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
        assert not np.array_equal((x * y + z).view(np.uint64), want.view(np.uint64))


@pytest.mark.parametrize(
    ("init", "dtype"),
    [
        ("uniform", "float32"),
        ("uniform", "float64"),
        ("positive", "float64"),
        ("uniform:-1e4:1e4", "float64"),
        ("uniform:0.1:0.7", "float64"),  # no exact integer form: the fma's emulation
        ("uniform:-1e300:1e300", "float64"),  # split without overflow
        ("randint:-100:100", "int32"),
        ("randint:0:2", "uint8"),
        ("uniform", "int64"),
        ("uniform", "uint64"),
    ],
)
def test_inputs_are_the_gpu_generators_bits(replica: ctypes.CDLL, init: str, dtype: str) -> None:
    n, seed = 100_003, 77 * 7919 + 3
    kind, a, b = cpp_inputs.distribution(init, dtype)
    raw = np.empty(n)
    replica.generate(
        _ptr(raw),
        ctypes.c_ulonglong(n),
        ctypes.c_ulonglong(seed),
        ctypes.c_int(kind),
        ctypes.c_double(a),
        ctypes.c_double(b),
    )
    want = raw.astype(dtype)
    got = cpp_inputs.generate(dtype, (n,), seed, init)
    assert got.dtype == np.dtype(dtype)
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize(
    ("a", "b"),
    [(-1.0, 1.0), (0.5, 2.0), (-100.0, 100.0), (-1000.0, 1000.0), (0.0, 256.0), (-1e4, 1e4),
     (-0.375, 5.5), (3.0, 3.0), (-2.0**40, 2.0**40), (1e-9, 1.0)],
)  # fmt: skip
def test_integer_way_is_the_fused_multiply_add(a: float, b: float) -> None:
    """The bounds in use take the exact integer way, and it gives the emulated fma's bits,
    including at the ends of the range (m = 0 and m = 2**53 - 1)."""
    fixed = cpp_inputs._fixed_point(b - a, a)
    if (a, b) != (1e-9, 1.0):
        assert fixed is not None
    n = 100_000
    i = np.arange(n, dtype=np.uint64)
    m = cpp_inputs._mantissas(99, i)
    m[:2] = (0, (1 << 53) - 1)
    u = m.astype(np.float64) * 2.0**-53
    want = cpp_inputs.fma(np.full(n, b - a), u, np.full(n, a))
    if fixed is None:
        return
    k1, k2, shift = fixed
    got = (m.view(np.int64) * np.int64(k1) + np.int64(k2)).astype(np.float64) * 2.0**-shift
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))


def test_generation_in_blocks_matches_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = cpp_inputs.generate("float32", (1000,), 5, "normal")
    monkeypatch.setattr(cpp_inputs, "_BLOCK", 64)
    assert np.array_equal(cpp_inputs.generate("float32", (10, 100), 5, "normal").ravel(), whole)
    assert abs(float(whole.mean())) < 0.2 and 0.8 < float(whole.std()) < 1.2


def test_outputs_start_as_poison_or_as_declared() -> None:
    p = cpp_inputs.starting_output("float32", (3,), "uniform", cpp_inputs.POISONS[0])
    assert np.isnan(p).all()
    q = cpp_inputs.starting_output("float32", (3,), "uniform", cpp_inputs.POISONS[1])
    assert not np.array_equal(p.view(np.uint32), q.view(np.uint32))
    assert cpp_inputs.starting_output("int32", (2,), "fill:7", 0).tolist() == [7, 7]
    assert cpp_inputs.starting_output("float32", (1,), "fill:-inf", 0)[0] == -np.inf
    assert fills.is_fill("fill:0") and fills.is_fill("fill:1.5")
    assert not fills.is_fill("fill:x") and not fills.is_fill("uniform")
    assert cpp_inputs.generate("int16", (4,), 1, "fill:3").tolist() == [3, 3, 3, 3]


def test_the_module_reads_no_gpu(tmp_path: Path) -> None:
    """cpp_inputs needs NumPy alone: runners.py (CuPy) only for its pure `distribution`."""
    text = Path(cpp_inputs.__file__).read_text()
    assert "import cupy" not in text


def test_cospi_is_accurate_near_its_zeros() -> None:
    """CUDA's cospi is accurate to an ulp or two everywhere; cos(pi * x) is not near the zeros,
    where the rounding of pi * x dominates (normal inputs were 6e-11 off the GPU's there)."""
    from kernelwright.tools.cpp_inputs import cospi

    x = np.array([0.0, 0.25, 0.5, 1.0, 1.5, 0.5 - 2.0**-40, 1.5 + 2.0**-45])
    tiny = np.pi * 2.0**-40, np.pi * 2.0**-45  # sin(t) = t (1 - t^2 / 6): t itself, here
    want = np.array([1.0, np.sqrt(0.5), 0.0, -1.0, 0.0, tiny[0], tiny[1]])
    np.testing.assert_allclose(cospi(x), want, rtol=3e-16, atol=0)
