"""The harness's own device code on a real GPU: the sketch kernel agrees with an independent
NumPy computation, and the stateless generator is deterministic and draws what it says."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tools.test_judge import _sketch

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "uint8"])
def test_the_sketch_kernel_is_the_numpy_one(dtype: str) -> None:
    from kernelwright.tools.sketch import sketch

    rng = np.random.default_rng(1)
    host = (rng.uniform(-50, 50, 100_003)).astype(dtype)
    if dtype.startswith("float"):
        host[[3, 7, 11]] = [np.nan, np.inf, -np.inf]
    dev = cupy.asarray(host)
    got = sketch(dev.data.ptr, dev.size, dtype, (5, 6))
    want = _sketch(host)
    assert got[4:7] == want[4:7] and got[7] == want[7]  # the non-finite ones: exact
    np.testing.assert_allclose(got[:4], want[:4], rtol=1e-9, atol=1e-9)
    again = sketch(dev.data.ptr, dev.size, dtype, (5, 6))
    assert again == got  # a fixed order: the same bits give the same sums


def test_bfloat16_is_sketched_by_its_value() -> None:
    torch = pytest.importorskip("torch")
    from kernelwright.tools.sketch import sketch

    t = torch.linspace(-3, 3, 4097, device="cuda").to(torch.bfloat16)
    got = sketch(t.data_ptr(), t.numel(), "bfloat16", (5, 6))
    want = _sketch(t.float().cpu().numpy())
    np.testing.assert_allclose(got[:4], want[:4], rtol=1e-9)


@pytest.mark.parametrize(
    ("dtype", "init", "check"),
    [
        ("float32", "uniform", lambda x: x.min() >= -1 and x.max() < 1 and abs(x.mean()) < 0.01),
        ("float64", "normal", lambda x: abs(x.mean()) < 0.01 and abs(x.std() - 1) < 0.01),
        ("float32", "uniform:-100:100", lambda x: x.min() >= -100 and x.max() < 100),
        ("float32", "normal:1000", lambda x: abs(x.std() - 1000) < 10),
        ("float16", "positive", lambda x: x.min() >= 0.5 and x.max() <= 2.0),
        ("int32", "randint:0:10", lambda x: set(np.unique(x)) == set(range(10))),
        ("uint8", "uniform", lambda x: x.min() >= 0 and x.max() < 100),
    ],
)
def test_the_generator_is_deterministic_and_draws_its_distribution(
    dtype: str, init: str, check: object
) -> None:
    from kernelwright.tools.runners import generate, release_guards
    from kernelwright.tools.spec import ArgSpec

    arg = ArgSpec(name="x", dtype=dtype, role="in", shape=("N",), init=init)
    a, b, c = (generate(arg, (200_000,), s) for s in (7, 7, 8))
    x = a.get().astype(np.float64)
    assert (a.get() == b.get()).all() and not (a.get() == c.get()).all()
    assert check(x)  # type: ignore[operator]
    release_guards()


@pytest.mark.parametrize(
    ("dtype", "init"),
    [
        ("float32", "uniform"),
        ("float64", "uniform:-100:100"),
        ("float64", "uniform:-1000:1000"),
        ("float64", "uniform:0.1:0.7"),  # the fma's emulation, not the exact integer way
        ("float64", "uniform:-1e300:1e300"),
        ("float16", "positive"),
        ("int32", "randint:0:10"),
        ("int64", "uniform"),
        ("uint8", "uniform"),
    ],
)
def test_the_cpu_generator_draws_the_gpus_bits(dtype: str, init: str) -> None:
    """A cpp task's C++ reference runs on inputs cpp_inputs makes with NumPy; the candidate on
    the GPU gets runners.generate's. For uniform, positive and randint they are the same bits
    (more than one generator block, so the block offset counts too)."""
    from kernelwright.tools import cpp_inputs
    from kernelwright.tools.runners import generate, release_guards
    from kernelwright.tools.spec import ArgSpec

    arg = ArgSpec(name="x", dtype=dtype, role="in", shape=("N",), init=init)
    n = (1 << 20) + 4099
    for seed in (0, 7, (1 << 64) - 3):
        gpu = generate(arg, (n,), seed).get()
        cpu = cpp_inputs.generate(dtype, (n,), seed, init)
        differ = np.flatnonzero(gpu.view(np.uint8) != cpu.view(np.uint8))
        assert differ.size == 0, (seed, differ[:5], gpu.ravel()[:3], cpu.ravel()[:3])
    release_guards()


def test_the_cpu_generators_normal_draws_are_the_gpus_within_a_few_ulps() -> None:
    """Normal draws go through log and cospi, whose last bits differ between CUDA's math library
    and NumPy's: a few float64 ulps apart, so float32 inputs come out the same but for the odd
    one on a rounding edge."""
    from kernelwright.tools import cpp_inputs
    from kernelwright.tools.runners import generate, release_guards
    from kernelwright.tools.spec import ArgSpec

    n = 300_000
    for dtype in ("float64", "float32"):
        arg = ArgSpec(name="x", dtype=dtype, role="in", shape=("N",), init="normal")
        gpu = generate(arg, (n,), 11).get()
        cpu = cpp_inputs.generate(dtype, (n,), 11, "normal")
        if dtype == "float64":
            np.testing.assert_allclose(cpu, gpu, rtol=1.5e-15, atol=0)
        else:
            assert int((cpu != gpu).sum()) <= 2
    release_guards()


def test_a_mixed_input_scatters_the_wider_values_among_the_usual_ones() -> None:
    """plan.MIXED_EVERY: one element in K from the wider distribution, at places a hash of the
    seed picks, the rest the argument's own; the same bits for the same seed."""
    from kernelwright.tools.runners import generate, release_guards, scattered
    from kernelwright.tools.spec import ArgSpec

    arg = ArgSpec(name="x", dtype="float32", role="in", shape=("N",), init="uniform")
    n = 1 << 20
    for every in (16, 256, 4096):
        mixed = f"mixed:{every}:uniform:-30000:30000"
        a, b, c = (generate(arg, (n,), s, mixed).get() for s in (7, 7, 8))
        assert (a == b).all() and not (a == c).all()
        picked = scattered(n, every, 7).get()
        assert 0.8 * n / every < picked.sum() < 1.2 * n / every, (every, picked.sum())
        usual = generate(arg, (n,), 7).get()
        assert (a[~picked] == usual[~picked]).all()  # the rest: the argument's own draw
        assert (np.abs(a[picked]) > 1.0).mean() > 0.99  # the wide draw (|x| <= 1: 1 in 30,000)
        assert np.abs(a[picked]).max() > 20000 and np.flatnonzero(picked).std() > n / 4
    release_guards()


def test_an_input_declared_fill_is_that_value_as_on_the_host() -> None:
    """An `in`/`inout` argument with init "fill:V": every element V on the GPU, as
    cpp_inputs.generate makes it for the C++ function (it had been drawn uniform here)."""
    from kernelwright.tools import cpp_inputs
    from kernelwright.tools.runners import generate, release_guards
    from kernelwright.tools.spec import ArgSpec

    for dtype, init in (("uint32", "fill:0"), ("float32", "fill:2.5"), ("int32", "fill:-3")):
        arg = ArgSpec(name="c", dtype=dtype, role="inout", shape=("N",), init=init)
        gpu = generate(arg, (1000,), 7).get()
        assert (gpu == cpp_inputs.generate(dtype, (1000,), 7, init)).all(), (dtype, gpu[:4])
    release_guards()
