"""Size expressions in task files: arithmetic only, errors that name the problem."""

from __future__ import annotations

import pytest

from kernelwright.tools import expr
from kernelwright.tools.expr import ExprError


def test_arithmetic_over_sizes() -> None:
    env = {"M": 6, "N": 1000}
    assert expr.evaluate("4 * M * N + 2", env) == 24002
    assert expr.evaluate("(N - 1) // 3 % 7", env) == 333 % 7
    assert expr.evaluate("-M + 2 ** 3", env) == 2
    assert expr.evaluate(256, env) == 256


def test_functions() -> None:
    env = {"N": 1000}
    assert expr.evaluate("ceil_div(N, 256)", env) == 4
    assert expr.evaluate("ceil_div(1024, 256)", env) == 4
    assert expr.evaluate("min(N, 64)", env) == 64
    assert expr.evaluate("max(N - 2000, 0)", env) == 0
    assert expr.evaluate("ceil(N / 3)", env) == 334
    assert expr.evaluate("floor(N / 3)", env) == 333


def test_evaluate_int() -> None:
    assert expr.evaluate_int("N / 4", {"N": 1000}) == 250
    assert isinstance(expr.evaluate_int("N / 4", {"N": 1000}), int)
    with pytest.raises(ExprError, match="not a whole number"):
        expr.evaluate_int("N / 3", {"N": 1000})


def test_names_excludes_functions() -> None:
    assert expr.names("ceil_div(N, 256) * M + min(K, 4)") == {"N", "M", "K"}
    assert expr.names(7) == set()


def test_unknown_size_is_named() -> None:
    with pytest.raises(ExprError, match=r"unknown size 'K'.*known: M, N"):
        expr.evaluate("M * N * K", {"M": 1, "N": 2})


@pytest.mark.parametrize(
    "text",
    [
        "N.real",  # attribute access
        "open('/etc/passwd')",  # a function that is not allowed
        "__import__('os')",
        "(lambda: 1)()",
        "lambda: 1",
        "'abc'",  # strings
        "True",  # booleans
        "min(N, key=1)",  # keywords
        "[N, N]",
        "N if N else 1",
        "N < 3",
    ],
)
def test_refuses_anything_but_arithmetic(text: str) -> None:
    with pytest.raises(ExprError):
        expr.evaluate(text, {"N": 4})


def test_refuses_python_booleans_and_bad_syntax() -> None:
    with pytest.raises(ExprError, match="boolean"):
        expr.evaluate(True, {})
    with pytest.raises(ExprError, match="cannot parse"):
        expr.evaluate("N +", {"N": 1})


def test_division_by_zero_is_an_expr_error() -> None:
    with pytest.raises(ExprError, match="division by zero"):
        expr.evaluate("N // (N - N)", {"N": 3})


@pytest.mark.parametrize("text", ["ceil_div(N, 0)", "min()", "ceil_div(N)"])
def test_bad_function_call_is_an_expr_error(text: str) -> None:
    with pytest.raises(ExprError):
        expr.evaluate(text, {"N": 3})
