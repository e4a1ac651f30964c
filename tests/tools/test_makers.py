"""The input maker ([inputs]): what the C++ reference's worker and both GPU workers call alike
(the GPU's side of it is in tests/gpu/test_cpp_maker_gpu.py)."""

from __future__ import annotations

import numpy as np
import pytest

from kernelwright.tools import makers

MAKER = """
import math

def make(np, rng, sizes):
    n = sizes["N"]
    return {"x": rng.uniform(-1.0, 1.0, size=n) * math.pi, "k": np.arange(n)}

def bad_name(np, rng, sizes):
    return {"y": np.zeros(sizes["N"])}

def bad_shape(np, rng, sizes):
    return {"x": np.zeros(sizes["N"] + 1)}

def not_a_dict(np, rng, sizes):
    return [1, 2]

def raises(np, rng, sizes):
    return {"x": 1 / 0}
"""


def _args() -> list[object]:
    from kernelwright.tools.spec import ArgSpec

    return [
        ArgSpec(name="x", dtype="float32", shape=("N",), role="in"),
        ArgSpec(name="k", dtype="int32", shape=("N",), role="inout"),
        ArgSpec(name="y", dtype="float32", shape=("N",), role="out"),
    ]


def _made(func: str, seed: int = 3) -> dict[str, np.ndarray]:
    maker = makers.load_maker(MAKER, func)
    return makers.made_inputs(maker, func, _args(), lambda a: (5,), {"N": 5}, seed)


def test_a_makers_arrays_are_cast_to_their_arguments_and_follow_the_seed() -> None:
    made = _made("make")
    assert (made["x"].dtype, made["k"].dtype) == (np.float32, np.int32)
    want = (np.random.default_rng(3).uniform(-1.0, 1.0, size=5) * np.pi).astype(np.float32)
    np.testing.assert_array_equal(made["x"], want)
    np.testing.assert_array_equal(_made("make")["x"], made["x"])  # the same seed, the same bits
    assert not np.array_equal(_made("make", seed=4)["x"], made["x"])
    assert made["k"].tolist() == [0, 1, 2, 3, 4] and made["x"].flags.c_contiguous


@pytest.mark.parametrize(
    ("func", "message"),
    [
        ("bad_name", "the input maker bad_name() returned 'y': not an input"),
        ("bad_shape", "the input maker bad_shape() returned x with shape (6,), expected (5,)"),
        ("not_a_dict", "the input maker not_a_dict() must return a dict of arrays"),
        ("raises", "the input maker raises() failed: ZeroDivisionError: division by zero"),
    ],
)
def test_a_maker_that_gives_something_else_is_one_line(func: str, message: str) -> None:
    with pytest.raises(makers.MakerError) as caught:
        _made(func)
    assert str(caught.value) == message


def test_a_maker_file_without_the_function_is_one_line() -> None:
    with pytest.raises(makers.MakerError, match=r"has no function nothing\(\)"):
        makers.load_maker(MAKER, "nothing")
