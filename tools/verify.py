"""Verify and time one candidate against its task's reference: the trust boundary.

The controller holds the seeds, the expected outputs, the statistics and the clock. Three kinds
of worker, each a fresh confined process (protocol.py writes their conversation down):

- the reference's worker computes the expected outputs (float64 where the task allows) and
  times the reference; no candidate code ever runs there;
- the compile worker (CUDA tasks) builds the candidate where only the CUDA headers exist;
- the candidate's worker runs the candidate's trials and its timing rounds.

Reference and candidate are timed in their own processes, in turns the controller sets
(schedule.py), on fresh inputs every round; every timed output is checked against the
reference's on the same inputs (sketch.py), and every batch against the controller's clock.
Exit codes and anything a worker says about itself count for nothing.

A C++ task's expected outputs come from its function instead, in a confined worker of their own
on the CPU, while the GPU's workers run; its reference's worker runs a port of it on the GPU
(cpp_check.py). Its function itself, and a drop-in host file, are checked there too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import cpp_check, extbuild, fit, judge, nvml, plan, schedule, verdicts
from .builds import BuildCache
from .compile import compile_reply
from .errors import NoGpuError
from .pool import Pool, controller_off, for_options
from .protocol import START_STEPS, Expect
from .results import CheckReport, CheckResult, CompileResult, DeviceInfo
from .sandbox import Crew, Sandbox, WorkerFailure, cap, stop_all
from .task import Candidate, Task
from .timing import flush_bytes
from .verify_options import VerifyOptions

Progress = Any


class OwnReference:
    """Where a CUDA task's or a KernelBench problem's expected outputs and reference timing come
    from: its reference's worker alone (a C++ task's: cpp_check.CppReference)."""

    def __init__(self, verifier: Verifier, task: Task, candidate: Candidate) -> None:
        self.worker_task: Any = task  # what the workers are sent as the task
        self.ref_extra: dict[str, Any] = {}  # more of the reference's job
        self.ref_arrays: list[bytes] = []  # and what goes with it

    def prepare(self, trials: list[plan.Trial]) -> tuple[str, str]:
        return "", ""

    def expected(self, i: int, trial: plan.Trial, message: judge.Message) -> judge.Message:
        return message

    def after_rounds(self, box: Sandbox, timeout_s: float) -> None:
        pass

    def audit(self, task: Task, rounds: schedule.Rounds) -> tuple[str, str]:
        """(verdict, why) of timed calls checked against something beside the reference's
        worker: nothing here (that worker is trusted, and every call was compared with it)."""
        return "", ""

    def finish(self, timing: Any) -> tuple[Any, None]:
        return timing, None

    def close(self) -> None:
        pass


# Where each task kind's expected outputs come from, beside its reference's worker.
_REFERENCES: dict[str, Callable[[Any, Any, Any], Any]] = {"cpp": cpp_check.CppReference}


def controller_peak_bytes() -> int:
    """This process's peak resident memory so far (Linux counts it in KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _woke(boxes: Sequence[Sandbox]) -> str:
    """Where a candidate's worker ran while it was paused (Sandbox.pause), in words; "" where
    every pause held. Its timing then says nothing: the reference's batches ran beside it."""
    for n, box in enumerate(boxes):
        if said := box.ran_while_paused():
            where = f" (timing process {n + 1})" if n else ""
            return f"the candidate's worker{where}: {said}"
    return ""


def _describe(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "as given"


RELEASE_WAIT_S = 15.0  # for GPU memory that processes which are ending still hold


def released(need_bytes: int, pci_bus_id: str | None, wait_s: float | None = None) -> int:
    """The GPU's free memory as the driver counts it (NVML, read here), read again until it
    reaches `need_bytes` or `wait_s` (RELEASE_WAIT_S) has passed: the most seen, 0 where NVML
    cannot say. A killed worker's memory, or that of the helpers a baseline timer's
    torch.compile started, comes back some time after its process was reaped: a KernelBench
    check that needed 38.9 GiB (1/36 at a held-out size) started after its problem's baselines,
    found 38.3 of the H100's 79 GiB free and was refused (twenty-second session)."""
    deadline = time.monotonic() + (RELEASE_WAIT_S if wait_s is None else wait_s)
    best = 0
    while True:
        best = max(best, nvml.free_bytes(pci_bus_id) or 0)
        if best >= need_bytes or time.monotonic() >= deadline:
            return best
        time.sleep(0.25)


class Verifier:
    def __init__(
        self,
        options: VerifyOptions | None = None,
        progress: Progress = None,
        pool: Pool | None = None,
    ) -> None:
        """`pool`: one made for these options (pool.for_options) whose workers a door started
        early (Pool.head_start); else one is made here."""
        self.options = options or VerifyOptions()
        self.progress = progress or (lambda _msg: None)
        self._device: DeviceInfo | None = None
        self._timing_seed: int | None = None  # a KernelBench check's rounds' model seed
        o = self.options
        self.pool = pool or for_options(o)
        self._pin = self.pool.pin
        # KernelBench's processes a side: as many as asked, fewer where host memory is short
        self.processes = self.pool.processes.get("kernelbench", 1)
        self.builds = BuildCache(Path(o.build_cache_dir) if o.build_cache_dir else None)
        # KernelBench candidates' load_inline builds, beside the cubins (extbuild.py)
        self.extensions = extbuild.ExtensionCache(self.builds.root / "extensions")
        self._own_cpp = o.reference_cache_dir is None
        self.cpp_cache = Path(o.reference_cache_dir or tempfile.mkdtemp(prefix="kw-cpp-"))

    def close(self) -> None:
        """Stop spare workers and remove caches this verifier made."""
        self.pool.close()
        self.builds.close()
        if self._own_cpp:
            shutil.rmtree(self.cpp_cache, ignore_errors=True)

    def reference_cpus(self) -> set[int]:
        """The one CPU a C++ function is timed on: the timed workers' own (none where they
        are not pinned)."""
        return {max(self._pin)} if self._pin else set()

    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _prestart(self, task: Task, early: bool = False) -> None:
        if self.options.prestart:
            self.pool.prestart(task.kind, early)

    def _job(
        self,
        task: Task,
        role: str,
        trials: list[plan.Trial],
        candidate: dict[str, Any] | None,
        files: dict[str, str],
        poison: int,
        timing_seed: int | None = None,
    ) -> dict[str, Any]:
        """A worker's job. `timing_seed`: the timing's model seed (KernelBench), for a
        reference's worker to draw that model ahead of the warm-up (torch_roles.prepare_timing;
        a candidate's builds it afresh in the warm-up and is not told)."""
        seeded = {} if timing_seed is None else {"timing_model_seed": timing_seed}
        return seeded | {
            "role": role,
            "task": task.model_dump(),
            "trials": [t.job() for t in trials],
            "candidate": candidate,
            "files": files,
            "poison": poison,
            "backend": self.options.backend,
            "output_bytes": 1 << 24,
            "limits": {"file_bytes": 1 << 30, "open_files": 1024},
        }

    # --- the check ----------------------------------------------------------------------------
    def check(self, task: Task, candidate: Candidate) -> CheckReport:
        elsewhere = cpp_check.CHECKS.get(candidate.kind)  # not a kernel the GPU's workers run
        if elsewhere is not None:
            return elsewhere(self, task, candidate)
        try:
            return self._check(task, candidate)
        finally:
            self._prestart(task)
            self.pool.release()

    def _check(self, task: Task, candidate: Candidate) -> CheckReport:
        t0 = time.perf_counter()
        rng = random.Random(secrets.randbits(64))
        trials, post, later, timed_poison = plan.plan_check(task, rng, self.options.min_trials)
        if task.host_code:  # a model's weights: one seed for the check's trials (TorchRunner)
            model_seed = rng.randrange(1 << 31)
            self._timing_seed = secrets.randbits(31)  # the rounds' weights, told to the workers
            trials, post, later = (
                [dataclasses.replace(t, model_seed=model_seed) for t in trials],
                dataclasses.replace(post, model_seed=model_seed),
                [dataclasses.replace(t, model_seed=model_seed) for t in later],
            )
        else:
            self._timing_seed = None
        if self.options.compare_on_gpu:  # large outputs compared where they are (devcompare)
            trials, post = [plan.on_device(task, t) for t in trials], plan.on_device(task, post)
            later = [plan.on_device(task, t) for t in later]
        base = {"task": task.name, "candidate": candidate.path}
        phases: dict[str, float] = {}
        mark = [t0]

        def lap(name: str) -> None:
            now = time.perf_counter()
            phases[name] = phases.get(name, 0.0) + (now - mark[0]) * 1e3
            mark[0] = now

        ext = extbuild.Builds(self.extensions, self._arch, self.options.python_compile_timeout_s)
        crew = Crew()
        # the check's GPU memory: the reference's peak over its trials and the least it left
        # free (for _ready), and, where the reference sized its trials first, what the check
        # needs and what was free then
        sizing: dict[str, int] = {}
        # each output's tolerance widened where PyTorch's own run misses float64 (KernelBench)
        scales: dict[str, float] = {}
        wide: dict[str, float] = {}  # the same from the scaled trial, for scaled timed calls
        # the reference's timed outputs' miss of the truth, by the inputs' scale: the timed
        # calls are judged by what the trials on inputs of their own scale measured
        misses: dict[float, dict[str, float]] = {}
        # where the first reference's and candidate's workers spent their start, by their own
        # account (reported, never decided on)
        starts: dict[str, dict[str, float]] = {}

        def sample() -> None:  # each worker's GPU memory, read from NVML (never while timed)
            crew.sample_gpu(nvml.process_memory())

        def report(verdict: str, reason: str, **extra: Any) -> CheckReport:
            lap("report")
            if (note := ext.note()) and verdict != "compile_error":
                reason = f"{reason} ({note}: what was checked is what the candidate did without it)"
            return CheckReport.model_validate(
                {
                    **base,
                    "verdict": verdict,
                    "reason": cap(reason),
                    "extensions": [vars(b) for b in ext.done],
                    "peak_host_bytes": {"controller": controller_peak_bytes(), **crew.peaks()},
                    "peak_gpu_bytes": crew.gpu_peaks(),
                    "gpu_bytes": dict(sizing),
                    "wall_ms": (time.perf_counter() - t0) * 1e3,
                    "phase_ms": phases,
                    "worker_start_ms": starts,
                    **extra,
                }
            )

        side = _REFERENCES.get(task.kind, OwnReference)(self, task, candidate)
        # the reference's trials: those compared on the GPU after the timing it runs after its
        # rounds (`after_rounds`, in that order), the others before them in this order
        ahead = [*trials, *later, post]
        last = len(ahead) - 1
        if too_big := self._does_not_fit(side.worker_task, ahead):
            return report("error", too_big, device=self._device)
        verdict, why = side.prepare(ahead)
        if verdict:
            return report(verdict, why, device=self._device)
        # what the workers read of the user's files, as text: their view shows none of them
        files = task.reference_files() | task.candidate_files(candidate.path, candidate.source)
        entry = task.compile_entry  # None: the candidate's worker imports it, and says so
        poison = timed_poison
        device: DeviceInfo | None = self._device
        compiled: CompileResult | None = None
        stage = "reference"
        try:
            with contextlib.ExitStack() as stack:
                stack.callback(side.close)
                stack.enter_context(crew)

                def failed(kind: Any, exc: Any, tb: Any) -> bool:
                    """Each worker's GPU memory as a worker fails, before any is stopped."""
                    if kind is not None and issubclass(kind, WorkerFailure):
                        sample()
                    return False

                stack.push(failed)
                ref_kind, cand_kind = task.worker_kinds
                ref_box = crew.join(self.pool.take(ref_kind, "reference"))
                job = self._job(
                    side.worker_task, "reference", ahead, None, files, poison, self._timing_seed
                )
                after_rounds = [
                    *([last] if post.device else []),
                    *(len(trials) + k for k, t in enumerate(later) if t.device),
                ]
                extra: dict[str, Any] = {"after_rounds": after_rounds}
                sizer = fit.MEASURED.get(side.worker_task.kind)
                if sizer is not None:  # its trials sized before it runs one
                    extra["sized"] = True
                ref_box.send(job | side.ref_extra | extra, side.ref_arrays)
                compiler, build_key, built = None, None, None
                flags = candidate.compile_flags(self.options.backend)
                if entry is not None:
                    arch, backend = self._arch(), self.options.backend
                    build_key, built = self.builds.find(
                        candidate.source, entry, arch, backend, flags
                    )
                if entry is not None and built is None:
                    compiler = crew.join(self.pool.take("compile", "compile"))
                    compiler.send(
                        {
                            "source": candidate.source,
                            "entry": entry,
                            "arch": self._arch(),
                            "backend": self.options.backend,
                            "flags": list(flags),
                        }
                    )
                cand_box = crew.join(self.pool.take(cand_kind, "candidate"))
                cand_job = candidate.worker_job(task.path)
                # further processes a side for the timing, their start-up beside the trials
                more = self._more_workers(task, crew, side, cand_job, files, poison)
                self._prestart(task, early=True)  # the next check's, beside this one
                self.progress("starting workers")
                dev, _ = ref_box.receive(
                    self.options.start_timeout_s, "starting the reference worker", Expect(sizes=())
                )
                device = self._device = self._device or _device_info(dev)
                starts["reference"] = start_steps(dev)
                if not dev.get("vmm"):  # no memory to hand over: every output crosses the host
                    trials = [dataclasses.replace(t, device=False) for t in trials]
                    post = dataclasses.replace(post, device=False)
                    later = [dataclasses.replace(t, device=False) for t in later]
                lap("start")
                cubin: list[bytes] = []
                if built is not None:  # this very source, built before: not again
                    compiled, cubin = built[0], [built[1]]
                    lap("compile")
                elif compiler is not None:
                    stage = "compile"
                    self.progress("compiling")
                    header, arrays = compiler.receive(
                        self.options.compile_timeout_s, "compiling", Expect(count=1, total=64 << 20)
                    )
                    compiled = compile_reply(header, self.options.backend, self._arch())
                    compiler.kill()
                    lap("compile")
                    if not compiled.ok or not arrays:
                        return report(
                            "compile_error",
                            f"does not compile: {compiled.first_error}",
                            compile=compiled,
                            device=device,
                        )
                    cubin = [bytes(arrays[0])]
                    if build_key:
                        self.builds.put(build_key, compiled, cubin[0])
                job = self._job(side.worker_task, "candidate", trials, cand_job, files, poison)
                cand_box.send(job, cubin)

                def expected_for(i: int, trial: plan.Trial) -> judge.Message:
                    """The reference's outputs for trial i: read as the candidate's trials
                    are read, so both workers run theirs side by side."""
                    nonlocal stage
                    stage = "reference"
                    self.progress(f"reference outputs {i + 1}/{len(ahead)}")
                    message = ref_box.receive(
                        self._run_timeout(task),
                        f"reference trial at {_describe(trial.sizes)}",
                        judge.reference_expect(task, trial, self.options.host_memory_bytes // 4),
                    )
                    if bool(message[0].get("device")) != trial.device:
                        raise WorkerFailure("crashed", "the reference kept the wrong outputs")
                    if message[0].get("trial") != i:
                        raise WorkerFailure("crashed", f"the reference sent other outputs than {i}")
                    for key, pick in (
                        ("gpu_peak_bytes", max),
                        ("gpu_free_bytes", min),
                        ("gpu_native_peak_bytes", max),
                    ):
                        if isinstance(v := message[0].get(key), int):
                            sizing[key] = pick(sizing.get(key, v), v)
                    message = side.expected(i, trial, message)
                    # a scaled trial's slack is its own (scaled_trial), and, at the bench
                    # size, the scaled timed calls' absolute tolerance (rounds_problem)
                    into = scales if trial.scale == 1.0 else {} if trial.held_out else wide
                    judge.native_scales(message[0], into)
                    judge.reference_misses(task, message[0], misses.setdefault(trial.scale, {}))
                    sample()
                    lap("reference")
                    stage = "candidate"
                    return message

                if sizer is not None:
                    stage = "reference"
                    self.progress("sizing the problem's tensors")
                    too_big = self._sized(
                        ref_box, sizer, ahead, bool(dev.get("vmm")), sizing, dev.get("pci_bus_id")
                    )
                    lap("reference")
                    if too_big:
                        return report("error", too_big, device=device)
                first = expected_for(0, trials[0])
                reference: Any = first[0].get("reference") or task.reference_label
                stage = "candidate"
                started, _ = cand_box.receive(
                    self.options.start_timeout_s, "starting the worker", Expect(sizes=())
                )
                starts["candidate"] = start_steps(started)
                if entry is None:
                    self.progress("importing the candidate")
                    compiled = self._import_reply(cand_box, "importing the candidate", ext)
                    lap("compile")
                    if not compiled.ok:
                        return report(
                            "compile_error",
                            f"does not compile: {compiled.first_error}",
                            compile=compiled,
                            device=device,
                        )
                results = []
                for i, trial in enumerate(trials):
                    expected = first if i == 0 else expected_for(i, trial)
                    self.progress(f"checking {i + 1}/{len(trials)} at {_describe(trial.sizes)}")
                    outcome = self._trial(task, trial, expected, cand_box, "check", ref_box)
                    sample()
                    _next(ref_box, i, trial)
                    results.append(outcome)
                    if not outcome.ok:
                        check = CheckResult(
                            ok=False,
                            reason=outcome.reason,
                            trials=tuple(results),
                            reference=reference,
                        )
                        return report(
                            "wrong", outcome.reason, compile=compiled, check=check, device=device
                        )
                    lap("trials")
                del first, expected  # a large trial's outputs are not held through the timing
                # compared on the GPU: the reference runs these after its rounds
                held = [
                    None if t.device else expected_for(len(trials) + k, t)
                    for k, t in enumerate(later)
                ]
                at_bench = None if post.device else expected_for(last, post)
                stage = "reference"
                more = self._ready(more, sizing, nvml.free_bytes(dev.get("pci_bus_id")))
                stage = "candidate"
                self._imported(more, ext)
                lap("further workers")  # waiting for their start and their imports
                self.progress("timing" + (f" in {len(more) + 1} processes a side" if more else ""))
                scale = judge.timed_scale(results)  # every timed call's inputs scaled so
                wide_timed = wide if scale != 1.0 else None
                calls = judge.TimedCalls(task, scales, wide_timed, misses.get(scale, {}))
                # a worker that runs the candidate's host code is handed each timed call's
                # inputs, made in its pair's reference worker (handover.py), where the GPU
                # shares memory as descriptors and the option is on (off by default: see it)
                handover = self.options.hand_over_inputs and cand_box.host_code
                budget = dataclasses.replace(
                    self._budget(task), input_scale=scale, outputs_settled=calls.settled,
                    handover=handover and bool(dev.get("vmm")),
                )  # fmt: skip
                self.pool.settle()  # no spare still warming up on the GPU while rounds are timed
                before = nvml.clock_sample()
                with controller_off(self._pin, self.pool.others):
                    rounds = schedule.run(ref_box, cand_box, budget, self._pin, more)
                after = nvml.clock_sample()
                sample()
                stop_all(ref for ref, _ in more)  # timed: no more of them (candidates: below)
                self.pool.release()
                lap("timing")
                ref_box.send({"cmd": "done"})
                side.after_rounds(ref_box, self.options.run_timeout_s)
                # the calls judged through the rounds are not judged again
                verdict, why, _ = calls.judge(rounds.ref, rounds.cand)
                if verdict and scale != 1.0:
                    why += f" (on inputs x{scale:g}: {judge.SCALED_INPUTS})"
                if not verdict:
                    verdict, why = side.audit(task, rounds)
                if after_rounds:  # the reference's "done", then the trials it runs after
                    stage = "reference"
                    ended, _ = ref_box.receive(
                        self.options.run_timeout_s,
                        "ending the reference's rounds",
                        Expect(sizes=()),
                    )
                    if ended.get("type") != "done":
                        raise WorkerFailure("crashed", "the reference did not end its rounds")
                if at_bench is None:
                    at_bench = expected_for(last, post)
                cand_box.send({"cmd": "post", "trial": post.job()})
                post_result = self._trial(task, post, at_bench, cand_box, "post-timing", ref_box)
                sample()
                _next(ref_box, last, post)
                results.append(post_result)
                others = [(len(trials) + k, t, held[k]) for k, t in enumerate(later)]
                afterwards = [post_result, *self._after(task, others, expected_for, cand_box,
                                                        ref_box, more)]  # fmt: skip
                results += afterwards[1:]
                post_result = next((r for r in afterwards if not r.ok), post_result)
                lap("post-check")
                timing, problem = verdicts.timing(task, rounds, device, before, after)
                problem = _woke([cand_box, *(c for _, c in more)]) or problem
                timing = timing.model_copy(
                    update={"input_scale": scale, "inputs_handed_over": rounds.handover}
                )
                if rounds.handover_problem:
                    said = ("timed calls' inputs made in each timing worker, not handed over: "
                            + rounds.handover_problem)  # fmt: skip
                    timing = timing.model_copy(update={"notes": (*timing.notes, said)})
                timing, speedups = side.finish(timing)
                check = CheckResult(
                    ok=post_result.ok and verdict != "wrong",
                    reason=post_result.reason or why or _passed(results, reference, scales, scale),
                    trials=tuple(results),
                    reference=reference,
                )
                if verdict and verdict != "implausible":  # a timed call caught: it came first
                    final, reason = verdict, why
                elif not post_result.ok:
                    final, reason = "wrong", post_result.reason
                elif verdict:  # the rounds left a suspect drift undecided: after a wrong trial
                    final, reason = verdict, why
                elif problem:
                    final, reason = "implausible", problem
                else:
                    final, reason = "correct", _passed(results, reference, scales, scale)
                return report(
                    final,
                    reason,
                    compile=compiled,
                    check=check,
                    timing=timing,
                    device=device,
                    speedups=speedups,
                )
        except cpp_check.ReferenceProblem as problem:
            return report("error", str(problem), compile=compiled, device=device)
        except WorkerFailure as failure:
            if stage == "reference":
                crowded = crowded_out(crew.gpu_peaks(), device) or out_of_memory_beside(
                    failure.reason, sizing.get("gpu_needed_bytes"), device
                )
                if crowded:
                    return report("crashed", f"{crowded}; the reference then failed: "
                                  f"{failure.reason}", compile=compiled, device=device)  # fmt: skip
                return report(
                    "error", f"the task's reference failed: {failure.reason}", device=device
                )
            if stage == "compile":
                return report(
                    "compile_error", f"the compiler failed: {failure.reason}", device=device
                )
            return report(failure.verdict, failure.reason, compile=compiled, device=device)
        except (ArithmeticError, ValueError, TypeError, KeyError) as exc:
            if stage != "candidate":
                raise
            # what the workers sent, past the checks their messages pass, could not be judged
            # (a number no float holds, say): a verdict, never a traceback that ends a loop's
            # whole run (a red-team review). "error", not the candidate's "crashed": through
            # the rounds and their judging, the fault may be the reference's or ours, so the
            # reason says where it was raised (a review of that first version)
            import traceback

            frame = traceback.extract_tb(exc.__traceback__)[-1]
            where = f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}"
            said = f"{type(exc).__name__}: {exc}"[:300]
            return report(
                "error",
                f"what the workers sent could not be judged ({said}, at {where})",
                compile=compiled,
                device=device,
            )

    def _more_workers(
        self,
        task: Task,
        crew: Crew,
        side: OwnReference,
        cand_job: dict[str, Any],
        files: dict[str, str],
        poison: int,
    ) -> list[tuple[Sandbox, Sandbox]]:
        """For a forward timed with its host dispatch (KernelBench), the timing's further
        processes a side, sent their jobs now (no trials: they only time) so that their
        start-up, the candidate's import included, runs beside the first pair's trials. The
        same forward settles at a level of its own in each process, a few percent apart (an
        H100, eighth and tenth sessions: about 1.4% a self-check): one process a side cannot
        promise the 2% a reference must read against itself."""
        if not task.host_code or self.processes <= 1:
            return []
        ref_kind, cand_kind = task.worker_kinds
        more = []
        for n in range(2, self.processes + 1):
            ref = crew.join(self.pool.take(ref_kind, f"reference {n}"))
            seed = self._timing_seed
            ref.send(
                self._job(side.worker_task, "reference", [], None, files, poison, seed)
                | side.ref_extra,
                side.ref_arrays,
            )
            cand = crew.join(self.pool.take(cand_kind, f"candidate {n}"))
            cand.send(self._job(side.worker_task, "candidate", [], cand_job, files, poison))
            more.append((ref, cand))
        return more

    def _after(
        self,
        task: Task,
        after: list[tuple[int, plan.Trial, judge.Message | None]],
        expected_for: Callable[[int, plan.Trial], judge.Message],
        cand_box: Sandbox,
        ref_box: Sandbox,
        more: list[tuple[Sandbox, Sandbox]],
    ) -> list[Any]:
        """The other sizes' trials after the timing, in every candidate process that timed
        (plan.after_timing), each against the reference's outputs for it: sent before the
        timing, or, for a trial compared on the GPU, made now and kept there while every
        process's run is compared with them. The further processes' workers are done after.
        A wrong one says where it was seen."""
        results = []
        boxes = [cand_box, *(cand for _, cand in more)]
        for i, trial, held in after:
            expected = held if held is not None else expected_for(i, trial)
            for n, box in enumerate(boxes, start=1):
                self.progress(f"after the timing: {_describe(trial.sizes)} in process {n}")
                box.send({"cmd": "post", "trial": trial.job()})
                got = self._trial(task, trial, expected, box, "post-timing", ref_box)
                where = f"after the timing, at {_describe(trial.sizes)}" + (
                    f", in timing process {n}" if len(boxes) > 1 else ""
                )
                reason = got.reason if got.ok else f"{where}: {got.reason}"
                results.append(got.model_copy(update={"process": n, "reason": reason}))
            _next(ref_box, i, trial)
        stop_all(boxes[1:])
        return results

    def _ready(
        self,
        more: list[tuple[Sandbox, Sandbox]],
        at_bench: dict[str, Any],
        free_now: int | None = None,
    ) -> list[tuple[Sandbox, Sandbox]]:
        """The further pairs' reference workers, started; as many pairs as the GPU's free
        memory holds beside the first, the rest stopped.

        Where the reference told its native forward's peak (inputs, model, outputs: about what
        a timing process holds) and the driver tells the memory free now (`free_now`, read by
        the controller after the trials, every worker's use counted): each further process
        takes that peak, a context and an L2 flush buffer; the first reference's own timing
        allocation comes on top, and 15% stays spare. A further candidate's worker still holds
        its memory while the first one's trials after the timing are compared, so where the
        check's own need was estimated (fit.kernelbench_needs) against the memory free when it
        began, that need and the further candidates' must fit too, 10% spare.

        Otherwise each pair about twice what the reference's worker used in its trials,
        float64 copies included, against the least free memory it saw: one process a side for
        today's 6 GiB problems (their float64 trials took 33 to 36 GB)."""
        keep = len(more)
        peak, free = at_bench.get("gpu_peak_bytes"), at_bench.get("gpu_free_bytes")
        native = at_bench.get("gpu_native_peak_bytes")
        if type(native) is int and native > 0 and type(free_now) is int and free_now > 0:
            # a timed call's inputs are also packed in the reference's worker, to hand over
            # (handover.pack: a copy beside get_inputs()'s own until they are let go)
            handed = at_bench.get("timed_in_bytes", 0)
            each = native + fit.CONTEXT_BYTES + self._flush_bytes() + handed
            keep = min(keep, max(0, int(0.85 * free_now - each) // (2 * each)))
            need, began = at_bench.get("gpu_needed_bytes"), at_bench.get("gpu_free_at_start_bytes")
            if type(need) is int and type(began) is int and need > 0 and began > 0:
                keep = min(keep, max(0, int(0.9 * began - need) // each))
        elif isinstance(peak, int) and isinstance(free, int) and peak > 0:
            keep = min(keep, max(0, int(0.7 * free) // (2 * peak)))
        for ref, cand in more[keep:]:
            ref.kill()
            cand.kill()
        ready = []
        for n, (ref, cand) in enumerate(more[:keep], start=2):
            try:
                ref.receive(
                    self.options.start_timeout_s, f"starting reference worker {n}", Expect(sizes=())
                )
            except WorkerFailure:
                # It started, and warmed up on the GPU, beside the candidate's workers and the
                # first pair's trials: a candidate that takes the GPU's memory for milliseconds
                # at a time made one fail there, and the check blamed the task (the suite's
                # kb_gpu_memory_pulse, H200); so could the float64 trials' own peak, which the
                # count above, made after them, does not see. Nothing says whose doing it was:
                # that pair is dropped, and the sides are timed in fewer processes.
                ref.kill()
                cand.kill()
                continue
            ready.append((ref, cand))
        return ready

    def _import_reply(self, box: Sandbox, phase: str, ext: extbuild.Builds) -> CompileResult:
        """A KernelBench candidate's import, as its worker reports it; the load_inline builds
        it asks for meanwhile are answered (extbuild.py)."""
        while True:
            header, _ = box.receive(self.options.python_compile_timeout_s, phase, Expect(sizes=()))
            if header.get("type") != "build":
                return compile_reply(header, "python", "")
            self.progress(f"{phase}: building its extension")
            ext.answer(box, header)

    def _imported(self, more: list[tuple[Sandbox, Sandbox]], ext: extbuild.Builds) -> None:
        """The further candidate workers started, each with the candidate imported. One that
        imported in its first worker and not in another crashed."""
        for n, (_, cand) in enumerate(more, start=2):
            cand.receive(self.options.start_timeout_s, f"starting worker {n}", Expect(sizes=()))
            compiled = self._import_reply(cand, f"importing the candidate in worker {n}", ext)
            if not compiled.ok:
                raise WorkerFailure(
                    "crashed",
                    f"imported in its first worker, not in worker {n}: {compiled.first_error}",
                )

    def _does_not_fit(self, task: Task, trials: list[plan.Trial]) -> str:
        """Why this check would not fit this machine's memory ("" when it would, or when the
        task's kind cannot say before its workers run)."""
        needs = fit.NEEDS.get(task.kind)
        if needs is None:
            return ""
        need = needs(task, [t.sizes for t in trials], self._flush_bytes())
        device = self._device
        total = device.memory_total_bytes if device else None
        return fit.problem(need, total, self.options.host_memory_bytes, fit.host_available_bytes())

    def _sized(
        self,
        box: Sandbox,
        sizer: Callable[..., fit.Needs | None],
        trials: list[plan.Trial],
        on_gpu: bool,
        sizing: dict[str, int],
        pci_bus_id: str | None = None,
    ) -> str:
        """Why a check whose reference sizes its trials before running them (fit.MEASURED)
        would not fit this GPU or this host ("" when it would, or where no trial could be
        sized); what it needs, and the GPU's free memory, kept in `sizing`. Short only of the
        memory free now, it first waits a little for what processes that are ending still hold
        (`released`)."""
        header, _ = box.receive(
            self.options.run_timeout_s, "sizing the problem's tensors", Expect(sizes=())
        )
        if header.get("type") != "sized" or not isinstance(header.get("trials"), list):
            raise WorkerFailure("crashed", "the reference sent no sizes for its trials")
        need = sizer(header["trials"], [t.sizes for t in trials], self._flush_bytes())
        free = header.get("gpu_free_bytes")
        free = free if type(free) is int and free > 0 else None
        total = header.get("gpu_total_bytes")
        wanted = need.gpu_bytes if need is not None else 0
        # short only of what is free now (it would fit the whole GPU): what comes back
        if free is not None and type(total) is int and free < wanted <= total:
            free = max(free, released(wanted, pci_bus_id))
        if free is not None:
            sizing["gpu_free_at_start_bytes"] = free
        bench = header["trials"][-1] if header["trials"] else None  # the last: the bench size
        if isinstance(bench, dict) and type(bench.get("in")) is int and bench["in"] >= 0:
            sizing["timed_in_bytes"] = bench["in"]  # a timed call's inputs
        if need is None:
            return ""
        sizing["gpu_needed_bytes"] = need.gpu_bytes
        return fit.measured_problem(need, free, on_gpu, fit.host_available_bytes())

    def _flush_bytes(self) -> int:
        """An L2 flush buffer's bytes on this GPU (its L2 where NVML can tell, else 50 MB's)."""
        self._arch()  # the device, where NVML can tell
        device = self._device
        return flush_bytes(device.l2_bytes if device and device.l2_bytes else 50 << 20)

    def _arch(self) -> str:
        if self._device is None:
            with contextlib.suppress(NoGpuError):
                self._device = nvml.device_info()
        return self._device.arch if self._device else "sm_90"

    def _run_timeout(self, task: Task) -> float:
        return self.options.run_timeout_s * task.run_timeout_factor

    def _budget(self, task: Task) -> schedule.Budget:
        if not task.host_code:  # a kernel's launches: one call a round
            return schedule.Budget(
                seconds=self.options.timing_budget_s, round_timeout_s=self.options.run_timeout_s
            )
        # A forward timed with its host dispatch varies by 10-20% call to call: more rounds.
        return schedule.Budget(
            seconds=5 * self.options.timing_budget_s,
            max_rounds=3000,
            batch=16,
            round_timeout_s=self._run_timeout(task),
            warmup_timeout_s=self.options.python_compile_timeout_s,
            model_seed=self._timing_seed if self._timing_seed is not None else secrets.randbits(31),
            several_calls=True,
        )

    def _trial(
        self,
        task: Task,
        trial: plan.Trial,
        ref: judge.Message,
        box: Sandbox,
        phase: str,
        ref_box: Sandbox | None = None,
    ) -> Any:
        if trial.device and ref_box is not None:
            result = self._trial_on_device(task, trial, ref, box, ref_box, phase)
        else:
            runs = []
            for _ in trial.poisons:
                header, arrays = box.receive(
                    self._run_timeout(task),
                    f"running at {_describe(trial.sizes)}",
                    judge.output_expect(task, trial, ref[0]),
                )
                runs.append((header, arrays))
            result = judge.trial_result(task, trial, ref, runs, phase)
        return result if trial.scale == 1.0 else judge.scaled_trial(result, trial, ref[0])

    def _trial_on_device(
        self,
        task: Task,
        trial: plan.Trial,
        ref: judge.Message,
        box: Sandbox,
        ref_box: Sandbox,
        phase: str,
    ) -> Any:
        """A trial compared on the GPU: each of the candidate's runs hands its outputs over as
        memory handles, passed on to the reference's worker, whose facts are judged here. A
        run whose header alone condemns it is not compared (its handles are closed), but
        every run is read, so the worker's next reply is its next trial's."""
        where = f"running at {_describe(trial.sizes)}"
        runs: list[judge.DeviceRun] = []
        compared_before = False
        for r in range(len(trial.poisons)):
            header, _ = box.receive(self._run_timeout(task), where, Expect(sizes=()))
            try:
                places = judge.device_places(header)
            except ValueError as exc:  # as a run's unexpected reply off the GPU: not its outputs
                raise WorkerFailure("wrong", f"{where}: {exc}") from None
            fds = []
            if places:
                fds = box.receive_fds(len(places), self.options.start_timeout_s, where)
            handed = places is not None  # the worker waits for "taken" before its next run
            try:
                if judge.device_run_problem(task, header, ref[0]) or (r and not compared_before):
                    runs.append((header, [], None))
                    compared_before = False
                    if handed:
                        box.send({"cmd": "taken"})
                    continue
                try:
                    outputs = judge.device_outputs(task, trial, header, ref[0])
                except ValueError as exc:
                    raise WorkerFailure("wrong", f"{where}: {exc}") from None
                cmd: dict[str, Any] = {
                    "cmd": "compare", "trial": ref[0].get("trial"), "outputs": outputs
                }  # fmt: skip
                if r + 1 < len(trial.poisons):
                    cmd["hold"] = True  # the next run is compared with this one too
                if r:
                    cmd["agree"] = True
                ref_box.send(cmd)
                ref_box.send_fds(fds)
            finally:
                for fd in fds:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            try:  # the harness's own work, in the trusted worker: never the candidate's fault
                compared, _ = ref_box.receive(
                    self.options.start_timeout_s,
                    f"comparing at {_describe(trial.sizes)}",
                    Expect(sizes=()),
                )
            except WorkerFailure as failure:
                raise cpp_check.ReferenceProblem(
                    f"the task's reference failed: {failure.reason}"
                ) from None
            found, agreed = compared.get("facts"), compared.get("agreed") if r else None
            if compared.get("type") != "compared" or not isinstance(found, list):
                raise cpp_check.ReferenceProblem("the task's reference did not compare the outputs")
            if r and not isinstance(agreed, list):
                raise cpp_check.ReferenceProblem("the task's reference did not compare the runs")
            runs.append((header, found, agreed))
            compared_before = True
            if handed:
                box.send({"cmd": "taken"})
        return judge.device_trial_result(task, trial, ref[0], runs, phase)


def crowded_out(peaks: dict[str, int], device: DeviceInfo | None) -> str:
    """Why a reference that failed beside the candidate's workers failed for them: those
    workers held half the GPU's memory or more (`peaks`: each worker's most, by its label, the
    last sample taken as the reference failed), or "" (pure). The reference's trials run beside
    the candidate's: a candidate that takes the GPU's memory would otherwise make the task's
    reference fail, and the verdict blame the task."""
    total = device.memory_total_bytes if device else 0
    held = sum(v for k, v in peaks.items() if k.startswith("candidate"))
    if not total or held * 2 < total:
        return ""
    return (
        f"out of memory: the candidate's workers held {held / (1 << 30):.1f} GiB of the GPU's "
        f"{total / (1 << 30):.1f} GiB"
    )


_OUT_OF_MEMORY = re.compile(r"out of memory|OutOfMemoryError|ALLOC_FAILED", re.IGNORECASE)


def out_of_memory_beside(reason: str, needed: int | None, device: DeviceInfo | None) -> str:
    """Why a reference that ran out of GPU memory beside the candidate's workers ran out for
    them: the check had estimated what its trials need, the reference's and the candidate's
    alike, and found it fits (`needed`, in bytes), so what took the rest was the only other
    party on the GPU; or "" (pure). A sample of the workers' memory as the reference fails
    (crowded_out) misses a candidate that takes the memory for milliseconds at a time and
    lets it go between."""
    if needed is None or not _OUT_OF_MEMORY.search(reason):
        return ""
    total = f" of the GPU's {device.memory_total_bytes / (1 << 30):.1f} GiB" if device else ""
    return (
        f"out of memory: the check needs {needed / (1 << 30):.1f} GiB{total} by its estimate, "
        f"and the reference ran out beside the candidate's workers"
    )


def _next(ref_box: Sandbox, i: int, trial: plan.Trial) -> None:
    """The reference's worker may free trial i's outputs kept on the GPU: every run of it is
    compared (devcompare.compare_here)."""
    if trial.device:
        ref_box.send({"cmd": "next", "trial": i})


def _passed(
    results: list[Any],
    reference: str,
    scales: dict[str, float] | None = None,
    timed_scale: float = 1.0,
) -> str:
    shapes = {tuple(sorted(t.sizes.items())) for t in results}
    shown = dict.fromkeys(_describe(t.sizes) for t in results if t.held_out)  # once each
    held = f" (held out: {', '.join(shown)})" if shown else ""
    article = "the " if reference.endswith(("reference", "kernel")) else ""
    wide = judge.widened(scales or {})
    scaled = dict.fromkeys(f"x±{t.scale:g}" for t in results if t.scale != 1.0 and t.counted)
    on = f", inputs also {', '.join(scaled)}" if scaled else ""
    if timed_scale != 1.0:
        on += f" (every timed call's x±{timed_scale:g} too)"
    skipped = next((t.reason for t in results if not t.counted), "")
    return (
        f"{len(results)} trials over {len(shapes)} shapes{held}{on}, against {article}"
        f"{reference}" + wide + (f"; a trial {skipped}" if skipped else "")
    )


def start_steps(header: dict[str, Any]) -> dict[str, float]:
    """A worker's own account of its start (protocol.START_STEPS, ms a step), kept to the known
    steps and to finite times under a day: a candidate's worker says it too, and it is only
    shown."""
    got = header.get("start_ms")
    if not isinstance(got, dict):
        return {}
    return {
        k: float(v)
        for k, v in got.items()
        if k in START_STEPS and type(v) in (int, float) and 0 <= v < 86_400_000
    }


def _device_info(header: dict[str, Any]) -> DeviceInfo:
    pageable = header.get("pageable")
    said = {"pageable_memory_access": pageable} if isinstance(pageable, bool) else {}
    try:
        info = nvml.device_info(
            header.get("pci_bus_id"), header.get("sm_count"), header.get("l2_bytes")
        )
    except NoGpuError:
        info = DeviceInfo(
            name="unknown",
            arch="sm_" + str(header.get("cc", "")),
            driver_version="",
            memory_total_bytes=0,
            sm_count=header.get("sm_count"),
            l2_bytes=header.get("l2_bytes"),
        )
    return info.model_copy(update=said)
