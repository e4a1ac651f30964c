"""A KernelBench timed call's inputs laid out for handing over (handover.py), without a GPU:
the bytes each tensor's layout spans, where each goes, what cannot go."""

from __future__ import annotations

import pytest

from kernelwright.tools import handover, judge


def test_a_strided_tensors_span_is_from_its_first_element_to_its_last() -> None:
    assert handover.extent_bytes([2, 3], [3, 1], 4) == 24  # contiguous
    assert handover.extent_bytes([3, 2], [1, 3], 4) == 24  # its transpose: the same bytes
    assert handover.extent_bytes([4, 5], [0, 1], 4) == 20  # expanded: one row's
    assert handover.extent_bytes([4, 5], [10, 1], 2) == (3 * 10 + 4 + 1) * 2  # every other row
    assert handover.extent_bytes([0, 5], [5, 1], 4) == 0
    assert handover.extent_bytes([], [], 8) == 8  # a 0-d tensor: one element


def test_inputs_are_laid_out_aligned_with_their_strides_and_plain_values_as_they_are() -> None:
    torch = pytest.importorskip("torch")
    x = torch.empty(3, 5, device="meta")
    y = torch.empty(7, dtype=torch.float16, device="meta")
    layout, total = handover.plan_layout([x, 4, y.expand(2, 7), None, "mean", 0.5], on="meta")
    assert layout[0] == {"dtype": "float32", "shape": [3, 5], "stride": [5, 1], "offset": 0,
                         "nbytes": 60}  # fmt: skip
    assert layout[1] == {"value": 4} and layout[3] == {"value": None}
    assert layout[2] == {"dtype": "float16", "shape": [2, 7], "stride": [0, 1],
                         "offset": handover.ALIGN, "nbytes": 14}  # fmt: skip
    assert layout[4] == {"value": "mean"} and layout[5] == {"value": 0.5}
    assert total == handover.ALIGN + 14


@pytest.mark.parametrize(
    "what, said",
    [
        ("cpu", "on cpu"),
        ("list", "is a list"),
        ("dtype", "is a dtype"),
    ],
)
def test_what_cannot_be_handed_over_says_which_input(what: str, said: str) -> None:
    torch = pytest.importorskip("torch")
    odd = {"cpu": torch.zeros(2), "list": [1, 2], "dtype": torch.float32}[what]
    with pytest.raises(handover.HandOverError, match=said) as raised:
        handover.plan_layout([torch.zeros(1, device="meta"), odd], on="meta")
    assert "input 1" in str(raised.value)


def test_a_timed_call_that_wrote_its_handed_over_inputs_is_named() -> None:
    """A handed-over call's reply carries the checksums the reference's worker took of the
    inputs it made, before the call ("inputs") and after it ("inputs_after"), as a CUDA task's
    round says its own: judge.TimedCalls holds them to each other and to the reference's call's.
    (On an H200, the first version named them otherwise, and every honest call read changed.)"""
    from kernelwright.tools.task import load_task
    from tests.conftest import EXAMPLES

    task = load_task(EXAMPLES / "gelu")

    def call(before: list[str], after: list[str]) -> dict[str, object]:
        return {"ms": 0.1, "host_ms": 0.2, "inputs": before, "inputs_after": after, "sketch": {}}

    ref = [call(["a", "1"], ["a", "1"])] * 3
    same = [call(["a", "1"], ["a", "1"])] * 3
    assert judge.rounds_problem(task, ref, same)[0] == ""
    written = [*same[:2], call(["a", "1"], ["a", "2"])]
    verdict, why, _ = judge.rounds_problem(task, ref, written)
    assert verdict == "wrong" and why.startswith("input modified during timing (timed call 3")
    assert why.endswith("input 1")
