"""The controller's judgement of what workers sent: trials against expected outputs, and timed
rounds of the candidate against the reference's rounds on the same inputs (pure functions of
recorded messages: tested without a GPU). A worker's word about itself counts for nothing:
only raw outputs, checksums and sketches do, set against the reference's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import correctness, sketch
from .cuda_roles import reference_dtype
from .kernelbench import KernelBenchTask
from .plan import Trial
from .protocol import Expect, Frame
from .results import TrialResult
from .spec import CudaTask

Message = tuple[dict[str, Any], list[Frame]]


def reference_expect(task: CudaTask | KernelBenchTask, trial: Trial, limit: int) -> Expect:
    """The arrays the reference's worker may send for a trial."""
    if isinstance(task, CudaTask):
        sizes = []
        for a in task.args:
            if a.role in ("out", "inout"):
                n = math.prod(task.shape(a, trial.sizes))
                dtype = reference_dtype(a.dtype, n) if task.reference_python else a.dtype
                sizes.append(n * np.dtype(dtype).itemsize)
        return Expect(sizes=tuple(sizes))
    return Expect(total=limit)


def output_expect(task: CudaTask | KernelBenchTask, trial: Trial, ref: dict[str, Any]) -> Expect:
    """Exactly the arrays a candidate's run must send: what the reference's outputs are."""
    if isinstance(task, CudaTask):
        return Expect(
            sizes=tuple(
                math.prod(task.shape(a, trial.sizes)) * np.dtype(a.dtype).itemsize
                for a in task.args
                if a.role in ("out", "inout")
            )
        )
    return Expect(
        sizes=tuple(
            math.prod(m["shape"]) * np.dtype(_np_dtype(m["dtype"])).itemsize
            for m in ref.get("native", [])
        )
    )


def _np_dtype(name: str) -> str:
    return "uint16" if name == "bfloat16" else name


def expected_arrays(
    task: CudaTask | KernelBenchTask, trial: Trial, header: dict[str, Any], arrays: list[Frame]
) -> list[tuple[str, np.ndarray, str]]:
    """(name, expected array, native dtype) for each output, from the reference worker."""
    out = []
    if isinstance(task, CudaTask):
        names = [a for a in task.args if a.role in ("out", "inout")]
        for arg, raw, dtype in zip(names, arrays, header["dtypes"], strict=True):
            shape = task.shape(arg, trial.sizes)
            out.append((arg.name, np.frombuffer(raw, dtype=dtype).reshape(shape), arg.dtype))
    else:
        for i, (raw, meta, native) in enumerate(
            zip(arrays, header["meta"], header["native"], strict=True)
        ):
            arr = np.frombuffer(raw, dtype=_np_dtype(meta["dtype"])).reshape(meta["shape"])
            out.append((f"output {i}", arr, native["dtype"]))
    return out


def kernelbench_tolerance(dtype: str) -> tuple[float, float]:
    atol, rtol = correctness.tolerance(dtype, None, None)
    return max(atol, 1e-4), max(rtol, 1e-4)  # library kernels reorder sums


def trial_result(
    task: CudaTask | KernelBenchTask,
    trial: Trial,
    ref: Message,
    runs: Sequence[Message],
    phase: str,
) -> TrialResult:
    """A trial's verdict from the candidate's runs against the reference's expected outputs."""
    ref_header, ref_arrays = ref
    expected = expected_arrays(task, trial, ref_header, ref_arrays)
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
            problem = problem or f"returned {len(arrays)} outputs, expected {len(expected)}"
            continue
        got = []
        for j, ((name, exp, native), raw) in enumerate(zip(expected, arrays, strict=True)):
            if isinstance(task, KernelBenchTask):
                metas = header.get("meta") or []
                meta = metas[j] if j < len(metas) and isinstance(metas[j], dict) else {}
                claimed = (meta.get("dtype"), list(meta.get("shape", [])))
                want = (native, list(ref_header["native"][j]["shape"]))
                if claimed != want:
                    problem = problem or (
                        f"{name} is {claimed[0]} {claimed[1]}, expected {want[0]} {want[1]}"
                    )
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
        return TrialResult(
            sizes=trial.sizes,
            held_out=trial.held_out,
            phase=phase,  # type: ignore[arg-type]
            ok=ok,
            reason=reason,
            max_abs_err=abs_err,
            max_rel_err=rel_err,
            inits=trial.inits,
        )

    def fail(
        reason: str, abs_err: float | None = None, rel_err: float | None = None
    ) -> TrialResult:
        return result(False, reason, abs_err, rel_err)

    if problem:
        return fail(problem)
    worst_abs, worst_rel = 0.0, 0.0
    for j, (name, exp, native) in enumerate(expected):
        per_run = [r[j] for r in got_runs]
        if isinstance(task, CudaTask):
            role = next(a.role for a in task.args if a.name == name)
            if role == "out" and len(per_run) == len(trial.poisons) == 2:
                reason = correctness.unwritten(name, per_run, list(trial.poisons))
                if reason:
                    return fail(reason)
            atol, rtol = correctness.tolerance(native, task.atol, task.rtol)
        else:
            atol, rtol = kernelbench_tolerance(native)
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


def rounds_problem(
    task: CudaTask | KernelBenchTask,
    ref_rounds: Sequence[dict[str, Any]],
    cand_rounds: Sequence[dict[str, Any]],
) -> tuple[str, str, list[float]]:
    """(verdict, why, z scores) for the candidate's timed calls against the reference's on the
    same inputs: "" verdict when every call is right. Each round is judged whole: its inputs,
    every output's unwritten elements, and its sketch."""
    zs: list[float] = []
    for i, (ref, cand) in enumerate(zip(ref_rounds, cand_rounds, strict=True)):
        call = f"timed call {i + 1} of {len(cand_rounds)}"
        if cand.get("problem"):
            return "wrong", f"during timing ({call}): {str(cand['problem'])[:300]}", zs
        if cand.get("inputs") != ref.get("inputs"):  # CUDA tasks: KernelBench rounds send none
            if isinstance(task, KernelBenchTask):
                return (
                    "error",
                    "the problem's get_inputs() made other inputs for the same seed in the "
                    "candidate's worker than in the reference's (kernelwright seeds torch, numpy "
                    "and random): outputs cannot be compared",
                    zs,
                )
            return "implausible", f"during timing ({call}): its inputs differ from the seed's", zs
        if cand.get("inputs_after") != cand.get("inputs"):
            changed = _changed_input(cand.get("inputs_after"), cand.get("inputs"))
            return "wrong", f"input modified during timing ({call}): {changed}", zs
        for name, count in sorted((cand.get("unwritten") or {}).items()):
            if count:
                return (
                    "wrong",
                    f"output '{name}' not fully written during timing ({call}: {int(count):,} "
                    f"elements untouched); the kernel behaves differently when timed",
                    zs,
                )
        if cand.get("guards"):
            names = ", ".join(f"'{n}'" for n in list(cand["guards"])[:8])
            return "wrong", f"wrote outside {names} during timing ({call})", zs
        if isinstance(task, KernelBenchTask) and cand.get("meta") != ref.get("meta"):
            return "wrong", f"outputs during timing ({call}) are {cand.get('meta')}", zs
        for name, want in (ref.get("sketch") or {}).items():
            got = (cand.get("sketch") or {}).get(name)
            n, atol, rtol = _round_tolerance(task, name, ref)
            why, z = sketch.problem(f"output '{name}'", got or [], want, n, atol, rtol)
            if why:
                why = f"during timing ({call}): {why}; the kernel behaves differently when timed"
                return "wrong", why, zs
            zs += z
    drift = sketch.drift_problem(zs)
    return ("wrong", drift, zs) if drift else ("", "", zs)


def _round_tolerance(
    task: CudaTask | KernelBenchTask, name: str, ref: dict[str, Any]
) -> tuple[int, float, float]:
    if isinstance(task, CudaTask):
        arg = next(a for a in task.args if a.name == name)
        atol, rtol = correctness.tolerance(arg.dtype, task.atol, task.rtol)
        return math.prod(task.shape(arg, task.bench)), atol, rtol
    i = int(name.split()[-1])
    meta = (ref.get("meta") or [])[i]
    atol, rtol = kernelbench_tolerance(meta["dtype"])
    return math.prod(meta["shape"]), atol, rtol
