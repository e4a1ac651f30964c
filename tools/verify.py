"""Verify and time one candidate against its task's reference: the trust boundary.

The controller holds the seeds, the expected outputs and the statistics. A reference worker
computes the expected outputs (float64 where the task allows); a separate candidate worker
compiles and runs the candidate and returns raw outputs and raw timing samples. Exit codes and
anything else the candidate says about itself count for nothing.
"""

from __future__ import annotations

import random
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from . import correctness, expr, nvml
from .errors import NoGpuError
from .kernelbench import KernelBenchCandidate, KernelBenchTask
from .protocol import Frame
from .results import (
    CheckReport,
    CheckResult,
    CompileResult,
    DeviceInfo,
    TimingResult,
    TrialResult,
)
from .sandbox import Sandbox, WorkerFailure
from .spec import CudaCandidate, CudaTask
from .timing import (
    escaped_work_problem,
    host_clock_problem,
    roofline_floor_ms,
    speedup,
    summarize,
    timed_output_problem,
)

Progress = Callable[[str], None]
Phase = Literal["check", "post-timing"]


@dataclass(frozen=True)
class VerifyOptions:
    backend: str = "nvrtc"
    start_timeout_s: float = 120.0
    compile_timeout_s: float = 60.0
    python_compile_timeout_s: float = 600.0  # KernelBench glue may build with load_inline
    run_timeout_s: float = 20.0
    timing_timeout_s: float = 120.0
    timing_budget_s: float = 0.6
    min_trials: int = 5
    host_memory_bytes: int = 16 << 30
    input_set_bytes: int = 2 << 30  # rotation: as many input sets as fit here, 2 to 4
    cache_dir: str | None = None  # CuPy's kernel cache for harness kernels; None: per Verifier
    prestart: bool = False  # start the next check's workers as soon as one check ends


class _Reject(Exception):
    """The candidate is rejected mid-check: a verdict and its reason."""

    def __init__(self, verdict: str, reason: str) -> None:
        super().__init__(reason)
        self.verdict, self.reason = verdict, reason


def _tamper_check(header: dict[str, Any]) -> None:
    """What a KernelBench worker saw the candidate change in it (guard.py) rejects it."""
    tampered = header.get("tampered")
    if tampered:
        raise _Reject("implausible", "harness tampered: " + "; ".join(map(str, tampered)))


@dataclass(frozen=True)
class TimingPlan:
    """What both workers time over: the input sets' seeds and the seed of each round's input
    changes (the same in both, so the reference's last outputs are the candidate's expected)."""

    seeds: tuple[int, ...]
    perturb_seed: int

    @classmethod
    def new(cls, n_sets: int) -> TimingPlan:
        return cls(tuple(secrets.randbits(31) for _ in range(n_sets)), secrets.randbits(31))


@dataclass(frozen=True)
class Trial:
    sizes: dict[str, int]
    seed: int
    poisons: tuple[int, ...]
    held_out: bool = False

    def job(self) -> dict[str, Any]:
        return {"sizes": self.sizes, "seed": self.seed, "poisons": list(self.poisons)}


def _poisons(rng: random.Random, n: int) -> tuple[int, ...]:
    """A quiet-NaN pattern (at 2, 4 and 8 bytes), then its complement, a large finite number:
    the two differ at every width, so no correct value can look untouched in both runs."""
    first = (
        (0x7FF8 << 48)
        | (rng.getrandbits(16) << 32)
        | (0x7FC0 << 16)
        | (0x7E00 | rng.getrandbits(8))
    )
    return (first, ~first & ((1 << 64) - 1))[:n]


def held_out_sizes(task: CudaTask, rng: random.Random) -> dict[str, int]:
    """A size never shown to the model: each size perturbed from a check size, within limits."""
    sizes = {}
    for name in task.bench:
        base = rng.choice([c[name] for c in task.checks])
        value = base + rng.randint(1, max(1, base // 2))
        step = task.multiple_of.get(name, 1)
        value = -(-value // step) * step
        sizes[name] = min(value, max(task.bench[name], base))
    if sizes in [dict(c) for c in task.checks]:  # rare: fall back to one more than a check size
        sizes = {k: v + task.multiple_of.get(k, 1) for k, v in sizes.items()}
    return sizes


def plan_trials(
    task: CudaTask | KernelBenchTask, rng: random.Random, min_trials: int = 5
) -> tuple[list[Trial], Trial]:
    """Trials over at least two shapes, one held out; plus the post-timing trial."""
    seed = lambda: secrets.randbits(31)  # noqa: E731 - unpredictable to the candidate
    if isinstance(task, CudaTask):
        shapes = [dict(c) for c in task.checks]
        bench: dict[str, int] = dict(task.bench)
        held = held_out_sizes(task, rng)
    else:
        bench, shapes = {}, [{}]
        batch = task.size_globals.get("batch_size")
        # A problem without a batch_size global has one shape only: nothing can be held out.
        held = (
            {"batch_size": max(1, batch // 2 + rng.randint(1, max(1, batch // 4)))} if batch else {}
        )
        if batch and held["batch_size"] == batch:
            held = {"batch_size": batch + 1}
    # The bench size is checked once, right after timing (the post trial): checking it before
    # as well would double the largest transfers, and a kernel wrong at the small sizes is
    # never timed.
    trials = [] if isinstance(task, CudaTask) else [Trial(bench, seed(), _poisons(rng, 1))]
    trials += [Trial(s, seed(), _poisons(rng, 2)) for s in shapes]
    trials.append(Trial(held, seed(), _poisons(rng, 2), held_out=bool(held)))
    while len(trials) < min_trials:
        trials.append(Trial(rng.choice(shapes), seed(), _poisons(rng, 2)))
    return trials, Trial(bench, seed(), _poisons(rng, 1))


def _describe(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "as given"


def _expected_arrays(
    task: CudaTask | KernelBenchTask, trial: Trial, header: dict[str, Any], arrays: list[Frame]
) -> list[tuple[str, np.ndarray, str]]:
    """(name, expected array, native dtype) for each output, from the reference worker."""
    out = []
    if isinstance(task, CudaTask):
        names = [a for a in task.args if a.role in ("out", "inout")]
        for arg, raw, dtype in zip(names, arrays, header["dtypes"], strict=True):
            out.append(
                (
                    arg.name,
                    np.frombuffer(raw, dtype=dtype).reshape(task.shape(arg, trial.sizes)),
                    arg.dtype,
                )
            )
    else:
        for i, (raw, meta, native) in enumerate(
            zip(arrays, header["meta"], header["native"], strict=True)
        ):
            arr = np.frombuffer(raw, dtype=meta["dtype"]).reshape(meta["shape"])
            out.append((f"output {i}", arr, native["dtype"]))
    return out


class Verifier:
    def __init__(
        self, options: VerifyOptions | None = None, progress: Progress | None = None
    ) -> None:
        self.options = options or VerifyOptions()
        self.progress = progress or (lambda _msg: None)
        self._own_cache = self.options.cache_dir is None
        self.cache = Path(self.options.cache_dir or tempfile.mkdtemp(prefix="kw-cupy-cache-"))
        self._spares: list[Sandbox] = []
        self._device: DeviceInfo | None = None

    def close(self) -> None:
        """Stop spare workers and remove a cache this verifier made."""
        for box in self._spares:
            box.close()
        self._spares.clear()
        if self._own_cache:
            shutil.rmtree(self.cache, ignore_errors=True)

    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sandbox(self, label: str, shared_cache: bool) -> Sandbox:
        """A fresh worker for one check: a warm spare if one is up, else a new process."""
        while shared_cache and self._spares:
            box = self._spares.pop()
            if box.alive():
                return box
            box.close()
        return Sandbox(
            label, self.options.host_memory_bytes, cupy_cache=self.cache if shared_cache else None
        )

    def _prestart(self) -> None:
        if self.options.prestart:
            while len(self._spares) < 2:
                self._spares.append(
                    Sandbox("spare", self.options.host_memory_bytes, cupy_cache=self.cache).start()
                )

    def _job(
        self, task: Any, role: str, trials: list[Trial], candidate: dict[str, Any] | None
    ) -> dict[str, Any]:
        return {
            "role": role,
            "task": task.model_dump(),
            "trials": [t.job() for t in trials],
            "candidate": candidate,
            "backend": self.options.backend,
            "timing_budget_s": self.options.timing_budget_s,
            "output_bytes": 1 << 24,
            "limits": {"file_bytes": 1 << 30, "open_files": 1024},
        }

    def check(
        self, task: CudaTask | KernelBenchTask, candidate: CudaCandidate | KernelBenchCandidate
    ) -> CheckReport:
        try:
            return self._check(task, candidate)
        finally:
            self._prestart()

    def _check(
        self, task: CudaTask | KernelBenchTask, candidate: CudaCandidate | KernelBenchCandidate
    ) -> CheckReport:
        t0 = time.perf_counter()
        rng = random.Random(secrets.randbits(64))
        trials, post = plan_trials(task, rng, self.options.min_trials)
        base = {"task": task.name, "candidate": candidate.path}

        phases: dict[str, float] = {}
        mark = [t0]

        def lap(name: str) -> None:
            now = time.perf_counter()
            phases[name] = phases.get(name, 0.0) + (now - mark[0]) * 1e3
            mark[0] = now

        def report(verdict: str, reason: str, **extra: Any) -> CheckReport:
            lap("report")
            return CheckReport.model_validate(
                {
                    **base,
                    "verdict": verdict,
                    "reason": reason,
                    "wall_ms": (time.perf_counter() - t0) * 1e3,
                    "phase_ms": phases,
                    **extra,
                }
            )

        if isinstance(candidate, CudaCandidate):
            cand_job: dict[str, Any] = {
                "source": candidate.source,
                "launch": candidate.launch.model_dump() if candidate.launch else None,
            }
        else:
            is_self = candidate.path == task.path
            cand_job = {"path": candidate.path, "class_name": "Model" if is_self else "ModelNew"}
        device: DeviceInfo | None = None
        compiled: CompileResult | None = None
        stage = "reference"
        try:
            with (
                self._sandbox("reference", True) as ref_box,
                self._sandbox("candidate", isinstance(task, CudaTask)) as cand_box,
            ):
                ref_box.send(self._job(task, "reference", [*trials, post], None))
                cand_job_msg = self._job(task, "candidate", trials, cand_job)
                if isinstance(task, CudaTask):  # no candidate host code: compile meanwhile
                    cand_box.send(cand_job_msg)
                self.progress("starting workers")
                dev, _ = ref_box.receive(
                    self.options.start_timeout_s, "starting the reference worker"
                )
                device = self._device or _device_info(dev)
                self._device = device
                lap("start")
                expected = []
                for i, trial in enumerate([*trials, post]):
                    self.progress(f"reference outputs {i + 1}/{len(trials) + 1}")
                    expected.append(
                        ref_box.receive(
                            self._run_timeout(task, trial),
                            f"reference trial at {_describe(trial.sizes)}",
                        )
                    )
                ref_kind: Any = expected[0][0].get("reference") or (
                    "float64 reference"
                    if isinstance(task, CudaTask) and task.reference_python
                    else "reference kernel"
                )
                plan = TimingPlan.new(_input_sets(task, self.options.input_set_bytes))
                if isinstance(task, KernelBenchTask):
                    cand_box.send(cand_job_msg)  # the reference's worker waits, idle
                else:
                    ref_box.kill()
                lap("reference")
                stage = "candidate"
                cand_box.receive(self.options.start_timeout_s, "starting the worker")
                self.progress("compiling")
                limit = (
                    self.options.compile_timeout_s
                    if isinstance(task, CudaTask)
                    else self.options.python_compile_timeout_s
                )
                header, _ = cand_box.receive(limit, "compiling")
                compiled = CompileResult.model_validate(header["result"])
                lap("compile")
                _tamper_check(header)
                if not compiled.ok:
                    return report(
                        "compile_error",
                        f"does not compile: {compiled.first_error}",
                        compile=compiled,
                        device=device,
                    )
                results: list[TrialResult] = []
                for i, trial in enumerate(trials):
                    self.progress(f"checking {i + 1}/{len(trials)} at {_describe(trial.sizes)}")
                    outcome = self._trial(task, trial, expected[i], cand_box, "check")
                    results.append(outcome)
                    if not outcome.ok:
                        check = CheckResult(
                            ok=False,
                            reason=outcome.reason,
                            trials=tuple(results),
                            reference=ref_kind,
                        )
                        return report(
                            "wrong", outcome.reason, compile=compiled, check=check, device=device
                        )
                lap("trials")
                self.progress("timing")
                timing, post_result, verdict = self._time(
                    task,
                    cand_box,
                    post,
                    expected[-1],
                    device,
                    plan,
                    lap,
                    ref_box if isinstance(task, KernelBenchTask) else None,
                )
                results.append(post_result)
                shapes = {tuple(sorted(t.sizes.items())) for t in results}
                ok = post_result.ok and verdict == ""
                reason = (
                    (post_result.reason or verdict)
                    if not ok
                    else (
                        f"{len(results)} trials over {len(shapes)} shapes"
                        f"{' (one held out)' if any(t.held_out for t in results) else ''}, against "
                        f"{_article(ref_kind)}{ref_kind}"
                    )
                )
                check = CheckResult(
                    ok=post_result.ok,
                    reason=post_result.reason or reason,
                    trials=tuple(results),
                    reference=ref_kind,
                )
                final = "correct" if ok else ("wrong" if not post_result.ok else "implausible")
                return report(
                    final, reason, compile=compiled, check=check, timing=timing, device=device
                )
        except _Reject as rejected:
            return report(rejected.verdict, rejected.reason, compile=compiled, device=device)
        except WorkerFailure as failure:
            if stage == "reference":
                return report(
                    "error", f"the task's reference failed: {failure.reason}", device=device
                )
            return report(failure.verdict, failure.reason, compile=compiled, device=device)

    def _run_timeout(self, task: Any, trial: Trial) -> float:
        return (
            self.options.run_timeout_s
            if isinstance(task, CudaTask)
            else self.options.run_timeout_s * 3
        )

    def _trial(
        self,
        task: CudaTask | KernelBenchTask,
        trial: Trial,
        ref: tuple[dict[str, Any], list[Frame]],
        box: Sandbox,
        phase: Phase,
    ) -> TrialResult:
        ref_header, ref_arrays = ref
        expected = _expected_arrays(task, trial, ref_header, ref_arrays)
        runs: list[list[np.ndarray]] = []
        problem = ""
        for _run in range(len(trial.poisons)):
            header, arrays = box.receive(
                self._run_timeout(task, trial), f"running at {_describe(trial.sizes)}"
            )
            _tamper_check(header)
            if header.get("problem"):  # the worker can only ever incriminate the candidate
                problem = problem or str(header["problem"])
                continue
            if header.get("guards") and not problem:
                names = ", ".join(f"'{n}'" for n in header["guards"])
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
                    meta = header.get("meta", [{}] * len(arrays))[j]
                    claimed = (meta.get("dtype"), list(meta.get("shape", [])))
                    want = (native, list(ref_header["native"][j]["shape"]))
                    if claimed != want:
                        problem = (
                            problem
                            or f"{name} is {claimed[0]} {claimed[1]}, expected {want[0]} {want[1]}"
                        )
                        break
                if len(raw) != exp.size * np.dtype(native).itemsize:
                    problem = problem or f"{name} has the wrong size"
                    break
                got.append(np.frombuffer(raw, dtype=native).reshape(exp.shape))
            runs.append(got)
            if header.get("checksums") != ref_header.get("checksums") and not problem:
                changed = _changed_input(task, header.get("checksums"), ref_header.get("checksums"))
                problem = f"input modified: {changed} differs after the call"

        def fail(
            reason: str, abs_err: float | None = None, rel_err: float | None = None
        ) -> TrialResult:
            return TrialResult(
                sizes=trial.sizes,
                held_out=trial.held_out,
                phase=phase,
                ok=False,
                reason=reason,
                max_abs_err=abs_err,
                max_rel_err=rel_err,
            )

        if problem:
            return fail(problem)
        worst_abs, worst_rel = 0.0, 0.0
        for j, (name, exp, native) in enumerate(expected):
            per_run = [r[j] for r in runs]
            if isinstance(task, CudaTask):
                role = next(a.role for a in task.args if a.name == name)
                if role == "out":
                    reason = correctness.unwritten(name, per_run, list(trial.poisons))
                    if reason:
                        return fail(reason)
                atol, rtol = correctness.tolerance(native, task.atol, task.rtol)
            else:
                atol, rtol = correctness.tolerance(native, None, None)
                atol, rtol = max(atol, 1e-4), max(rtol, 1e-4)  # library kernels reorder sums
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
        return TrialResult(
            sizes=trial.sizes,
            held_out=trial.held_out,
            phase=phase,
            ok=True,
            max_abs_err=worst_abs,
            max_rel_err=worst_rel,
        )

    def _time_reference(
        self, box: Sandbox, plan: TimingPlan, rounds: int
    ) -> tuple[dict[str, Any], list[Frame]]:
        """A KernelBench reference's last outputs over the timing's rounds, from its own worker."""
        box.send(
            {
                "cmd": "time",
                "seeds": list(plan.seeds),
                "perturb_seed": plan.perturb_seed,
                "rounds": rounds,
            }
        )
        header, arrays = box.receive(self.options.timing_timeout_s, "timing the reference")
        return header, arrays

    def _time(
        self,
        task: CudaTask | KernelBenchTask,
        box: Sandbox,
        post: Trial,
        post_expected: tuple[dict[str, Any], list[Frame]],
        device: DeviceInfo | None,
        plan: TimingPlan,
        lap: Callable[[str], None],
        ref_box: Sandbox | None = None,
    ) -> tuple[TimingResult, TrialResult, str]:
        """The timing rounds, then the post-timing check at the bench size; `lap` marks the
        end of each phase ("timing", "post-check", and for KernelBench "reference rounds")."""
        command: dict[str, Any] = {
            "cmd": "time",
            "seeds": list(plan.seeds),
            "perturb_seed": plan.perturb_seed,
            "post_trial": post.job(),
            # a CUDA candidate's outputs are poisoned before each timed call too
            "poison": _poisons(random.Random(secrets.randbits(64)), 1)[0],
        }
        before = nvml.clock_sample()
        box.send(command)
        sent = time.perf_counter()
        header, finals = box.receive(self.options.timing_timeout_s, "timing")
        wall_ms = (time.perf_counter() - sent) * 1e3
        after = nvml.clock_sample()
        lap("timing")
        _tamper_check(header)
        wrong = timed_output_problem(header.get("timed") or {})
        post_result = self._trial(task, post, post_expected, box, "post-timing")
        lap("post-check")
        ref_ms, ref_host = _floats(header, "ref_ms"), _floats(header, "ref_host_ms")
        cand_ms, cand_host = _floats(header, "cand_ms"), _floats(header, "cand_host_ms")
        if ref_box is not None and not wrong:
            # KernelBench: the reference's own worker, where no candidate code ever ran, takes
            # the same rounds on the same inputs once the candidate's worker is gone; the
            # candidate's last output on each input set must match its last one.
            box.kill()
            again, ref_finals = self._time_reference(ref_box, plan, int(header["rounds"]))
            wrong = _finals_problem(header, finals, again, ref_finals)
            lap("reference rounds")
        if wrong:
            post_result = post_result.model_copy(update={"ok": False, "reason": wrong})
        if len(ref_ms) != len(cand_ms):
            raise WorkerFailure("crashed", "worker sent a different number of timing rounds")
        problems = [
            host_clock_problem(ref_ms, ref_host),
            host_clock_problem(cand_ms, cand_host),
            escaped_work_problem(ref_ms, ref_host, cand_ms, cand_host),
        ]
        own = sum(cand_ms) + sum(ref_ms)
        if own > wall_ms * 1.02:
            problems.append(
                f"timing inconsistent with host clock: {own:.1f} ms of samples in {wall_ms:.1f} ms"
            )
        ratio, ratio_iqr = speedup(ref_ms, cand_ms, _order(header, len(ref_ms)))
        floor = None
        if isinstance(task, CudaTask) and device is not None:
            rbytes = expr.evaluate(task.roofline_bytes, task.bench) if task.roofline_bytes else None
            rflops = expr.evaluate(task.roofline_flops, task.bench) if task.roofline_flops else None
            floor = roofline_floor_ms(
                rbytes, rflops, device.peak_dram_gbps, device.peak_fp32_tflops
            )
        cand = summarize(cand_ms)
        notes = []
        if floor is not None and cand.median_ms < 0.9 * floor:
            problems.append(
                f"implausible: {cand.median_ms:.4f} ms is below the roofline floor "
                f"{floor:.4f} ms for this much data"
            )
        for sample in (before, after):
            if sample and set(sample.throttle_reasons) - {
                "gpu_idle",
                "applications_clocks_setting",
            }:
                notes.append(
                    "clocks held down during timing: " + ", ".join(sample.throttle_reasons)
                )
                break
        timing = TimingResult(
            reference=summarize(ref_ms),
            candidate=cand,
            speedup=ratio,
            speedup_iqr=ratio_iqr,
            rounds=int(header.get("rounds", len(ref_ms))),
            input_sets=len(plan.seeds),
            l2_flush_bytes=int(header.get("l2_flush_bytes", 0)),
            floor_ms=floor,
            clocks_before=before,
            clocks_after=after,
            notes=tuple(notes),
        )
        return timing, post_result, next((p for p in problems if p), "")


def _finals_problem(
    header: dict[str, Any], got: list[Frame], ref_header: dict[str, Any], want: list[Frame]
) -> str:
    """The candidate's last timed output on each input set against the reference's on the same
    inputs (the same changes applied each round in both workers); "" when they match."""
    if header.get("problem"):
        return f"during timing: {header['problem']}"
    metas = [m for per_set in header.get("final_meta", []) for m in per_set]
    wants = [m for per_set in ref_header.get("final_meta", []) for m in per_set]
    if metas != wants or len(got) != len(want) or len(got) != len(wants):
        return f"outputs during timing are {metas}, expected {wants}"
    n_out = len(ref_header["final_meta"][0]) if ref_header["final_meta"] else 1
    for i, (meta, raw_got, raw_want) in enumerate(zip(wants, got, want, strict=True)):
        shape, dtype = meta["shape"], meta["dtype"]
        atol, rtol = correctness.tolerance(dtype, None, None)
        outcome = correctness.compare(
            f"output {i % n_out} (input set {i // n_out + 1}, last timed call)",
            np.frombuffer(raw_got, dtype=dtype).reshape(shape),
            np.frombuffer(raw_want, dtype=dtype).reshape(shape),
            max(atol, 1e-4),
            max(rtol, 1e-4),
        )
        if not outcome.ok:
            return outcome.reason + "; the model behaves differently when timed"
    return ""


def _article(reference: str) -> str:
    return "the " if reference.endswith(("reference", "kernel")) else ""


def _order(header: dict[str, Any], rounds: int) -> list[str]:
    """Which side opened each timing round."""
    first = header.get("first")
    if not (
        isinstance(first, list)
        and len(first) == rounds
        and all(f in ("ref", "cand") for f in first)
    ):
        raise WorkerFailure("crashed", "worker sent no valid order of the timing rounds")
    return first


def _floats(header: dict[str, Any], key: str) -> list[float]:
    values = header.get(key)
    if (
        not isinstance(values, list)
        or not values
        or not all(isinstance(v, int | float) for v in values)
    ):
        raise WorkerFailure("crashed", f"worker sent no valid {key}")
    return [float(v) for v in values]


def _changed_input(task: Any, got: Any, want: Any) -> str:
    if isinstance(got, dict) and isinstance(want, dict):
        names = [k for k in want if got.get(k) != want[k]]
        return ", ".join(f"'{n}'" for n in names) or "an input"
    if isinstance(got, list) and isinstance(want, list):
        idx = [str(i) for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w]
        return "input " + ", ".join(idx) if idx else "an input"
    return "an input"


def _input_sets(task: CudaTask | KernelBenchTask, budget: int) -> int:
    if not isinstance(task, CudaTask):
        return 2
    per_set = sum(
        int(np.prod(task.shape(a, task.bench))) * np.dtype(a.dtype).itemsize
        for a in task.args
        if a.role != "scalar"
    )
    return int(min(4, max(2, budget // max(per_set, 1))))


def _device_info(header: dict[str, Any]) -> DeviceInfo:
    try:
        return nvml.device_info(
            header.get("pci_bus_id"), header.get("sm_count"), header.get("l2_bytes")
        )
    except NoGpuError:
        return DeviceInfo(
            name="unknown",
            arch="sm_" + str(header.get("cc", "")),
            driver_version="",
            memory_total_bytes=0,
            sm_count=header.get("sm_count"),
            l2_bytes=header.get("l2_bytes"),
        )
