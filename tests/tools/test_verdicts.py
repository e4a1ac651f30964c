"""The controller's verdict on a trial, from recorded worker messages (no GPU): what a worker
says about itself counts for nothing; only its raw outputs and checksums do."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from kernelwright.tools.sandbox import WorkerFailure
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_task
from kernelwright.tools.verify import (
    TimingPlan,
    Trial,
    Verifier,
    _finals_problem,
    _poisons,
    _Reject,
)
from tests.conftest import EXAMPLES

N = 1000


class ReplayBox:
    """Stands in for a worker: hands back recorded (header, arrays) messages in order."""

    def __init__(self, messages: list[tuple[dict[str, Any], list[bytes]]]) -> None:
        self.messages = list(messages)

    def receive(self, timeout_s: float, phase: str) -> tuple[dict[str, Any], list[bytes]]:
        return self.messages.pop(0)

    def send(self, header: dict[str, Any]) -> None:
        pass


@pytest.fixture
def setup() -> tuple[CudaTask, Trial, np.ndarray, tuple[dict[str, Any], list[bytes]]]:
    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    trial = Trial({"N": N}, seed=7, poisons=_poisons(random.Random(1), 2))
    expected = np.linspace(-0.2, 0.8, N)  # float64, as the reference worker sends it
    ref = (
        {"type": "expected", "checksums": {"x": "abc-4000"}, "dtypes": ["float64"]},
        [expected.tobytes()],
    )
    return task, trial, expected, ref


def _outputs(y: np.ndarray, sums: str = "abc-4000") -> tuple[dict[str, Any], list[bytes]]:
    return {"type": "outputs", "checksums": {"x": sums}}, [y.astype(np.float32).tobytes()]


def _judge(setup: Any, runs: list[tuple[dict[str, Any], list[bytes]]]) -> Any:
    task, trial, _, ref = setup
    return Verifier()._trial(task, trial, ref, ReplayBox(runs), "check")  # type: ignore[arg-type]


def test_correct_outputs_pass_with_their_errors(setup: Any) -> None:
    y = setup[2]
    result = _judge(setup, [_outputs(y), _outputs(y)])
    assert result.ok and result.max_abs_err is not None and result.max_abs_err < 1e-7


def test_an_element_left_with_the_poison_in_both_runs_is_unwritten(setup: Any) -> None:
    _, trial, y, _ = setup
    runs = []
    for bits in trial.poisons:
        out = y.astype(np.float32)
        out.view(np.uint32)[5] = bits & 0xFFFFFFFF
        runs.append(({"type": "outputs", "checksums": {"x": "abc-4000"}}, [out.tobytes()]))
    result = _judge(setup, runs)
    assert not result.ok
    assert result.reason.startswith("output 'y' not fully written: 1 of 1,000 elements untouched")


def test_runs_that_each_pass_but_disagree_are_caught(setup: Any) -> None:
    y = setup[2]
    tol = 1e-5 + 1e-5 * np.abs(y)
    result = _judge(setup, [_outputs(y + 0.9 * tol), _outputs(y - 0.9 * tol)])
    assert not result.ok and "differs between two runs" in result.reason


def test_a_modified_input_is_named(setup: Any) -> None:
    y = setup[2]
    result = _judge(setup, [_outputs(y, sums="def-4000"), _outputs(y)])
    assert not result.ok and result.reason == "input modified: 'x' differs after the call"


def test_missing_or_short_outputs_are_rejected(setup: Any) -> None:
    y = setup[2]
    missing = _judge(
        setup, [({"type": "outputs", "checksums": {"x": "abc-4000"}}, []), _outputs(y)]
    )
    assert not missing.ok and missing.reason == "returned 0 outputs, expected 1"
    short = _judge(
        setup,
        [
            (
                {"type": "outputs", "checksums": {"x": "abc-4000"}},
                [y[:-1].astype(np.float32).tobytes()],
            ),
            _outputs(y),
        ],
    )
    assert not short.ok and short.reason == "y has the wrong size"


def test_a_kernelbench_output_of_the_wrong_dtype_is_rejected() -> None:
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    trial = Trial({}, seed=3, poisons=(1,))
    expected = np.zeros((4, 8))
    ref = (
        {
            "type": "expected",
            "checksums": ["h1"],
            "meta": [{"dtype": "float64", "shape": [4, 8]}],
            "native": [{"dtype": "float32", "shape": [4, 8]}],
        },
        [expected.tobytes()],
    )
    half = (
        {"type": "outputs", "checksums": ["h1"], "meta": [{"dtype": "float16", "shape": [4, 8]}]},
        [np.zeros((4, 8), dtype=np.float16).tobytes()],
    )
    result = Verifier()._trial(task, trial, ref, ReplayBox([half]), "check")  # type: ignore[arg-type]
    assert not result.ok
    assert result.reason == "output 0 is float16 [4, 8], expected float32 [4, 8]"


def test_a_write_past_an_output_is_named(setup: Any) -> None:
    y = setup[2]
    head, arrays = _outputs(y)
    result = _judge(setup, [({**head, "guards": ["y"]}, arrays), _outputs(y)])
    assert not result.ok and result.reason.startswith("wrote outside 'y'")


def test_a_problem_the_worker_reports_rejects() -> None:
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    trial = Trial({}, seed=3, poisons=(1,))
    ref = (
        {"type": "expected", "checksums": ["h1"], "meta": [{"dtype": "float64", "shape": [2]}]}
        | {"native": [{"dtype": "float32", "shape": [2]}]},
        [np.zeros(2).tobytes()],
    )
    lazy = ({"type": "outputs", "problem": "forward() returned Lazy, not a torch.Tensor"}, [])
    result = Verifier()._trial(task, trial, ref, ReplayBox([lazy]), "check")  # type: ignore[arg-type]
    assert not result.ok and result.reason == "forward() returned Lazy, not a torch.Tensor"


def test_tampering_the_worker_saw_rejects_as_implausible(setup: Any) -> None:
    y = setup[2]
    head, arrays = _outputs(y)
    tampered = ({**head, "tampered": ["time.perf_counter was replaced"]}, arrays)
    with pytest.raises(_Reject) as info:
        _judge(setup, [tampered, _outputs(y)])
    assert info.value.verdict == "implausible"
    assert info.value.reason == "harness tampered: time.perf_counter was replaced"


def _finals(values: np.ndarray) -> tuple[dict[str, Any], list[bytes]]:
    meta = [[{"dtype": "float32", "shape": list(values.shape)}]]
    return {"final_meta": meta}, [values.astype(np.float32).tobytes()]


def test_last_timed_outputs_against_the_references() -> None:
    want = np.linspace(0, 1, 12).reshape(3, 4)
    ref_header, ref_arrays = _finals(want)
    assert _finals_problem(*_finals(want + 1e-6), ref_header, ref_arrays) == ""
    stale = want.copy()
    stale[1, 2] += 0.5
    reason = _finals_problem(*_finals(stale), ref_header, ref_arrays)
    assert reason.startswith("output 'output 0 (input set 1, last timed call)' wrong at 1 of 12")
    assert reason.endswith("the model behaves differently when timed")
    assert _finals_problem({"problem": "forward() returned X"}, [], ref_header, ref_arrays) == (
        "during timing: forward() returned X"
    )


def _timing_header(rounds: int, speed: float, opening: float) -> dict[str, Any]:
    """Recorded samples of `rounds` rounds, reference and candidate opening them in turn, the
    candidate `speed` times faster, the call that opens a round `opening` times slower."""
    rng = np.random.default_rng(3)
    first = ["ref" if r % 2 == 0 else "cand" for r in range(rounds)]
    base = {"ref": 0.1, "cand": 0.1 / speed}
    head: dict[str, Any] = {"type": "timing", "rounds": rounds, "first": first}
    for side in ("ref", "cand"):
        ms = [
            base[side] * (opening if f == side else 1.0) * float(rng.lognormal(0.0, 0.04))
            for f in first
        ]
        head[f"{side}_ms"], head[f"{side}_host_ms"] = ms, [m + 0.05 for m in ms]
    return head


def _time_with(setup: Any, header: dict[str, Any]) -> Any:
    task, trial, y, ref = setup
    post = Trial(trial.sizes, seed=8, poisons=_poisons(random.Random(2), 1))
    box = ReplayBox([(header, []), _outputs(y)])
    return Verifier()._time(task, box, post, ref, None, TimingPlan.new(2), lambda _: None)  # type: ignore[arg-type]


@pytest.mark.parametrize("speed", [1.0, 2.0])
def test_what_opening_a_round_costs_cancels_out_of_the_speedup(setup: Any, speed: float) -> None:
    timing, post, _ = _time_with(setup, _timing_header(400, speed, opening=1.13))
    assert post.ok
    assert timing.speedup == pytest.approx(speed, rel=0.01)
    assert timing.speedup_iqr < 0.1 * speed  # the spread net of the order, not the two humps


def test_a_timing_header_without_the_order_of_its_rounds_is_a_broken_worker(setup: Any) -> None:
    header = _timing_header(40, 1.0, opening=1.0)
    for bad in (None, header["first"][:-1], ["ref"] * 39 + ["other"]):
        with pytest.raises(WorkerFailure, match="no valid order of the timing rounds"):
            _time_with(setup, {**header, "first": bad})
