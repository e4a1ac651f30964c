"""The controller's judgement of what workers sent: trials against expected outputs, and timed
rounds of the candidate against the reference's rounds on the same inputs (pure functions of
recorded messages: tested without a GPU). A worker's word about itself counts for nothing:
only raw outputs, checksums and sketches do, set against the reference's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from . import correctness, sketch
from .cuda_roles import reference_dtype
from .kernelbench import KernelBenchTask
from .plan import Trial
from .protocol import Expect, Frame
from .results import TrialResult
from .spec import CudaTask
from .task import Task

Message = tuple[dict[str, Any], list[Frame]]
Expected = list[tuple[str, np.ndarray, str]]  # (name, expected array, native dtype) an output


def _np_dtype(name: str) -> str:
    return "uint16" if name == "bfloat16" else name


def kernelbench_tolerance(dtype: str) -> tuple[float, float]:
    atol, rtol = correctness.tolerance(dtype, None, None)
    return max(atol, 1e-4), max(rtol, 1e-4)  # library kernels reorder sums


# An absolute tolerance forgives error near zero, never an output's whole scale: it is at most
# ATOL_SHARE of the output's RMS (a softmax or an L1 norm over many columns has every value under
# KernelBench's 1e-4, which zeros would have matched), and never shrinks by more than
# ATOL_SHRINK_MAX (where the RMS is itself rounding noise).
ATOL_SHARE = 0.01
ATOL_SHRINK_MAX = 100.0


def output_atol(atol: float, rms: Any) -> float:
    """The absolute tolerance of an output whose values' RMS is `rms` (the float64 reference's,
    sampled by the reference's worker), as ATOL_SHARE says; `atol` where the RMS is not said."""
    if not isinstance(rms, int | float) or not 0 <= rms < float("inf"):
        return atol
    return min(atol, max(ATOL_SHARE * float(rms), atol / ATOL_SHRINK_MAX))


SLACK_TIMES = 3.0  # a candidate may miss float64 by this many times PyTorch's own run's miss
SCALE_MAX = 100.0  # float32's 1e-4 at most 1e-2: KernelBench's own harness's tolerance


def native_scale(ref_header: dict[str, Any], j: int) -> float:
    """By how much output j's tolerance widens (1 at the least, SCALE_MAX at the most): where
    the problem's forward in its own dtypes (PyTorch eager, with its defaults: TF32
    convolutions) fell short of the float64 expected outputs, a candidate may fall SLACK_TIMES
    as far; the reference's worker measured it (torch_roles.native_slack) and the candidate
    has no say in it."""
    slack = ref_header.get("native_slack")
    if not isinstance(slack, list) or not 0 <= j < len(slack):
        return 1.0
    value = slack[j]
    if not isinstance(value, int | float) or not value >= 0:
        return 1.0
    return min(SCALE_MAX, max(1.0, SLACK_TIMES * float(value)))


# what a scaled trial's inputs (and a scaled timed call's) are, in a verdict's reason
SCALED_INPUTS = "a span of get_inputs()'s, scaled, half of it negated"


def scaled_trial(result: TrialResult, trial: Trial, ref_header: dict[str, Any]) -> TrialResult:
    """A trial on inputs scaled up (plan.SCALES; half of each span negated), judged as any
    trial where the float64 forward gave no NaN (the op is defined there) and PyTorch's own
    forward in the problem's dtypes stayed finite and within SCALE_MAX's widening of float64;
    else not counted, whatever the candidate gave: it is held to the problem's own numerics,
    never beyond them. Neither the scale nor those measures come from the candidate."""
    scale = trial.scale
    slack = ref_header.get("native_slack")
    nan64 = ref_header.get("float64_nan")
    near = (
        isinstance(slack, list)
        and len(slack) > 0
        and all(
            isinstance(v, int | float) and v >= 0 and v * SLACK_TIMES < SCALE_MAX for v in slack
        )
    )
    defined = type(nan64) is int and nan64 == 0
    if not (near and defined):
        why = f"not counted: on inputs x{scale:g}, " + (
            "PyTorch's own forward in the problem's dtypes had no float64 to meet"
            if not isinstance(slack, list)
            else "the float64 forward is NaN there (the op is not defined there)"
            if not defined
            else "PyTorch's own forward in the problem's dtypes is not near float64"
        )
        return result.model_copy(
            update={"scale": scale, "counted": False, "ok": True, "reason": why}
        )
    reason = (
        result.reason if result.ok else f"on inputs x{scale:g} ({SCALED_INPUTS}): {result.reason}"
    )
    return result.model_copy(update={"scale": scale, "reason": reason})


def timed_scale(results: Sequence[TrialResult]) -> float:
    """The scale every timed call's inputs take (1: get_inputs()'s own): a scaled trial's that
    counted, so the calls that are timed are never ones a careless path gets right (an
    exponent taken without its max, a clamp left out) while the trials see wider inputs. The
    candidate's process, which makes its own inputs, can know which calls are scaled; with
    every timed call scaled, being careful only then gains it nothing. The trial at the bench
    size (where the calls are timed) decides, not one held out."""
    return next(
        (t.scale for t in results if t.scale != 1.0 and t.counted and t.ok and not t.held_out),
        1.0,
    )


def native_scales(ref_header: dict[str, Any], into: dict[str, float]) -> None:
    """Each output's native_scale from a reference trial's header, kept in `into` (by output
    name) where it is the most so far: the timed calls' tolerance (rounds_problem)."""
    slack = ref_header.get("native_slack")
    for j in range(len(slack) if isinstance(slack, list) else 0):
        name = f"output {j}"
        into[name] = max(into.get(name, 1.0), native_scale(ref_header, j))


def widened(scales: Mapping[str, float]) -> str:
    """The words a verdict's reason adds where a tolerance was widened ("" where none was)."""
    wide = {n: v for n, v in scales.items() if v > 1.0}
    if not wide:
        return ""
    each = ", ".join(f"'{n}' {v:.3g}x" for n, v in sorted(wide.items()))
    return (
        f"; tolerance widened ({each}): PyTorch's own run in the problem's dtypes misses the "
        f"float64 outputs by a third of that"
    )


def scaled(atol: float, rtol: float, scale: float) -> tuple[float, float]:
    return atol * scale, rtol * scale


def trial_tolerance(
    task: Task, dtype: str, ref_header: dict[str, Any], j: int
) -> tuple[float, float]:
    """(atol, rtol) for a trial's output j: its kind's for the dtype, the absolute one at most
    a share of the output's RMS where the reference's header says it (output_atol), widened
    where the header says (native_scale)."""
    atol, rtol = OUTPUTS[task.kind].tolerance(task, dtype)
    rms = ref_header.get("rms64")
    atol = output_atol(atol, rms[j] if isinstance(rms, list) and 0 <= j < len(rms) else None)
    return scaled(atol, rtol, native_scale(ref_header, j))


TaskT = TypeVar("TaskT", contravariant=True)


class KindOutputs(Protocol[TaskT]):
    """How the judge reads one task kind's outputs: the only part of it that differs by kind,
    looked up by `task.kind` (OUTPUTS)."""

    def reference_expect(self, task: TaskT, trial: Trial, limit: int) -> Expect:
        """The arrays the reference's worker may send for a trial."""
        ...

    def output_expect(self, task: TaskT, trial: Trial, ref: dict[str, Any]) -> Expect:
        """Exactly the arrays a candidate's run must send: what the reference's outputs are."""
        ...

    def expected(
        self, task: TaskT, trial: Trial, header: dict[str, Any], arrays: list[Frame]
    ) -> Expected:
        """Each output as the reference's worker sent it."""
        ...

    def described_problem(
        self, header: dict[str, Any], ref_header: dict[str, Any], j: int, name: str, native: str
    ) -> str:
        """What is wrong with output j as a candidate's run describes it ("" if nothing)."""
        ...

    def unwritten(self, task: TaskT, trial: Trial, name: str, per_run: list[np.ndarray]) -> str:
        """Which elements of an output no run wrote ("" if none, or if it cannot be told)."""
        ...

    def tolerance(self, task: TaskT, dtype: str) -> tuple[float, float]:
        """(atol, rtol) for an output of this dtype."""
        ...

    def inputs_differ(self, call: str) -> tuple[str, str]:
        """(verdict, why) when a timed call's inputs are not the reference's."""
        ...

    def round_outputs_problem(self, ref: dict[str, Any], cand: dict[str, Any], call: str) -> str:
        """What is wrong with a timed call's outputs beyond their sketches ("" if nothing)."""
        ...

    def round_output(self, task: TaskT, name: str, ref: dict[str, Any]) -> tuple[int, str]:
        """(elements, dtype) of a timed call's output."""
        ...

    def device_shapes(
        self, task: TaskT, trial: Trial, ref_header: dict[str, Any]
    ) -> list[tuple[str, str, tuple[int, ...]]]:
        """(name, dtype, shape) of each output a run compared on the GPU must hand over."""
        ...

    def round_atol(self, atol: float, want: Sequence[float], n: int) -> float:
        """A timed call's absolute tolerance for an output, from the reference's sketch of it
        (`n` elements)."""
        ...

    def handed_over_problem(self, header: dict[str, Any], ref_header: dict[str, Any]) -> str:
        """What is wrong with the outputs a run handed over, beyond what its task declares
        ("" if nothing): their count, dtypes and shapes where the run decides them."""
        ...


class DeclaredOutputs:
    """A CUDA task's outputs: its out and inout arguments, at the shapes the task declares, as
    the harness copies them out of the kernel's buffers."""

    def reference_expect(self, task: CudaTask, trial: Trial, limit: int) -> Expect:
        if trial.device:  # kept on the GPU, compared there (devcompare.py)
            return Expect(sizes=())
        sizes = []
        for a in task.args:
            if a.role in ("out", "inout"):
                n = math.prod(task.shape(a, trial.sizes))
                dtype = reference_dtype(a.dtype, n) if task.reference_python else a.dtype
                sizes.append(n * np.dtype(dtype).itemsize)
        return Expect(sizes=tuple(sizes))

    def output_expect(self, task: CudaTask, trial: Trial, ref: dict[str, Any]) -> Expect:
        return Expect(
            sizes=tuple(
                math.prod(task.shape(a, trial.sizes)) * np.dtype(a.dtype).itemsize
                for a in task.args
                if a.role in ("out", "inout")
            )
        )

    def expected(
        self, task: CudaTask, trial: Trial, header: dict[str, Any], arrays: list[Frame]
    ) -> Expected:
        out = []
        names = [a for a in task.args if a.role in ("out", "inout")]
        for arg, raw, dtype in zip(names, arrays, header["dtypes"], strict=True):
            shape = task.shape(arg, trial.sizes)
            out.append((arg.name, np.frombuffer(raw, dtype=dtype).reshape(shape), arg.dtype))
        return out

    def described_problem(
        self, header: dict[str, Any], ref_header: dict[str, Any], j: int, name: str, native: str
    ) -> str:
        return ""  # the harness describes a kernel's outputs, from the task: never the kernel

    def unwritten(self, task: CudaTask, trial: Trial, name: str, per_run: list[np.ndarray]) -> str:
        role = next(a.role for a in task.args if a.name == name)
        if role == "out" and len(per_run) == len(trial.poisons) == 2:
            return correctness.unwritten(name, per_run, list(trial.poisons))
        return ""

    def tolerance(self, task: CudaTask, dtype: str) -> tuple[float, float]:
        return correctness.tolerance(dtype, task.atol, task.rtol)

    def inputs_differ(self, call: str) -> tuple[str, str]:
        return "implausible", f"during timing ({call}): its inputs differ from the seed's"

    def round_outputs_problem(self, ref: dict[str, Any], cand: dict[str, Any], call: str) -> str:
        return ""  # declared by the task: the same in every call

    def round_output(self, task: CudaTask, name: str, ref: dict[str, Any]) -> tuple[int, str]:
        arg = next(a for a in task.args if a.name == name)
        return math.prod(task.shape(arg, task.bench)), arg.dtype

    def device_shapes(
        self, task: CudaTask, trial: Trial, ref_header: dict[str, Any]
    ) -> list[tuple[str, str, tuple[int, ...]]]:
        return [
            (a.name, a.dtype, tuple(task.shape(a, trial.sizes)))
            for a in task.args
            if a.role in ("out", "inout")
        ]

    def handed_over_problem(self, header: dict[str, Any], ref_header: dict[str, Any]) -> str:
        return ""  # declared by the task: the harness allocated them

    def round_atol(self, atol: float, want: Sequence[float], n: int) -> float:
        return atol  # the task's own, as in its trials


class ReturnedOutputs:
    """A KernelBench problem's outputs: whatever its forward returns, as the reference's worker
    describes them (dtype and shape); bfloat16 travels as its bits."""

    def reference_expect(self, task: KernelBenchTask, trial: Trial, limit: int) -> Expect:
        if trial.device:  # kept on the GPU, compared there (devcompare.py)
            return Expect(sizes=())
        return Expect(total=limit)

    def output_expect(self, task: KernelBenchTask, trial: Trial, ref: dict[str, Any]) -> Expect:
        return Expect(
            sizes=tuple(
                math.prod(m["shape"]) * np.dtype(_np_dtype(m["dtype"])).itemsize
                for m in ref.get("native", [])
            )
        )

    def expected(
        self, task: KernelBenchTask, trial: Trial, header: dict[str, Any], arrays: list[Frame]
    ) -> Expected:
        out = []
        for i, (raw, meta, native) in enumerate(
            zip(arrays, header["meta"], header["native"], strict=True)
        ):
            arr = np.frombuffer(raw, dtype=_np_dtype(meta["dtype"])).reshape(meta["shape"])
            out.append((f"output {i}", arr, native["dtype"]))
        return out

    def described_problem(
        self, header: dict[str, Any], ref_header: dict[str, Any], j: int, name: str, native: str
    ) -> str:
        metas = header.get("meta") or []
        meta = metas[j] if j < len(metas) and isinstance(metas[j], dict) else {}
        claimed = (meta.get("dtype"), list(meta.get("shape", [])))
        want = (native, list(ref_header["native"][j]["shape"]))
        if claimed != want:
            return f"{name} is {claimed[0]} {claimed[1]}, expected {want[0]} {want[1]}"
        return ""

    def unwritten(
        self, task: KernelBenchTask, trial: Trial, name: str, per_run: list[np.ndarray]
    ) -> str:
        return ""  # a forward returns new tensors: there is no poisoned buffer to look at

    def tolerance(self, task: KernelBenchTask, dtype: str) -> tuple[float, float]:
        return kernelbench_tolerance(dtype)

    def inputs_differ(self, call: str) -> tuple[str, str]:
        return (
            "error",
            "the problem's get_inputs() made other inputs for the same seed in the "
            "candidate's worker than in the reference's (kernelwright seeds torch, numpy "
            "and random): outputs cannot be compared",
        )

    def round_outputs_problem(self, ref: dict[str, Any], cand: dict[str, Any], call: str) -> str:
        if cand.get("meta") != ref.get("meta"):
            return f"outputs during timing ({call}) are {cand.get('meta')}"
        return ""

    def round_output(
        self, task: KernelBenchTask, name: str, ref: dict[str, Any]
    ) -> tuple[int, str]:
        meta = (ref.get("meta") or [])[int(name.split()[-1])]
        return math.prod(meta["shape"]), meta["dtype"]

    def device_shapes(
        self, task: KernelBenchTask, trial: Trial, ref_header: dict[str, Any]
    ) -> list[tuple[str, str, tuple[int, ...]]]:
        return [
            (f"output {j}", str(m["dtype"]), tuple(int(d) for d in m["shape"]))
            for j, m in enumerate(ref_header.get("native") or [])
        ]

    def round_atol(self, atol: float, want: Sequence[float], n: int) -> float:
        """As the trials' (output_atol), from the RMS of the reference's output in this call
        (its sketch's sum of squares over its finite elements)."""
        f = dict(zip(sketch.FIELDS, want, strict=False))
        finite = n - f.get("nan", 0) - f.get("pinf", 0) - f.get("ninf", 0)
        sq = f.get("sq")
        rms = (
            (sq / finite) ** 0.5 if isinstance(sq, int | float) and sq >= 0 and finite > 0 else None
        )
        return output_atol(atol, rms)

    def handed_over_problem(self, header: dict[str, Any], ref_header: dict[str, Any]) -> str:
        natives = ref_header.get("native") or []
        count = len(header.get("device") or [])
        if count != len(natives):
            return _count_problem(count, len(natives))
        for j, native in enumerate(natives):
            described = self.described_problem(
                header, ref_header, j, f"output {j}", str(native["dtype"])
            )
            if described:
                return described
        return ""


class FunctionOutputs(DeclaredOutputs):
    """A C++ task's outputs: its out and inout arguments and its returned value, as declared;
    expected in their own dtypes (the C++ function's, computed on the CPU by cpp_check.py), to
    the task's tolerance, or exactly (compare = "exact"). An output with a declared start
    (fill:V) is never poisoned: what its kernel leaves of V is its answer."""

    def reference_expect(self, task: Any, trial: Trial, limit: int) -> Expect:
        return self.output_expect(task, trial, {})

    def tolerance(self, task: Any, dtype: str) -> tuple[float, float]:
        if task.compare == "exact":
            return 0.0, 0.0
        return correctness.tolerance(dtype, task.atol, task.rtol)


# Each task kind's outputs, by `task.kind`.
OUTPUTS: dict[str, KindOutputs[Any]] = {
    "cuda": DeclaredOutputs(),
    "kernelbench": ReturnedOutputs(),
    "cpp": FunctionOutputs(),
}


def reference_expect(task: Task, trial: Trial, limit: int) -> Expect:
    """The arrays the reference's worker may send for a trial."""
    return OUTPUTS[task.kind].reference_expect(task, trial, limit)


def output_expect(task: Task, trial: Trial, ref: dict[str, Any]) -> Expect:
    """Exactly the arrays a candidate's run must send: what the reference's outputs are."""
    return OUTPUTS[task.kind].output_expect(task, trial, ref)


def expected_arrays(
    task: Task, trial: Trial, header: dict[str, Any], arrays: list[Frame]
) -> Expected:
    """(name, expected array, native dtype) for each output, from the reference worker."""
    return OUTPUTS[task.kind].expected(task, trial, header, arrays)


def trial_result(
    task: Task,
    trial: Trial,
    ref: Message,
    runs: Sequence[Message],
    phase: str,
) -> TrialResult:
    """A trial's verdict from the candidate's runs against the reference's expected outputs."""
    ref_header, ref_arrays = ref
    outputs = OUTPUTS[task.kind]
    expected = outputs.expected(task, trial, ref_header, ref_arrays)
    got_runs: list[list[np.ndarray]] = []
    problem = ""
    for header, arrays in runs:
        if header.get("problem"):  # the worker can only ever incriminate the candidate
            problem = problem or str(header["problem"])[:500]
            continue
        if header.get("guards") and not problem:
            names = ", ".join(f"'{n}'" for n in header["guards"][:8])
            problem = (
                f"wrote outside {names}: the memory just before or after it changed "
                f"(an out-of-bounds write)"
            )
        if len(arrays) != len(expected):
            problem = problem or _count_problem(len(arrays), len(expected))
            continue
        got = []
        for j, ((name, exp, native), raw) in enumerate(zip(expected, arrays, strict=True)):
            described = outputs.described_problem(header, ref_header, j, name, native)
            if described:
                problem = problem or described
                break
            if len(raw) != exp.size * np.dtype(_np_dtype(native)).itemsize:
                problem = problem or f"{name} has the wrong size"
                break
            got.append(np.frombuffer(raw, dtype=_np_dtype(native)).reshape(exp.shape))
        got_runs.append(got)
        if header.get("checksums") != ref_header.get("checksums") and not problem:
            changed = _changed_input(header.get("checksums"), ref_header.get("checksums"))
            problem = f"input modified: {changed} differs after the call"

    def result(
        ok: bool, reason: str = "", abs_err: float | None = None, rel_err: float | None = None
    ) -> TrialResult:
        return _trial_result(trial, phase, ok, reason, abs_err, rel_err)

    def fail(
        reason: str, abs_err: float | None = None, rel_err: float | None = None
    ) -> TrialResult:
        return result(False, reason, abs_err, rel_err)

    if problem:
        return fail(problem)
    worst_abs, worst_rel = 0.0, 0.0
    for j, (name, exp, native) in enumerate(expected):
        per_run = [r[j] for r in got_runs]
        unwritten = outputs.unwritten(task, trial, name, per_run)
        if unwritten:
            return fail(unwritten)
        atol, rtol = trial_tolerance(task, native, ref_header, j)
        if native == "bfloat16":
            per_run = [_bf16_to_f32(r) for r in per_run]
        for out in per_run:
            outcome = correctness.compare(name, out, exp, atol, rtol)
            if not outcome.ok:
                return fail(outcome.reason, outcome.max_abs_err, outcome.max_rel_err)
            worst_abs = max(worst_abs, outcome.max_abs_err or 0.0)
            worst_rel = max(worst_rel, outcome.max_rel_err or 0.0)
        if len(per_run) == 2:
            reason = correctness.runs_agree(name, per_run[0], per_run[1], atol, rtol)
            if reason:
                return fail(reason)
    return result(True, abs_err=worst_abs, rel_err=worst_rel)


def _count_problem(got: int, expected: int) -> str:
    """A run's outputs counted against the reference's, in the words a run's unexpected reply
    gets off the GPU (sandbox._unexpected) (pure)."""
    return f"returned {got} outputs, expected {expected}: not the reference's outputs"


# At most this many outputs handed over in one run (a forward's returned tensors).
MAX_HANDED_OVER = 64


def device_places(header: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The memory a run handed over, one place an output, as its header says (None when it
    handed over nothing: a run whose header names a problem). Raises ValueError when the
    header says neither sensibly."""
    places = header.get("device")
    if header.get("problem") and places is None:
        return None
    if (
        not isinstance(places, list)
        or len(places) > MAX_HANDED_OVER
        or not all(isinstance(p, dict) for p in places)
    ):
        raise ValueError("its outputs were not handed over")
    return places


def device_outputs(
    task: Task, trial: Trial, header: dict[str, Any], ref_header: dict[str, Any]
) -> list[dict[str, Any]]:
    """What the reference's worker needs to compare a candidate's run of a trial on the GPU:
    each output's place in the memory handed over (as the candidate's worker reports it:
    checked against the allocation there), and its dtype, shape and tolerance from the task
    (a CUDA task's declared outputs) or from the reference's own run (a KernelBench
    problem's returned tensors), never from the candidate. Raises ValueError when the run
    does not describe exactly one place per output."""
    places, shapes = device_places(header) or [], _device_shapes(task, trial, ref_header)
    if len(places) != len(shapes):
        raise ValueError("its outputs were not handed over")
    described = []
    for j, (place, (_, dtype, shape)) in enumerate(zip(places, shapes, strict=True)):
        atol, rtol = trial_tolerance(task, dtype, ref_header, j)
        described.append(
            {
                "size": int(place.get("size", 0)),
                "offset": int(place.get("offset", -1)),
                "dtype": dtype,
                "shape": list(shape),
                "atol": atol,
                "rtol": rtol,
            }
        )
    return described


def _device_shapes(
    task: Task, trial: Trial, ref_header: dict[str, Any]
) -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, dtype, shape) of each output a run of this trial must hand over."""
    return OUTPUTS[task.kind].device_shapes(task, trial, ref_header)


def device_run_problem(task: Task, header: dict[str, Any], ref_header: dict[str, Any]) -> str:
    """What is wrong with a run compared on the GPU that its header alone shows, checked as
    `trial_result` checks a run sent to the host ("" if nothing): a problem it reports, a
    write outside an output, a returned output of another count, dtype or shape than the
    reference's, a changed input."""
    if header.get("problem"):
        return str(header["problem"])[:500]
    if header.get("guards"):
        names = ", ".join(f"'{n}'" for n in header["guards"][:8])
        return (
            f"wrote outside {names}: the memory just before or after it changed "
            f"(an out-of-bounds write)"
        )
    if problem := OUTPUTS[task.kind].handed_over_problem(header, ref_header):
        return problem
    if header.get("checksums") != ref_header.get("checksums"):
        changed = _changed_input(header.get("checksums"), ref_header.get("checksums"))
        return f"input modified: {changed} differs after the call"
    return ""


# One run compared on the GPU: its header, each output's facts, and (a second run) each
# output's facts against the first run's.
DeviceRun = tuple[dict[str, Any], Sequence[Any], Sequence[Any] | None]


def device_trial_result(
    task: Task,
    trial: Trial,
    ref_header: dict[str, Any],
    runs: Sequence[DeviceRun],
    phase: str,
) -> TrialResult:
    """A trial's verdict from the facts the reference's worker found on the GPU, each run's
    header checked as `trial_result` checks it, and a second run held to the first as
    correctness.runs_agree holds it."""
    shapes = _device_shapes(task, trial, ref_header)

    def result(ok: bool, reason: str = "", abs_err: Any = None, rel_err: Any = None) -> TrialResult:
        return _trial_result(trial, phase, ok, reason, abs_err, rel_err, on_gpu=True)

    for header, _, _ in runs:
        if problem := device_run_problem(task, header, ref_header):
            return result(False, problem)
    if len(runs) != len(trial.poisons):
        return result(False, f"{len(runs)} runs compared, expected {len(trial.poisons)}")
    worst_abs, worst_rel = 0.0, 0.0
    for _, found, agreed in runs:
        if len(found) != len(shapes):
            return result(False, f"{len(found)} outputs compared, expected {len(shapes)}")
        for j, ((name, dtype, shape), facts) in enumerate(zip(shapes, found, strict=True)):
            if not isinstance(facts, dict) or facts.get("problem"):
                why = facts.get("problem") if isinstance(facts, dict) else "nothing"
                return result(False, f"output '{name}' could not be compared: {str(why)[:300]}")
            atol, rtol = trial_tolerance(task, dtype, ref_header, j)
            outcome = correctness.outcome(name, shape, facts, atol, rtol)
            if not outcome.ok:
                return result(False, outcome.reason, outcome.max_abs_err, outcome.max_rel_err)
            worst_abs = max(worst_abs, outcome.max_abs_err or 0.0)
            worst_rel = max(worst_rel, outcome.max_rel_err or 0.0)
            if agreed is None:
                continue
            other = agreed[j] if j < len(agreed) else None
            if not isinstance(other, dict) or other.get("problem"):
                return result(False, f"output '{name}': its two runs could not be compared")
            if not correctness.outcome(name, shape, other, atol, rtol).ok:
                return result(False, correctness.runs_differ(name))
    return result(True, abs_err=worst_abs, rel_err=worst_rel)


def _trial_result(
    trial: Trial,
    phase: str,
    ok: bool,
    reason: str,
    abs_err: float | None,
    rel_err: float | None,
    on_gpu: bool = False,
) -> TrialResult:
    return TrialResult(
        sizes=trial.sizes,
        held_out=trial.held_out,
        phase=phase,  # type: ignore[arg-type]
        ok=ok,
        reason=reason,
        max_abs_err=abs_err,
        max_rel_err=rel_err,
        inits=trial.inits,
        on_gpu=on_gpu,
    )


def _bf16_to_f32(raw: np.ndarray) -> np.ndarray:
    return (raw.astype(np.uint32) << 16).view(np.float32)


def _changed_input(got: Any, want: Any) -> str:
    if isinstance(got, dict) and isinstance(want, dict):
        names = [k for k in want if got.get(k) != want[k]]
        return ", ".join(f"'{n}'" for n in names[:8]) or "an input"
    if isinstance(got, list) and isinstance(want, list):
        idx = [str(i) for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w]
        return "input " + ", ".join(idx[:8]) if idx else "an input"
    return "an input"


def reference_misses(task: Task, ref_header: dict[str, Any], into: dict[str, float]) -> None:
    """How far the outputs the reference's worker times missed the truth its trial held the
    candidate to, in tolerances, from a reference trial's header, kept in `into` by output
    name where it is the most so far (honest_times): a KernelBench forward's in the problem's
    own dtypes (native_slack), a CUDA task's own kernel against its float64 Python reference
    (kernel_miss). A value that is not a non-negative number counts as unknown (inf). Where
    the float64 forward could not run, the trial's truth was the very forward the reference
    times: it misses it by nothing (a default of "unknown" doubled every timed call's
    tolerance there: a candidate careless only when timed, TF32 on a GEMM, passed)."""
    if task.kind == "kernelbench":
        said = ref_header.get("native_slack")
        meta = ref_header.get("meta")
        if said is None and ref_header.get("reference") == "PyTorch eager":
            said = [0.0] * len(meta) if isinstance(meta, list) else None
        each = {f"output {j}": v for j, v in enumerate(said)} if isinstance(said, list) else {}
    else:
        said = ref_header.get("kernel_miss")
        each = said if isinstance(said, dict) else {}
    for name, v in each.items():
        v = float(v) if isinstance(v, int | float) and v >= 0 else math.inf
        into[str(name)] = max(into.get(str(name), 0.0), v)


def honest_times(
    task: Task, name: str, misses: Mapping[str, float] | None, widen: float = 1.0
) -> float:
    """How many of its tolerances (widened `widen` times, as the trials' were) a timed call's
    output may honestly be from the reference's, 1 to 2 (sketch.problem): the candidate within
    one of the truth, the reference within its measured miss (reference_misses, in the
    unwidened tolerance). Where the reference is the truth (a CUDA task without a float64
    reference: its own kernel), 1; where its miss is not known, 2."""
    if task.kind == "cuda" and not getattr(task, "reference_python", None):
        return 1.0
    miss = (misses or {}).get(name)
    if miss is None or not math.isfinite(miss):
        return 2.0
    return 1.0 + min(1.0, miss / max(widen, 1.0))


class TimedCalls:
    """The timed calls' outputs judged call by call, each once, as the rounds come in
    (`settled`, given to schedule.Budget.outputs_settled) and when they are over (`judge`,
    rounds_problem's). The rounds go on while the drift test is undecided
    (sketch.drift_undecided), within the timing's own budget, and may stop once a call is
    caught; an honest candidate's mean z^2 stays under 1 and costs no round more. Still
    undecided when the rounds end (their budget spent, or cut short by a candidate that
    made them slow), and above what honest outputs give by chance (sketch.drift_suspect):
    implausible, never correct; a candidate off by 1.3 tolerances in every timed element,
    its rounds cut to 26 calls, passed the test at 52 signed sums."""

    def __init__(
        self,
        task: Task,
        scales: Mapping[str, float] | None = None,
        wide: Mapping[str, float] | None = None,
        misses: Mapping[str, float] | None = None,
    ) -> None:
        self.task, self.scales, self.wide, self.misses = task, scales, wide, misses
        self.seen = 0  # calls judged
        self.zs: list[float] = []  # their signed sums' z scores
        self.wrong_at: int | None = None  # the first call found wrong

    @property
    def caught(self) -> bool:
        return self.wrong_at is not None or bool(sketch.drift_problem(self.zs))

    def settled(
        self, ref_rounds: Sequence[dict[str, Any]], cand_rounds: Sequence[dict[str, Any]]
    ) -> bool:
        self._take(ref_rounds, cand_rounds)
        return self.caught or not sketch.drift_undecided(self.zs)

    def judge(
        self,
        ref_rounds: Sequence[dict[str, Any]],
        cand_rounds: Sequence[dict[str, Any]],
        ended: bool = True,
    ) -> tuple[str, str, list[float]]:
        """(verdict, why, z scores) over every call: rounds_problem's. `ended`: these are the
        rounds, over (a suspect drift left undecided reads implausible); False for calls
        judged on their own (a C++ kernel's audited calls)."""
        if len(ref_rounds) != len(cand_rounds):
            raise ValueError("the two sides timed different numbers of calls")
        self._take(ref_rounds, cand_rounds)
        if (i := self.wrong_at) is not None:  # said again, numbered out of every call
            call = f"timed call {i + 1} of {len(cand_rounds)}"
            verdict, why = self._call(ref_rounds[i], cand_rounds[i], call, [])
            return verdict, why, self.zs
        drift = sketch.drift_problem(self.zs)
        if drift:
            return "wrong", drift, self.zs
        if ended and sketch.drift_suspect(self.zs):  # the rounds ended first: no vouching
            return "implausible", sketch.drift_left_undecided(self.zs), self.zs
        return "", "", self.zs

    def _take(
        self, ref_rounds: Sequence[dict[str, Any]], cand_rounds: Sequence[dict[str, Any]]
    ) -> None:
        """The calls not yet judged, up to the first wrong one."""
        while self.wrong_at is None and self.seen < min(len(ref_rounds), len(cand_rounds)):
            i, self.seen = self.seen, self.seen + 1
            if self._call(ref_rounds[i], cand_rounds[i], f"timed call {i + 1}", self.zs)[0]:
                self.wrong_at = i

    def _call(
        self, ref: dict[str, Any], cand: dict[str, Any], call: str, zs: list[float]
    ) -> tuple[str, str]:
        """(verdict, why) for one timed call ("" verdict where it is right), its outputs' z
        scores added to `zs` as each passes."""
        task, outputs = self.task, OUTPUTS[self.task.kind]
        if cand.get("problem"):
            return "wrong", f"during timing ({call}): {str(cand['problem'])[:300]}"
        if cand.get("inputs") != ref.get("inputs"):
            return outputs.inputs_differ(call)
        if cand.get("inputs_after") != cand.get("inputs"):
            changed = _changed_input(cand.get("inputs_after"), cand.get("inputs"))
            return "wrong", f"input modified during timing ({call}): {changed}"
        # elements still holding the poison's bits, against the reference's own count of the
        # same call: a float's poison is a NaN no output holds, but a byte's or a short's is
        # an ordinary value, which an honest int8 output holds at about 1 element in 256 (the
        # task's own kernel had read wrong against itself: a red-team review)
        theirs = ref.get("unwritten") or {}
        for name, count in sorted((cand.get("unwritten") or {}).items()):
            if count and count != theirs.get(name, 0):
                return (
                    "wrong",
                    f"output '{name}' not fully written during timing ({call}: {int(count):,} "
                    f"elements untouched); the kernel behaves differently when timed",
                )
        if cand.get("guards"):
            names = ", ".join(f"'{n}'" for n in list(cand["guards"])[:8])
            return "wrong", f"wrote outside {names} during timing ({call})"
        if why := outputs.round_outputs_problem(ref, cand, call):
            return "wrong", why
        for name, want in (ref.get("sketch") or {}).items():
            if len(want) == len(sketch.FIELDS) and want[sketch.FIELDS.index("nan")]:
                continue  # the reference's own output is NaN somewhere in this call
            got = (cand.get("sketch") or {}).get(name)
            n, dtype = outputs.round_output(task, name, ref)
            atol, rtol = outputs.tolerance(task, dtype)
            atol = outputs.round_atol(atol, want, n)
            widen = (self.scales or {}).get(name, 1.0)
            atol, rtol = atol * max(widen, (self.wide or {}).get(name, 1.0)), rtol * widen
            times = honest_times(task, name, self.misses, widen)
            why, z = sketch.problem(f"output '{name}'", got or [], want, n, atol, rtol, times=times)
            if why:
                why = f"during timing ({call}): {why}; the kernel behaves differently when timed"
                return "wrong", why
            zs += z
        return "", ""


def rounds_problem(
    task: Task,
    ref_rounds: Sequence[dict[str, Any]],
    cand_rounds: Sequence[dict[str, Any]],
    scales: Mapping[str, float] | None = None,
    wide: Mapping[str, float] | None = None,
    misses: Mapping[str, float] | None = None,
    ended: bool = True,
) -> tuple[str, str, list[float]]:
    """(verdict, why, z scores) for the candidate's timed calls against the reference's on the
    same inputs: "" verdict when every call is right. Each round is judged whole: its inputs,
    every output's unwritten elements, and its sketch. `scales`: by output name, its tolerance
    widened as the trials' were (native_scale, the most over them; 1 where not said). `wide`:
    where the calls' inputs are scaled, the scaled trial's widening, for the absolute
    tolerance only (wide inputs move near-zero outputs by more; a relative tolerance widened
    too would let TF32 or bf16 through in the timed calls alone). `misses`: by output name,
    how far the reference's timed outputs missed the truth in the trials (reference_misses),
    which sets how far apart honest outputs may be (honest_times). An output the reference
    itself gave NaN in a call is not compared in that call: nothing there can match."""
    return TimedCalls(task, scales, wide, misses).judge(ref_rounds, cand_rounds, ended)
