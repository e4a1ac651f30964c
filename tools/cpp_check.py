"""How a cpp task is checked (the verifier's part that is the C++ task's own): its expected
outputs come from the C++ function, on the CPU; its kernels run on the GPU as a CUDA task's do.

- A kernel (`CppKernel`, verify.py's check with `CppReference` beside it): the reference's GPU
  worker runs the GPU-side reference (the first correct port: the task's own `port`, the run's
  first correct kernel, or for a first port the kernel itself), which the candidate is timed
  beside in paired rounds and whose outputs are checked against the C++ function's too; the
  expected outputs are the C++ function's, computed in its confined worker from the inputs the
  GPU's generator makes from the same seeds (cpp_inputs.py), while the GPU's workers run. The
  checksums of the inputs, the guards, the poison and the held-out sizes are a CUDA task's.
- The function itself (`CppFunction`, a run's original): run on the check sizes and timed at
  the bench size on one pinned core; no GPU.
- A drop-in host file (`HostFile`, best_host.cu): built with nvcc beside the wrapper the
  reference has, run in the same confined worker (on the GPU) on the same inputs as the C++
  function, compared with its outputs and timed end to end.

Three speedups, labelled (results.Speedups): against the C++ function on one core (g++ -O3,
several calls, the median: ParEval's convention; kept per build and bench size, since one can
take seconds), end to end with the copies (the copies a drop-in host function makes, timed in
the GPU reference's worker, plus the kernel; or best_host.cu itself, timed), and against the
first correct port (the paired rounds). A kernel's `timing` is against the C++ function.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import platform
import random
import secrets
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from . import correctness, judge, plan, sketch
from .builds import BuildCache, cached_build
from .cpp import CppTask
from .cpp_reference import (
    REPEATS,
    CallPlan,
    ReferenceResult,
    TimedCall,
    build_key,
    build_library,
    reference_outputs,
    run_library,
)
from .errors import KernelwrightError
from .protocol import Frame
from .results import (
    CheckReport,
    CheckResult,
    CompileResult,
    DeviceInfo,
    KernelTiming,
    Speedups,
    TimingResult,
    TrialResult,
)
from .sandbox import cap
from .serving import flat
from .sketch import problem as sketch_problem
from .sketch import sketch_of
from .spec import CudaCandidate
from .timing import summarize


class Verifier(Protocol):
    """What of the verifier (verify.Verifier) a C++ task's check uses."""

    options: Any  # verify.VerifyOptions
    builds: BuildCache
    cpp_cache: Path
    _device: DeviceInfo | None

    def _arch(self) -> str: ...

    def reference_cpus(self) -> set[int]: ...


class ReferenceProblem(Exception):
    """The GPU-side reference cannot stand beside the candidate: the check's verdict is error."""


# --- the function on the CPU: its time, kept -------------------------------------------------


def machine_identity() -> dict[str, str]:
    """What a function's time on one core depends on beyond its build: the host and its CPU
    (a cache directory shared between hosts had handed one host's time to another)."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"host": platform.node(), "cpu": model or platform.processor()}


def _time_path(task: CppTask, cache_dir: Path) -> Path:
    blob = json.dumps({"library": build_key(task), "bench": task.bench, "repeats": REPEATS,
                       "machine": machine_identity()})  # fmt: skip
    return cache_dir / "cpu" / f"{hashlib.sha256(blob.encode()).hexdigest()}.json"


@contextlib.contextmanager
def one_timing_at_a_time(cache_dir: Path) -> Iterator[None]:
    """A lock on this machine (a file in the cache directory) held while a C++ function is
    timed on its pinned core: every verifier of a `batch --gpus N` pins it to the same one
    (the two highest CPUs), and N functions timed there at once had read up to twice as
    slow, a time then kept for good (a red-team review)."""
    import fcntl

    path = cache_dir / "cpu" / ".timing.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def cached_cpu_ms(task: CppTask, cache_dir: Path) -> list[float] | None:
    """The function's calls at the bench size, timed before on this machine (ms), or None."""
    try:
        times = json.loads(_time_path(task, cache_dir).read_text())["ms"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return [float(t) for t in times] if isinstance(times, list) and times else None


def _keep_cpu_ms(task: CppTask, cache_dir: Path, times: tuple[float, ...]) -> list[float]:
    ms = [t * 1e3 for t in times]
    if ms:
        path = _time_path(task, cache_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"ms": ms}))
    return ms


def function_outputs(
    task: CppTask, trials: list[plan.Trial], cache_dir: Path, pin: set[int], timeout_s: float
) -> tuple[list[ReferenceResult], list[float]]:
    """The function's outputs for each trial, and its calls' times (ms) at the bench size: the
    last trial's, repeated, unless kept from before."""
    kept = cached_cpu_ms(task, cache_dir)
    timed = None if kept else len(trials) - 1
    with one_timing_at_a_time(cache_dir) if timed is not None else contextlib.nullcontext():
        results = reference_outputs(task, trials, cache_dir, timeout_s, time_trial=timed, pin=pin)
    return results, kept or _keep_cpu_ms(task, cache_dir, results[-1].times)


def _cpu_timing(ms: list[float]) -> KernelTiming:
    return summarize(ms or [float("nan")])


# --- a kernel's check: the GPU-side reference and the C++ function's outputs -----------------

# Timed calls of a kernel timed beside itself checked against the C++ function, picked at
# random after the rounds: one that skips work in a fraction f of its calls escapes with
# probability (1 - f) ** AUDITS, and moves the median only where f is large.
AUDITS = 4


class CppReference:
    """A cpp task's side of a kernel's check (verify.py asks it at each step): the task its
    GPU workers see, the reference's cubin, the expected outputs, the copies' time and the
    three speedups."""

    def __init__(self, verifier: Verifier, task: CppTask, candidate: Any) -> None:
        self.verifier, self.task, self.candidate = verifier, task, candidate
        port: CudaCandidate | None = getattr(candidate, "port", None)
        if port is not None:
            self.port_is = f"the first correct port ({port.path})"
        elif (port := task.port()) is not None:
            self.port_is = f"the task's port ({Path(task.port_path).name})"
        else:
            self.port_is = "itself (no port yet: this kernel is the first)"
        self.itself = port is None
        self.port = port or CudaCandidate(
            path=candidate.path,
            source=candidate.source,
            launch=candidate.launch,
            options=candidate.options,
        )
        self.worker_task = task.worker_task(self.port)
        self.ref_extra: dict[str, Any] = {"copies": True}
        self.ref_arrays: list[bytes] = []
        self._results: list[ReferenceResult] = []
        self._cpu_ms: list[float] = []
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._copies_ms: list[float] = []

    def prepare(self, trials: list[plan.Trial]) -> tuple[str, str]:
        """Build the GPU-side reference and start the C++ function on the trials (in a thread:
        the GPU's workers start meanwhile). (verdict, why) where the check cannot go on."""
        v = self.verifier
        o = v.options
        flags = self.port.compile_flags(o.backend)
        compiled, cubin = cached_build(
            v.builds, self.port.source, self.task.function, v._arch(), o.backend, flags
        )
        if cubin is None:
            if self.itself:
                return "compile_error", f"does not compile: {compiled.first_error}"
            return "error", f"{self.port_is} does not compile: {compiled.first_error}"
        self.ref_arrays = [cubin]
        cache, pin, timeout = v.cpp_cache, v.reference_cpus(), o.reference_timeout_s

        def work() -> None:
            try:
                self._results, self._cpu_ms = function_outputs(
                    self.task, trials, cache, pin, timeout
                )
            except BaseException as exc:  # passed on to the check, said there
                self._error = exc

        self._thread = threading.Thread(target=work, name="cpp-reference", daemon=True)
        self._thread.start()
        return "", ""

    def _wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            if isinstance(error, KernelwrightError):
                raise ReferenceProblem(str(error)) from None
            raise error

    def expected(self, i: int, trial: plan.Trial, message: judge.Message) -> judge.Message:
        """Trial i's expected outputs: the C++ function's, with the checksums of the inputs as
        the GPU made them (the reference's worker). The GPU-side reference's own outputs must
        agree with the C++ function's, unless it is the candidate (whose trials say so)."""
        self._wait()
        got = self._results[i]
        outs = [a for a in self.task.args if a.role in ("out", "inout")]
        header: dict[str, Any] = {
            "type": "expected",
            "trial": i,
            "checksums": message[0].get("checksums"),
            "dtypes": [a.dtype for a in outs],
            "reference": self.task.reference_label,
        }
        arrays: list[Frame] = [flat(got.outputs[a.name]) for a in outs]
        expected = (header, arrays)
        if not self.itself:
            verdict = judge.trial_result(self.task, trial, expected, [message], "check")
            if not verdict.ok:
                raise ReferenceProblem(
                    f"{self.port_is} disagrees with the C++ function: {verdict.reason}"
                )
        return expected

    def after_rounds(self, box: Any, timeout_s: float) -> None:
        """The copies a drop-in host function makes, timed by the reference's worker once its
        rounds are over (its "done", then its "copies")."""
        from .protocol import Expect

        box.receive(timeout_s, "ending the reference's rounds", Expect(sizes=()))
        header, _ = box.receive(timeout_s + 10, "timing the copies", Expect(sizes=()))
        raw = header.get("ms")
        ok = isinstance(raw, list) and all(isinstance(v, int | float) for v in raw)
        self._copies_ms = [float(v) for v in raw[:100] if 0 <= v < 1e7] if ok else []

    def audit(self, task: Any, rounds: Any) -> tuple[str, str]:
        """(verdict, why) of a few timed calls, picked at random once the rounds are over,
        against the C++ function on the same inputs: only where the kernel was timed beside
        itself (no port yet), whose every timed call was compared with a copy of itself, which
        would agree with it however it behaved when timed."""
        if not self.itself or not rounds.cand or len(rounds.entries) != len(rounds.cand):
            return "", ""
        pick = secrets.SystemRandom().sample(range(len(rounds.cand)), min(AUDITS, len(rounds.cand)))
        poison = plan.poisons(random.Random(secrets.randbits(64)), 1)
        bench = dict(self.task.bench)
        trials = [plan.Trial(bench, int(rounds.entries[i][0]), poison) for i in pick]
        v = self.verifier
        try:
            results = reference_outputs(
                self.task, trials, v.cpp_cache, v.options.reference_timeout_s
            )
        except KernelwrightError as exc:
            raise ReferenceProblem(str(exc)) from None
        outs = [a.name for a in self.task.args if a.role in ("out", "inout")]
        audited = (
            " (audited against the C++ function: no port yet, the kernel was timed beside itself)"
        )
        exact = dict.fromkeys(outs, 0.0)  # against the function itself: the truth, missing nothing
        truths, cands = [], []
        for i, got in zip(pick, results, strict=True):
            cand = rounds.cand[i]
            signs = (int(rounds.entries[i][1]), int(rounds.entries[i][2]))
            truth = {
                "inputs": cand.get("inputs"),  # the kernel's inputs are the seed's: its trials
                "sketch": {n: sketch_of(got.outputs[n], signs) for n in outs},
            }
            truths.append(truth)
            cands.append(cand)
            verdict, why, _ = judge.rounds_problem(  # one call on its own: no drift verdict
                task, [truth], [cand], misses=exact, ended=False
            )
            if verdict:
                call = f"timed call {i + 1} of {len(rounds.cand)}"
                return verdict, why.replace("timed call 1 of 1", call) + audited
        # then all of them together: a little outside the tolerance in every audited call (two
        # tolerances off everywhere passed four audits judged one at a time about 98% of the
        # time) fails over their signed sums, as the rounds' do
        verdict, why, _ = judge.rounds_problem(task, truths, cands, misses=exact)
        return (verdict, why + audited) if verdict else ("", "")

    def finish(self, timing: TimingResult) -> tuple[TimingResult, Speedups]:
        """The timing against the C++ function on one core, and the three speedups."""
        cpu = _cpu_timing(self._cpu_ms)
        kernel_ms = timing.candidate.median_ms
        copies_ms = statistics.median(self._copies_ms) if self._copies_ms else None
        end_ms = kernel_ms + copies_ms if copies_ms is not None else None
        vs_core = cpu.median_ms / kernel_ms
        speedups = Speedups(
            cpu_core=vs_core,
            cpu_ms=cpu.median_ms,
            cpu_samples=cpu.samples,
            end_to_end=cpu.median_ms / end_ms if end_ms else None,
            end_to_end_ms=end_ms,
            copies_ms=copies_ms,
            port=timing.speedup,
            port_iqr=timing.speedup_iqr,
            port_ms=timing.reference.median_ms,
            port_is=self.port_is,
        )
        note = (
            f"against the C++ function on one core ({cpu.samples} calls, g++ -O3); the "
            f"kernel timed in {timing.rounds} rounds beside {self.port_is}: "
            f"{timing.speedup:.2f}x that"
        )
        return (
            timing.model_copy(
                update={
                    "reference": cpu,
                    "speedup": vs_core,
                    "speedup_iqr": vs_core * timing.candidate.iqr_ms / kernel_ms,
                    "notes": (*timing.notes, note),
                }
            ),
            speedups,
        )

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join()


# --- the function itself, and a drop-in host file ----------------------------------------------


def _trials(task: CppTask) -> list[plan.Trial]:
    """The checks' sizes, one held out and the bench size, last (the one timed)."""
    rng = random.Random(secrets.randbits(64))
    trials, post = plan.plan_trials(task, rng, 1)
    return [*trials, post]


def _report(task: CppTask, candidate: Any, t0: float, **fields: Any) -> CheckReport:
    return CheckReport.model_validate(
        {
            "task": task.name,
            "candidate": candidate.path,
            "wall_ms": (time.perf_counter() - t0) * 1e3,
            **fields,
            "reason": cap(fields.get("reason", "")),
        }
    )


def _passed(trials: list[TrialResult], what: str) -> str:
    held = [t for t in trials if t.held_out]
    shown = "; ".join(", ".join(f"{k}={v}" for k, v in t.sizes.items()) for t in held)
    return f"{what}: {len(trials)} trials" + (f" (held out: {shown})" if held else "")


def check_function(verifier: Verifier, task: CppTask, candidate: Any) -> CheckReport:
    """The C++ function against itself, on the CPU (a run's original): it builds, keeps its
    outputs' contract, and runs at every trial's sizes; timed at the bench size on one core."""
    t0 = time.perf_counter()
    o = verifier.options
    trials = _trials(task)
    try:
        _, ms = function_outputs(
            task, trials, verifier.cpp_cache, verifier.reference_cpus(), o.reference_timeout_s
        )
    except KernelwrightError as exc:
        return _report(task, candidate, t0, verdict="error", reason=str(exc))
    cpu = _cpu_timing(ms)
    done = [TrialResult(sizes=t.sizes, held_out=t.held_out, ok=True, inits=t.inits) for t in trials]
    reason = _passed(done, "the C++ function itself, against itself")
    timing = TimingResult(
        reference=cpu,
        candidate=cpu,
        speedup=1.0,
        speedup_iqr=0.0,
        rounds=cpu.samples,
        input_sets=1,
        l2_flush_bytes=0,
        notes=("the C++ function on one core (g++ -O3): what the task's speedups are against",),
    )
    check = CheckResult(ok=True, reason=reason, trials=tuple(done), reference="C++ reference")
    speedups = Speedups(cpu_core=1.0, cpu_ms=cpu.median_ms, cpu_samples=cpu.samples)
    return _report(
        task, candidate, t0, verdict="correct", reason=reason, check=check, timing=timing,
        speedups=speedups,
    )  # fmt: skip


def check_host(verifier: Verifier, task: CppTask, candidate: Any) -> CheckReport:
    """A drop-in host file end to end: built with nvcc, called as the C++ function is on the
    same inputs, every output compared with the function's, timed at the bench size."""
    t0 = time.perf_counter()
    o, arch = verifier.options, verifier._arch()
    device = verifier._device
    cache = verifier.cpp_cache
    built, log = build_library(task, cache, o.compile_timeout_s * 4, candidate.source, arch)
    took_ms = (time.perf_counter() - t0) * 1e3
    compiled = CompileResult(
        ok=built is not None, backend="nvcc", arch=arch, duration_ms=took_ms, log=log[-4000:]
    )
    if built is None:
        why = f"does not compile: {compiled.first_error}"
        return _report(task, candidate, t0, verdict="compile_error", reason=why, compile=compiled)
    trials = _trials(task)
    pin = verifier.reference_cpus()
    try:
        want, cpu_ms = function_outputs(task, trials, cache, pin, o.reference_timeout_s)
    except KernelwrightError as exc:
        return _report(task, candidate, t0, verdict="error", reason=str(exc), compile=compiled)
    rng = random.Random(secrets.randbits(64))
    calls = CallPlan(
        sizes=dict(task.bench),
        least=int(REPEATS["min"]) + HOST_WARMUP,
        most=int(REPEATS["max"]) + HOST_WARMUP,
        seconds=float(REPEATS["seconds"]),
        then=[(t.sizes, t.seed, _signs()) for t in plan.after_timing(task, rng)],
    )
    try:
        got = run_library(task, built, trials, o.run_timeout_s * 10, pin=pin, calls=calls)
    except KernelwrightError as exc:
        return _report(task, candidate, t0, verdict="crashed", reason=str(exc), compile=compiled,
                       device=device)  # fmt: skip
    done = []
    for trial, w, g in zip(trials, want, got, strict=True):
        reason = ""
        for a in (a for a in task.args if a.role in ("out", "inout")):
            atol, rtol = judge.OUTPUTS[task.kind].tolerance(task, a.dtype)
            outcome = correctness.compare(a.name, g.outputs[a.name], w.outputs[a.name], atol, rtol)
            if not outcome.ok:
                reason = outcome.reason
                break
        done.append(TrialResult(sizes=trial.sizes, held_out=trial.held_out, ok=not reason,
                                reason=reason, inits=trial.inits))  # fmt: skip
        if reason:
            check = CheckResult(ok=False, reason=reason, trials=tuple(done),
                                reference="C++ reference")  # fmt: skip
            return _report(task, candidate, t0, verdict="wrong", reason=reason, check=check,
                           compile=compiled, device=device)  # fmt: skip
    try:
        why, allowance = audit_calls(verifier, task, calls.made, cpu_ms, pin)
    except KernelwrightError as exc:
        return _report(task, candidate, t0, verdict="error", reason=str(exc), compile=compiled)
    if why:
        check = CheckResult(ok=False, reason=why, trials=tuple(done), reference="C++ reference")
        return _report(task, candidate, t0, verdict="wrong", reason=why, check=check,
                       compile=compiled, device=device)  # fmt: skip
    timed = [c for c in calls.made if c.timed][HOST_WARMUP:]
    seconds, charged = timed_seconds(timed, allowance)
    if timed and not statistics.median(seconds) > 0:
        refused = "timing refused: its calls took no time the controller's clock could tell apart"
    else:
        refused = unseen_problem(timed, seconds)
    if refused:
        check = CheckResult(ok=True, reason=reason_ok(done), trials=tuple(done),
                            reference="C++ reference")  # fmt: skip
        return _report(task, candidate, t0, verdict="implausible", reason=refused, check=check,
                       compile=compiled, device=device)  # fmt: skip
    after = [c for c in calls.made if not c.timed]
    done += [TrialResult(sizes=c.sizes, held_out=True, phase="post-timing", ok=True) for c in after]
    cpu, end = _cpu_timing(cpu_ms), summarize([t * 1e3 for t in seconds] or [np.nan])
    reason = reason_ok(done)
    notes = ["end to end: allocating, copying in, the kernel, copying back and freeing, as the "
             "drop-in does, against the C++ function on one core; each call on inputs made "
             "from a seed sent with it, timed by the controller's clock"]  # fmt: skip
    if charged > 0:
        notes.append(f"{charged * 1e3 / max(1, len(timed)):.3f} ms a call that the drop-in's "
                     "own clock did not report was counted (the controller's clock)")  # fmt: skip
    timing = TimingResult(
        reference=cpu, candidate=end, speedup=cpu.median_ms / end.median_ms, speedup_iqr=0.0,
        rounds=end.samples, input_sets=len(timed), l2_flush_bytes=0, notes=tuple(notes),
    )  # fmt: skip
    speedups = Speedups(
        cpu_ms=cpu.median_ms, cpu_samples=cpu.samples, end_to_end=timing.speedup,
        end_to_end_ms=end.median_ms, end_to_end_measured=True,
    )  # fmt: skip
    check = CheckResult(ok=True, reason=reason, trials=tuple(done), reference="C++ reference")
    return _report(task, candidate, t0, verdict="correct", reason=reason, check=check,
                   compile=compiled, timing=timing, speedups=speedups, device=device)  # fmt: skip


# A drop-in's first timed call starts its CUDA context: served, compared, not counted.
HOST_WARMUP = 1
# The drop-in's calls audited against the C++ function: every one where the function's calls
# at the bench size take at most this long in all, else as many as fit (AUDITS at least).
AUDIT_SECONDS = 4.0
FUNCTION = "the C++ function's"  # whose outputs a drop-in's calls are held to


@dataclass(frozen=True)
class Allowance:
    """What the controller's clock may see of a served call beyond the drop-in's own work, from
    the C++ function's calls in its own worker: the call's trip (`call_s`), the staging of its
    arguments (`stage_s`: the wrapper's copies, the same code on the same sizes), and the
    outputs' return after the call (`finish_s`: copied back and sketched, the same code)."""

    call_s: float
    stage_s: float
    finish_s: float = 0.0


# The staging's (and the outputs' return's) time may exceed the C++ function's by this factor
# before the rest is counted as the drop-in's (copies of the same bytes by the same code vary
# by a few percent).
STAGE_SLACK = 1.25


def timed_seconds(calls: list[TimedCall], allowance: Allowance) -> tuple[list[float], float]:
    """Each timed call's seconds, and their sum that the drop-in's own clock left out (pure):
    what its wrapper reported, but never less than the controller's clock saw of the call, of
    its staging and of its outputs' return, less what the C++ function's own calls show they
    take (`allowance`). The wrapper is linked with the drop-in, whose code can make it report
    anything, can run while the arguments are staged (a replaced operator new, say), and can
    return before its work is done and finish it while its outputs are copied back (a thread,
    and a fault handler that holds the copy until the thread is done)."""
    seconds = [
        max(
            c.reported_s,
            c.wall_s
            - allowance.call_s
            + max(0.0, c.stage_s - allowance.stage_s)
            + max(0.0, c.finish_s - allowance.finish_s),
        )
        for c in calls
    ]
    charged = sum(s - c.reported_s for s, c in zip(seconds, calls, strict=True))
    return seconds, charged


def unseen_problem(calls: list[TimedCall], seconds: list[float]) -> str:
    """Why the timing is refused ("" if it is not) (pure): in the median call, more time by the
    controller's clock than by the drop-in's own escaped its clock, and more than
    UNSEEN_FLOOR_S (the channel's jitter on a loaded machine can reach milliseconds; what is
    charged below the floor is still counted in `seconds`, only not refused)."""
    if not calls:
        return ""
    reported = statistics.median(c.reported_s for c in calls)
    escaped = statistics.median(s - c.reported_s for s, c in zip(seconds, calls, strict=True))
    if escaped <= max(reported, UNSEEN_FLOOR_S):
        return ""
    return (
        f"timing refused: a call took {(reported + escaped) * 1e3:.3f} ms by the controller's "
        f"clock and {reported * 1e3:.3f} ms by the drop-in's own: more than half of its time "
        f"escaped its clock"
    )


# Below this much a call, time that escaped the drop-in's clock is counted, not refused.
UNSEEN_FLOOR_S = 0.02


def reason_ok(done: list[TrialResult]) -> str:
    return _passed(done, "best_host.cu end to end, against the C++ reference")


def _signs() -> tuple[int, int]:
    return secrets.randbits(63), secrets.randbits(63)


def audit_calls(
    verifier: Verifier,
    task: CppTask,
    made: list[TimedCall],
    cpu_ms: list[float],
    pin: set[int],
) -> tuple[str, Allowance]:
    """Why the drop-in's served calls are wrong ("" if they are not), and how much of a
    call's time, of its staging and of its outputs' return by the controller's clock is not
    the drop-in's own work.
    The C++ function serves the same calls (the seeds and the signs of all, or of a random
    sample where that would take too long, and always of the untimed ones after the timing)
    in its own worker: the sketches are compared, and its calls say what the channel's trip
    and the staging of the arguments take by that clock."""
    o = verifier.options
    per_call_s = (statistics.median(cpu_ms) / 1e3) if cpu_ms else 1.0
    timed = [i for i, c in enumerate(made) if c.timed]
    room = max(AUDITS, int(AUDIT_SECONDS / max(per_call_s, 1e-6)))
    pick = set(timed) if len(timed) <= room else set(secrets.SystemRandom().sample(timed, room))
    pick |= {i for i, c in enumerate(made) if not c.timed}
    order = sorted(pick)
    built, log = build_library(task, verifier.cpp_cache, o.compile_timeout_s * 4)
    if built is None:
        raise KernelwrightError(f"{task.name}: the C++ function no longer builds: {log[-300:]}")
    truth = CallPlan(given=[(made[i].sizes, made[i].seed, made[i].signs) for i in order])
    run_library(task, built, [], o.reference_timeout_s, pin=pin, calls=truth)
    zs: list[float] = []
    for i, ref in zip(order, truth.made, strict=True):
        cand = made[i]
        call = (
            f"timed call {timed.index(i) + 1} of {len(timed)}"
            if cand.timed
            else f"after the timing, at {', '.join(f'{k}={v}' for k, v in cand.sizes.items())}"
        )
        for a in (a for a in task.args if a.role in ("out", "inout")):
            atol, rtol = judge.OUTPUTS[task.kind].tolerance(task, a.dtype)
            n = math.prod(task.shape(a, cand.sizes))
            got, want = cand.sketch.get(a.name, []), ref.sketch[a.name]
            # the function is the truth: one tolerance, as in the trials
            why, z = sketch_problem(f"output '{a.name}'", got, want, n, atol, rtol, FUNCTION)
            if why:
                return f"{call}: {why}", Allowance(0.0, 0.0)
            zs += z
    # a little outside the tolerance in every call: caught over all of them, as for kernels
    if drift := sketch.drift_problem(zs, FUNCTION):
        return drift, Allowance(0.0, 0.0)
    like = [r for i, r in zip(order, truth.made, strict=True) if made[i].timed] or truth.made
    trip = [max(0.0, c.wall_s - c.reported_s) for c in like]
    staged, finished = [c.stage_s for c in like], [c.finish_s for c in like]
    return "", Allowance(
        call_s=(2 * statistics.median(trip) if trip else 0.0) + CHANNEL_S,
        stage_s=(STAGE_SLACK * statistics.median(staged) if staged else 0.0) + CHANNEL_S,
        finish_s=(STAGE_SLACK * statistics.median(finished) if finished else 0.0) + CHANNEL_S,
    )


# What a served call's trip may add by the controller's clock beyond twice what the function's
# own calls show (the command and the reply, through pipes to a worker that polls for them).
CHANNEL_S = 50e-6


# How each candidate of a cpp task that the GPU's workers do not run as a kernel is checked, by
# its kind (cpp_candidates.py).
CHECKS: dict[str, Callable[[Any, Any, Any], CheckReport]] = {
    "cpp-function": check_function,
    "cpp-host": check_host,
}
