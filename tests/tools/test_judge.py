"""The controller's judgement from recorded worker messages (no GPU): what a worker says about
itself counts for nothing; only its raw outputs, checksums and sketches do, set against the
reference's."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from kernelwright.tools import judge, sketch
from kernelwright.tools.plan import Trial, poisons
from kernelwright.tools.sketch import sketch_of
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_task
from tests.conftest import EXAMPLES

N = 1000


class _Unused:
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
    trial = Trial({"N": N}, seed=7, poisons=poisons(random.Random(1), 2))
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
    return judge.trial_result(task, trial, ref, runs, "check")


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
    assert (
        not missing.ok
        and missing.reason == "returned 0 outputs, expected 1: not the reference's outputs"
    )
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
    result = judge.trial_result(task, trial, ref, [half], "check")
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
    result = judge.trial_result(task, trial, ref, [lazy], "check")
    assert not result.ok and result.reason == "forward() returned Lazy, not a torch.Tensor"


def _sketch(values: np.ndarray, signs: tuple[int, int] = (5, 6)) -> list[float]:
    """What kernels.py's kw_sketch computes, in NumPy (the same signs from the same seeds)."""
    return sketch_of(values, signs)


def _round(y: np.ndarray, **extra: Any) -> dict[str, Any]:
    return {
        "ms": 0.1,
        "host_ms": 0.2,
        "inputs": {"x": "abc"},
        "inputs_after": {"x": "abc"},
        "unwritten": {"y": 0},
        "guards": [],
        "sketch": {"y": _sketch(y)},
        **extra,
    }


@pytest.fixture
def gelu_rounds() -> tuple[CudaTask, np.ndarray]:
    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    task = task.model_copy(update={"bench": {"N": 4096}})
    y = np.random.default_rng(0).uniform(-1, 1, 4096).astype(np.float32)
    return task, y


def test_rounds_within_tolerance_pass_with_small_z(gelu_rounds: Any) -> None:
    task, y = gelu_rounds
    rng = np.random.default_rng(1)
    ref = [_round(y)] * 20
    cand = [_round(y + (rng.uniform(-1, 1, y.size) * 1e-6).astype(np.float32)) for _ in range(20)]
    verdict, why, zs = judge.rounds_problem(task, ref, cand)
    assert (verdict, why) == ("", "") and len(zs) == 40 and max(map(abs, zs)) < 1


@pytest.mark.parametrize(
    "cheat",
    [
        lambda y: np.zeros_like(y),  # skipped the work
        lambda y: np.roll(y, 1),  # a stale answer: the last round's, the wrong elements
        lambda y: np.concatenate([y[:2048], y[2048:] * 0]),  # half the work
        lambda y: y.astype(np.float16).astype(np.float32),  # lower precision only when timed
    ],
)
def test_a_timed_output_that_is_not_the_references_is_caught(gelu_rounds: Any, cheat: Any) -> None:
    task, y = gelu_rounds
    ref = [_round(y)] * 10
    cand = [_round(y)] * 9 + [_round(cheat(y))]  # right in 9 calls of 10
    verdict, why, _ = judge.rounds_problem(task, ref, cand)
    assert verdict == "wrong" and why.startswith("during timing (timed call 10 of 10): ")
    assert why.endswith("the kernel behaves differently when timed")


def _cancelling_pair(signs: tuple[int, int]) -> tuple[int, int]:
    """Two places where both of a round's sign seeds give the same sign: +M and -M there
    cancel in both signed sums (a candidate's process can read the seeds off its stack)."""
    first: dict[tuple[float, float], int] = {}
    for i in range(64):
        unit = np.zeros(64)
        unit[i] = 1.0
        got = _sketch(unit, signs)
        key = (got[0], got[1])
        if key in first:
            return first[key], i
        first[key] = i
    raise AssertionError("no two of 64 places share both signs")


def test_a_timed_output_cannot_buy_its_own_slack_with_huge_values(gelu_rounds: Any) -> None:
    """Zeros, plus +3e38 and -3e38 where both signs agree, cancel in both signed sums; the
    candidate's own sum of |x| once widened the rounding slack to 4e25, and every call passed.
    Its |x| and x^2 are now held to the reference's, and the slack is the reference's."""
    task, y = gelu_rounds
    i, j = _cancelling_pair((5, 6))
    forged = np.zeros_like(y)
    forged[i], forged[j] = 3.0e38, -3.0e38
    got = _sketch(forged)
    assert abs(got[0]) < 1e30 and abs(got[1]) < 1e30  # the pair cancels in both sums
    verdict, why, _ = judge.rounds_problem(task, [_round(y)], [_round(forged)])
    assert verdict == "wrong" and "sum of |x|" in why and "timed call 1 of 1" in why


@pytest.mark.parametrize(
    "field, value",
    [("abs", 1e300), ("sq", 1e300), ("abs", float("nan")), ("sq", float("inf"))],
)
def test_a_worker_reporting_a_huge_or_broken_sum_is_wrong(
    gelu_rounds: Any, field: str, value: float
) -> None:
    """A worker whose sketch says its sum of |x| (or x^2) is huge, to widen the slack for a
    bf16-like error in the signed sums: the fields are checked against the reference's first."""
    task, y = gelu_rounds
    rough = y.astype(np.float16).astype(np.float32)  # about 1e-3 off: beyond tolerance
    report = _sketch(rough)
    report[sketch.FIELDS.index(field)] = value
    cand = _round(rough)
    cand["sketch"] = {"y": report}
    verdict, why, _ = judge.rounds_problem(task, [_round(y)], [cand])
    if not np.isfinite(value):  # no honest worker's sum (it counts NaN and infinities apart)
        assert verdict == "wrong" and "sent no valid sketch" in why
    else:
        assert verdict == "wrong" and ("sum of |x|" in why or "root sum of squares" in why)


def test_honest_outputs_keep_their_sums_within_the_bounds(gelu_rounds: Any) -> None:
    """Every element off by 0.9 of the tolerance, away from zero (the worst case for the sums
    of |x| and x^2 within tolerance): passes. Off by 2.5 times it, away from zero, in one call:
    the signed sums alone do not see it, the sum of |x| does."""
    _, y = gelu_rounds
    t = 1e-5 + 1e-5 * np.abs(y)
    want = _sketch(y)
    edge = _sketch((y + np.sign(y) * 0.9 * t).astype(np.float32))
    assert sketch.problem("y", edge, want, y.size, 1e-5, 1e-5)[0] == ""
    biased = _sketch((y + np.sign(y) * 2.5 * t).astype(np.float32))
    why, _ = sketch.problem("y", biased, want, y.size, 1e-5, 1e-5)
    assert "sum of |x|" in why


def test_errors_a_little_above_tolerance_in_every_call_are_caught_in_sum(gelu_rounds: Any) -> None:
    task, y = gelu_rounds
    rng = np.random.default_rng(2)
    ref = [_round(y)] * 60
    off = 3.5 * (1e-5 + 1e-5 * np.abs(y))  # 3.5 times the tolerance, every element and call
    cand = [_round(y + (rng.choice([-1.0, 1.0], y.size) * off).astype(np.float32)) for _ in ref]
    verdict, why, zs = judge.rounds_problem(task, ref, cand)
    assert max(map(abs, zs)) < sketch.Z_MAX  # no single call is far enough out to be caught
    assert verdict == "wrong" and why.startswith("during timing: outputs are consistently further")


def test_nan_and_infinities_in_timed_outputs(gelu_rounds: Any) -> None:
    task, y = gelu_rounds
    nan, inf = y.copy(), y.copy()
    nan[7], inf[9] = np.nan, np.inf
    assert "has NaN at 1 elements" in judge.rounds_problem(task, [_round(y)], [_round(nan)])[1]
    assert (
        "1 infinities where the reference has 0"
        in judge.rounds_problem(task, [_round(y)], [_round(inf)])[1]
    )
    moved = inf.copy()
    moved[9], moved[10] = y[9], np.inf
    assert judge.rounds_problem(task, [_round(inf)], [_round(moved)])[0] == "wrong"
    assert judge.rounds_problem(task, [_round(inf)], [_round(inf)])[0] == ""


def test_timed_inputs_changed_unwritten_or_guarded(gelu_rounds: Any) -> None:
    task, y = gelu_rounds
    ref = [_round(y)]
    changed = judge.rounds_problem(task, ref, [_round(y, inputs_after={"x": "zzz"})])
    assert changed[:2] == ("wrong", "input modified during timing (timed call 1 of 1): 'x'")
    unwritten = judge.rounds_problem(task, ref, [_round(y, unwritten={"y": 3})])
    assert unwritten[0] == "wrong" and "not fully written during timing" in unwritten[1]
    guard = judge.rounds_problem(task, ref, [_round(y, guards=["y"])])
    assert guard[:2] == ("wrong", "wrote outside 'y' during timing (timed call 1 of 1)")
    other = judge.rounds_problem(task, ref, [_round(y, inputs={"x": "zzz"})])
    assert other[0] == "implausible"


def test_elements_holding_the_poisons_bits_count_against_the_references_own(
    gelu_rounds: Any,
) -> None:
    """An int8 output's poison is an ordinary byte, which an honest output holds at about one
    element in 256: counted in the reference's call alike, it is no sign of an unwritten
    element (the task's own kernel had read wrong against itself, a red-team review). A count
    above the reference's still is."""
    task, y = gelu_rounds
    ref = [_round(y, unwritten={"y": 4151})]
    same = judge.rounds_problem(task, ref, [_round(y, unwritten={"y": 4151})])
    assert same[0] == "", same
    more = judge.rounds_problem(task, ref, [_round(y, unwritten={"y": 4152})])
    assert more[0] == "wrong" and "4,152 elements untouched" in more[1]


def test_a_kernelbench_worker_with_other_inputs_for_the_same_seed_is_an_error() -> None:
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    y = np.ones(8, dtype=np.float32)
    ref = {
        **_round(y),
        "inputs": ["a"],
        "inputs_after": ["a"],
        "meta": [{"dtype": "float32", "shape": [8]}],
    }
    ref["sketch"] = {"output 0": ref.pop("sketch")["y"]}
    cand = {**ref, "inputs": ["b"], "inputs_after": ["b"]}
    verdict, why, _ = judge.rounds_problem(task, [ref], [cand])
    assert verdict == "error" and "get_inputs()" in why
    lazy = {**ref, "problem": "forward() returned Lazy, not a CUDA tensor"}
    assert judge.rounds_problem(task, [ref], [lazy])[:2] == (
        "wrong",
        "during timing (timed call 1 of 1): forward() returned Lazy, not a CUDA tensor",
    )


def test_a_worker_announcing_other_arrays_than_the_references_is_refused_unread() -> None:
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    ref = {"native": [{"dtype": "float32", "shape": [128, 1024]}]}
    expect = judge.output_expect(task, Trial({}, seed=1, poisons=(1,)), ref)
    assert expect.problem([128 * 1024 * 4]) == ""
    assert "expected 1 of 524,288" in expect.problem([1 << 30] * 6)


def _kb_expected(truth: np.ndarray, slack: Any = None) -> Any:
    header: dict[str, Any] = {
        "type": "expected",
        "checksums": ["h1"],
        "meta": [{"dtype": "float64", "shape": list(truth.shape)}],
        "native": [{"dtype": "float32", "shape": list(truth.shape)}],
    }
    if slack is not None:
        header["native_slack"] = slack
    return header, [truth.tobytes()]


def _kb_run(got: np.ndarray) -> Any:
    head = {"type": "outputs", "checksums": ["h1"], "meta": [{"dtype": "float32", "shape": [64]}]}
    return head, [got.astype(np.float32).tobytes()]


@pytest.mark.parametrize(
    ("slack", "scale"),
    [
        (None, 1.0),  # not said (no float64 forward, or another kind): as before
        ([0.2], 1.0),  # PyTorch's own run well within tolerance: never narrowed, nor widened
        ([5.5], 16.5),  # TF32 convolutions: 5.5 tolerances off float64, a candidate 3 times that
        ([1e9], judge.SCALE_MAX),  # NaN or inf where float64 was not: KernelBench's 1e-2 at most
        ([-1.0], 1.0),  # nonsense
        (["x"], 1.0),
        ([float("nan")], 1.0),
        ([], 1.0),
        ("5", 1.0),
    ],
)
def test_a_kernelbench_tolerance_widens_by_how_far_pytorchs_own_run_is_from_float64(
    slack: Any, scale: float
) -> None:
    header, _ = _kb_expected(np.zeros(4), slack)
    assert judge.native_scale(header, 0) == pytest.approx(scale)
    assert judge.native_scale(header, 1) == 1.0  # an output not said of


def test_a_candidate_as_far_off_as_tf32_passes_where_the_reference_was_too_and_no_further() -> None:
    """A KernelBench output whose reference, in float32 with PyTorch's defaults, misses the
    float64 outputs by 5.5 tolerances (TF32 convolutions): a candidate 10 tolerances off
    passes, 20 do not; where the reference's own run was within tolerance, 2 do not. The
    timed calls' sketches are held to the same widened tolerance, and only where the
    reference's trials said so."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    trial = Trial({}, seed=3, poisons=(1,))
    truth = np.random.default_rng(1).uniform(-1, 1, 64)
    atol, rtol = judge.kernelbench_tolerance("float32")
    bound = atol + rtol * np.abs(truth)

    def verdict(times: float, slack: Any) -> bool:
        off = truth + times * bound
        return judge.trial_result(
            task, trial, _kb_expected(truth, slack), [_kb_run(off)], "check"
        ).ok

    assert verdict(10, [5.5]) and not verdict(20, [5.5])
    assert verdict(0.5, [0.2]) and not verdict(2, [0.2]) and not verdict(2, None)
    # the reference's header is the only witness: a run that says it is slack counts for nothing
    head, arrays = _kb_run(truth + 10 * bound)
    ref = _kb_expected(truth)
    result = judge.trial_result(
        task, trial, ref, [({**head, "native_slack": [99]}, arrays)], "check"
    )
    assert not result.ok

    scales: dict[str, float] = {}
    judge.native_scales(_kb_expected(truth, [5.5])[0], scales)
    judge.native_scales(_kb_expected(truth, [1.0])[0], scales)  # the most is kept
    assert scales == {"output 0": pytest.approx(16.5)}
    assert "'output 0' 16.5x" in judge.widened(scales) and judge.widened({"output 0": 1.0}) == ""
    # timed calls 10 tolerances off, every element of 60 calls: caught in sum, unless widened
    rng = np.random.default_rng(2)
    y = rng.uniform(-1, 1, 4096).astype(np.float32)

    def kb_round(values: np.ndarray) -> dict[str, Any]:
        out = {**_round(values), "inputs": ["a"], "inputs_after": ["a"]}
        out |= {"meta": [{"dtype": "float32", "shape": [4096]}]}
        out["sketch"] = {"output 0": out.pop("sketch")["y"]}
        return out

    ref_rounds = [kb_round(y)] * 60
    off = 10 * (atol + rtol * np.abs(y))
    cand_rounds = [kb_round(y + rng.choice([-1.0, 1.0], y.size) * off) for _ in ref_rounds]
    assert judge.rounds_problem(task, ref_rounds, cand_rounds, scales)[:2] == ("", "")
    assert judge.rounds_problem(task, ref_rounds, cand_rounds)[0] == "wrong"


# --- a trial on inputs scaled up (plan.SCALES) ------------------------------------------------


def _scaled(ok: bool, slack: Any, nan64: Any = 0) -> Any:
    from kernelwright.tools.results import TrialResult

    trial = Trial({"batch_size": 70}, 5, (1,), held_out=True, scale=64.0)
    result = TrialResult(
        sizes=trial.sizes, held_out=True, ok=ok, reason="" if ok else "has NaN at 3"
    )
    header: dict[str, Any] = {"type": "expected"}
    if slack is not None:
        header["native_slack"] = slack
        header["float64_nan"] = nan64
    return judge.scaled_trial(result, trial, header)


def test_a_scaled_trial_counts_where_pytorchs_own_forward_holds() -> None:
    """PyTorch's forward in the problem's dtypes within SCALE_MAX's widening of float64 there:
    the trial is judged as any other, its reason saying the inputs were scaled."""
    wrong = _scaled(False, [0.5, 2.0])
    assert not wrong.ok and wrong.counted and wrong.scale == 64.0
    assert wrong.reason == (
        "on inputs x64 (a span of get_inputs()'s, scaled, half of it negated): has NaN at 3"
    )
    right = _scaled(True, [0.0])
    assert right.ok and right.counted and right.reason == ""


@pytest.mark.parametrize(
    ("slack", "why"),
    [
        ([1e9], "is not near float64"),  # torch_roles.SLACK_MAX: NaN or inf where float64 was not
        ([0.1, 40.0], "is not near float64"),  # finite, but past the most a tolerance widens
        ([float("nan")], "is not near float64"),
        ([], "is not near float64"),
        (None, "had no float64 to meet"),  # no room for the float64 forward
    ],
)
def test_a_scaled_trial_where_pytorchs_own_forward_fails_is_not_counted(
    slack: Any, why: str
) -> None:
    got = _scaled(False, slack)
    assert got.ok and not got.counted and got.scale == 64.0
    assert got.reason == (
        f"not counted: on inputs x64, PyTorch's own forward in the problem's dtypes {why}"
    )
    assert 40.0 * judge.SLACK_TIMES > judge.SCALE_MAX > 2.0 * judge.SLACK_TIMES


def test_a_passing_checks_reason_names_the_scaled_inputs_and_what_did_not_count() -> None:
    from kernelwright.tools.results import TrialResult
    from kernelwright.tools.verify import _passed

    plain = TrialResult(sizes={}, ok=True)
    held = TrialResult(sizes={"batch_size": 70}, held_out=True, ok=True)
    counted = held.model_copy(update={"scale": 32.0})
    assert _passed([plain, held, counted], "PyTorch eager in float64") == (
        "3 trials over 2 shapes (held out: batch_size=70), inputs also x±32, against PyTorch "
        "eager in float64"
    )
    skipped = _scaled(False, None)
    assert _passed([plain, skipped], "PyTorch eager in float64").endswith(
        "against PyTorch eager in float64; a trial not counted: on inputs x64, PyTorch's own "
        "forward in the problem's dtypes had no float64 to meet"
    )


def test_timed_calls_take_the_scale_of_a_scaled_trial_that_counted() -> None:
    """Every timed call's inputs are scaled as the check's scaled trial's were, where that trial
    counted: a candidate careful only on calls it can tell are scaled (its process makes its
    own inputs) is then careful on every call that is timed, and its careless path gains
    nothing. Where the trial did not count, or there was none, get_inputs()'s own inputs."""
    from kernelwright.tools.results import TrialResult

    plain = TrialResult(sizes={"batch_size": 128}, ok=True)
    counted = _scaled(True, [0.0]).model_copy(update={"held_out": False, "sizes": {}})
    assert judge.timed_scale([plain, counted, plain]) == 64.0
    assert judge.timed_scale([plain, _scaled(False, [1e9])]) == 1.0  # not counted
    assert judge.timed_scale([plain, plain]) == 1.0
    # a held-out batch's scaled trial does not set the bench size's timed calls
    held = _scaled(True, [0.0]).model_copy(update={"scale": 128.0})  # batch_size=70
    assert judge.timed_scale([plain, held, counted]) == 64.0
    assert judge.timed_scale([plain, held]) == 1.0


def test_scaled_timed_calls_widen_the_absolute_tolerance_only() -> None:
    """Where the timed calls' inputs are scaled, the scaled trial's widening reaches their
    absolute tolerance, never their relative one: a candidate exact in its trials and TF32 in
    its timed calls is still caught there (the mean z^2 over the calls), while an honest one
    whose near-zero outputs move by more is not."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    atol, rtol = judge.kernelbench_tolerance("float32")
    rng = np.random.default_rng(4)
    y = rng.uniform(-1, 1, 4096)

    def kb_round(values: np.ndarray) -> dict[str, Any]:
        out = {**_round(values.astype(np.float32)), "inputs": ["a"], "inputs_after": ["a"]}
        out |= {"meta": [{"dtype": "float32", "shape": [4096]}]}
        out["sketch"] = {"output 0": out.pop("sketch")["y"]}
        return out

    wide = {"output 0": 50.0}
    # outputs of scaled inputs are large; 4 relative tolerances off at every element (TF32's
    # rounding is coarser still): caught over the calls even beside a widened atol
    big = y * 2000
    ref_rounds = [kb_round(big)] * 60
    signs = [rng.choice([-1.0, 1.0], y.size) for _ in ref_rounds]
    tf32 = [kb_round(big * (1 + 4 * rtol * sign)) for sign in signs]
    assert judge.rounds_problem(task, ref_rounds, tf32, {}, wide)[0] == "wrong"
    assert judge.rounds_problem(task, ref_rounds, tf32, wide)[:2] == ("", "")  # rtol widened
    # near-zero outputs 20 absolute tolerances off: an honest candidate on scaled inputs,
    # let through by the widened atol alone
    small = y / 100
    ref_rounds = [kb_round(small)] * 60
    near = [kb_round(small + 20 * atol * sign) for sign in signs]
    assert judge.rounds_problem(task, ref_rounds, near, {}, wide)[:2] == ("", "")
    assert judge.rounds_problem(task, ref_rounds, near, {})[0] == "wrong"


def test_a_timed_output_the_reference_gave_nan_in_is_not_compared_in_that_call() -> None:
    """Nothing can match where the reference's own output is NaN: that output is left out of
    that call's comparison (the reference's worker alone says so); a NaN of the candidate's
    where the reference has none is still wrong."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    y = np.random.default_rng(5).uniform(-1, 1, 256)

    def kb_round(values: np.ndarray) -> dict[str, Any]:
        out = {**_round(values.astype(np.float32)), "inputs": ["a"], "inputs_after": ["a"]}
        out |= {"meta": [{"dtype": "float32", "shape": [256]}]}
        out["sketch"] = {"output 0": out.pop("sketch")["y"]}
        return out

    nan = y.copy()
    nan[7] = np.nan
    assert judge.rounds_problem(task, [kb_round(nan)], [kb_round(y * 3)])[:2] == ("", "")
    verdict, why, _ = judge.rounds_problem(task, [kb_round(y)], [kb_round(nan)])
    assert verdict == "wrong" and "has NaN at 1 elements" in why


def test_a_passing_checks_reason_says_its_timed_calls_were_scaled() -> None:
    from kernelwright.tools.results import TrialResult
    from kernelwright.tools.verify import _passed

    plain = TrialResult(sizes={}, ok=True)
    counted = plain.model_copy(update={"scale": 128.0})
    assert _passed([plain, counted], "PyTorch eager in float64", None, 128.0) == (
        "2 trials over 1 shapes, inputs also x±128 (every timed call's x±128 too), against "
        "PyTorch eager in float64"
    )


@pytest.mark.parametrize("nan64", [1, 4096, -1, None, "0", 0.0])
def test_a_scaled_trial_where_the_float64_forward_is_nan_is_not_counted(nan64: Any) -> None:
    """Half of each scaled span is negated: where the float64 forward gives NaN there (a log or
    a square root of inputs get_inputs() draws only positive), the op is not defined on those
    inputs, and the trial does not count, whatever PyTorch's own forward did; a header that
    does not say a whole count of none counts as NaN."""
    got = _scaled(False, [0.0], nan64)
    assert got.ok and not got.counted
    assert got.reason == (
        "not counted: on inputs x64, the float64 forward is NaN there (the op is not defined there)"
    )
    assert _scaled(False, [0.0], 0).counted  # none: judged as any trial


def test_an_absolute_tolerance_is_never_an_outputs_whole_scale() -> None:
    """output_atol: the absolute tolerance is at most a share of the output's RMS and never
    shrinks past atol / ATOL_SHRINK_MAX; the task's own where the RMS is not said."""
    assert judge.output_atol(1e-4, 1.0) == 1e-4  # most outputs: unchanged
    assert judge.output_atol(1e-4, 2e-3) == pytest.approx(2e-5)
    assert judge.output_atol(1e-4, 1e-9) == pytest.approx(1e-6)  # rounding noise: the floor
    for unsaid in (None, float("nan"), float("inf"), -1.0, "1"):
        assert judge.output_atol(1e-4, unsaid) == 1e-4


def test_zeros_do_not_match_an_output_of_values_all_under_the_absolute_tolerance() -> None:
    """An L1 norm over 65,536 columns has every value under KernelBench's 1e-4: zeros matched
    it within tolerance. With the reference's RMS said, the absolute tolerance is a share of
    it, and zeros are wrong; an honest run (float32 rounding) is still right."""
    task = load_task(EXAMPLES / "kernelbench" / "l1_rows.py")
    x = np.random.default_rng(0).standard_normal((4, 65536))
    y = (x / np.abs(x).sum(1, keepdims=True)).ravel()
    truth = np.sort(np.abs(y))[-64:]  # the largest 64: the attacker's best case
    trial = Trial({}, seed=3, poisons=(1,))
    plain = _kb_expected(truth)
    said = ({**plain[0], "rms64": [float(np.sqrt(np.mean(y**2)))]}, plain[1])
    zeros = [_kb_run(np.zeros(64))]
    assert judge.trial_result(task, trial, plain, zeros, "check").ok  # the hole, without it
    result = judge.trial_result(task, trial, said, zeros, "check")
    assert not result.ok and "wrong at 64 of 64 elements" in result.reason
    assert judge.trial_result(task, trial, said, [_kb_run(truth.astype(np.float32))], "check").ok


def test_zeros_in_the_timed_calls_do_not_match_tiny_outputs_either() -> None:
    """The timed calls hold a KernelBench output to the same share of its RMS, read from the
    reference's sketch of it in each call; a CUDA task's keep the task's own tolerance."""
    task = load_task(EXAMPLES / "kernelbench" / "l1_rows.py")
    x = np.random.default_rng(1).standard_normal(65536)
    y = x / np.abs(x).sum()

    def kb_round(values: np.ndarray) -> dict[str, Any]:
        out = {**_round(values.astype(np.float32)), "inputs": ["a"], "inputs_after": ["a"]}
        out |= {"meta": [{"dtype": "float32", "shape": [65536]}]}
        out["sketch"] = {"output 0": out.pop("sketch")["y"]}
        return out

    verdict, why, _ = judge.rounds_problem(task, [kb_round(y)] * 8, [kb_round(0 * y)] * 8)
    assert verdict == "wrong" and "differs from the reference kernel's" in why
    assert judge.rounds_problem(task, [kb_round(y)] * 8, [kb_round(y)] * 8)[:2] == ("", "")
    tiny = [0.0, 0.0, 0.0, 1e-12, 0.0, 0.0, 0.0, 0.0]  # a sketch of outputs near 1e-8
    assert judge.OUTPUTS["kernelbench"].round_atol(1e-4, tiny, 10_000) == pytest.approx(1e-6)
    assert judge.OUTPUTS["cuda"].round_atol(1e-5, tiny, 10_000) == 1e-5
    assert judge.OUTPUTS["cpp"].round_atol(1e-5, tiny, 10_000) == 1e-5


def test_how_far_honest_timed_outputs_may_be_from_the_references() -> None:
    """One tolerance (the candidate's to the truth, as in its trials) plus the reference's own
    measured miss of the truth, never more than two: the candidate's trials hold it to the
    truth, and its timed calls are held to the reference's outputs."""
    gelu = load_task(EXAMPLES / "gelu")  # a float64 reference: its own kernel's miss counts
    kb = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    bare = gelu.model_copy(update={"reference_python": ""})  # its own kernel is the truth
    assert judge.honest_times(bare, "y", None) == 1.0
    assert judge.honest_times(gelu, "y", None) == 2.0  # not measured: as before, two
    assert judge.honest_times(gelu, "y", {"y": 0.07}) == pytest.approx(1.07)
    assert judge.honest_times(gelu, "y", {"y": math.inf}) == 2.0
    assert judge.honest_times(gelu, "y", {"y": 40.0}) == 2.0
    assert judge.honest_times(kb, "output 0", {"output 0": 0.01}) == pytest.approx(1.01)
    # a widened tolerance (3x the native's miss) is already the candidate's
    assert judge.honest_times(kb, "output 0", {"output 0": 1.0}, 3.0) == pytest.approx(4 / 3)
    into: dict[str, float] = {}
    judge.reference_misses(kb, {"native_slack": [0.2, "x"]}, into)
    judge.reference_misses(kb, {"native_slack": [0.1, 0.5]}, into)
    assert into == {"output 0": 0.2, "output 1": math.inf}
    into = {}
    judge.reference_misses(gelu, {"kernel_miss": {"y": 0.05}}, into)
    judge.reference_misses(gelu, {"kernel_miss": {"y": -1}}, into)
    assert into == {"y": math.inf}
    # no float64 forward: the trial's truth was the reference's own forward, missed by
    # nothing, so a timed call gets one tolerance, not two (a GEMM in TF32 only when timed
    # passed every drift test at two)
    native = {"reference": "PyTorch eager", "meta": [{"dtype": "float32"}] * 2}
    into = {}
    judge.reference_misses(kb, native, into)
    assert into == {"output 0": 0.0, "output 1": 0.0}
    assert judge.honest_times(kb, "output 0", into) == 1.0
    judge.reference_misses(kb, {"native_slack": [0.3, 0.1]}, into)  # another trial's float64
    assert into == {"output 0": 0.3, "output 1": 0.1}
    into = {}
    judge.reference_misses(kb, {"reference": "PyTorch eager in float64"}, into)
    assert into == {}  # float64 ran but said nothing: unknown, as before


def _off_every_call(
    task: Any, y: np.ndarray, seed: int, calls: int = 100
) -> Callable[[float], list[dict[str, Any]]]:
    """Timed calls whose every element is `by` tolerances off y, each call with random signs."""
    atol, rtol = judge.OUTPUTS["cuda"].tolerance(task, "float32")
    t = atol + rtol * np.abs(y)
    rng = np.random.default_rng(seed)

    def off(by: float) -> list[dict[str, Any]]:
        return [
            _round((y + by * t * rng.choice([-1.0, 1.0], y.size)).astype(np.float32))
            for _ in range(calls)
        ]

    return off


def test_a_timed_output_a_tolerance_and_a_half_off_in_every_call_is_caught(
    gelu_rounds: Any,
) -> None:
    """Exact in its trials, 1.5 tolerances off at every element of every timed call (a
    matmul on TF32 tensor cores only when timed): the signed sums, held to two tolerances,
    read a mean z^2 near 0.56 and let it through; held to one plus the reference's measured
    miss, they catch it over the calls. An honest candidate 0.9 tolerances off everywhere
    still passes."""
    task, y = gelu_rounds
    ref = [_round(y)] * 100
    off = _off_every_call(task, y, 7)

    exact = {"y": 0.0}
    verdict, why, _ = judge.rounds_problem(task, ref, off(1.5), misses=exact)
    assert verdict == "wrong" and "consistently further" in why
    assert judge.rounds_problem(task, ref, off(1.5))[:2] == ("", "")  # the old two tolerances
    assert judge.rounds_problem(task, ref, off(0.9), misses=exact)[:2] == ("", "")


def test_timed_calls_go_on_while_the_drift_test_is_undecided(gelu_rounds: Any) -> None:
    """A candidate 1.5 tolerances off in every timed call reads a mean z^2 near 2.25: past the
    drift limit over 200 signed sums, not over 20. Judged as the rounds come in, it is
    undecided after 10 calls (the rounds go on) and caught by 100. An honest one 0.3
    tolerances off everywhere is settled at once and costs no round more; one 0.9 off
    everywhere (the worst honest case, mean z^2 near 0.81) may cost rounds, never a verdict.
    Rounds that end with the test undecided vouch for nothing: implausible."""
    task, y = gelu_rounds
    ref = [_round(y)] * 100
    off = _off_every_call(task, y, 8)

    exact = {"y": 0.0}
    cheat, honest, edge = off(1.5), off(0.3), off(0.9)
    calls = judge.TimedCalls(task, misses=exact)
    assert not calls.settled(ref[:10], cheat[:10])  # 20 sums: undecided, more rounds
    assert calls.seen == 10 and len(calls.zs) == 20
    assert calls.settled(ref, cheat) and calls.caught  # the next 80 calls decide it
    # ended there (the budget spent, or rounds a candidate made slow): never correct
    verdict, why, _ = judge.rounds_problem(task, ref[:10], cheat[:10], misses=exact)
    assert verdict == "implausible" and "before enough calls could decide it" in why
    fair = judge.TimedCalls(task, misses=exact)
    assert fair.settled(ref[:20], honest[:20]) and not fair.caught
    worst = judge.TimedCalls(task, misses=exact)
    worst.settled(ref[:20], edge[:20])
    worst.settled(ref, edge)
    assert not worst.caught
    assert judge.rounds_problem(task, ref, edge, misses=exact)[:2] == ("", "")
    # judged on their own (a C++ kernel's audited calls), calls end no rounds: no such verdict
    assert judge.rounds_problem(task, ref[:10], cheat[:10], misses=exact, ended=False)[:2] == (
        "",
        "",
    )
    assert not sketch.drift_undecided([]) and not sketch.drift_undecided([0.5] * 40)
    assert sketch.drift_undecided([1.5] * 40) and not sketch.drift_undecided([1.5] * 4000)


def test_a_drift_left_undecided_is_suspect_only_past_what_honest_outputs_give_by_chance() -> None:
    """Honest outputs' mean z^2 is at most 1, yet over few signed sums the sample's passes 1
    often (at a true 0.81, over 4 sums about 29% of the time): reading every undecided drift
    implausible would have failed honest candidates of short rounds and every C++ audit's
    single call. Only a mean past 1 + 3 sqrt(2 / m) is suspect: honest at 0.81 about 0.4% at
    4 sums and less with more; a candidate 1.5 tolerances off (2.25) at 52 sums nearly
    always."""
    rng = random.Random(5)

    def share(true_mean: float, m: int, draws: int = 4000) -> float:
        """How often such sums are suspect or, past the limit, wrong."""
        sd, hits = math.sqrt(true_mean), 0
        for _ in range(draws):
            zs = [rng.gauss(0.0, sd) for _ in range(m)]
            hits += sketch.drift_suspect(zs) or bool(sketch.drift_problem(zs))
        return hits / draws

    assert share(0.81, 4) < 0.01 and share(0.81, 24) < 0.01 and share(0.5, 8) < 0.005
    assert share(2.25, 52) > 0.9 and share(1.69, 52) > 0.5
    assert not sketch.drift_suspect([]) and not sketch.drift_suspect([100.0] * 40)  # wrong
