"""The worker's roles for CUDA tasks: functions of the `serving.Worker` they serve.

The reference's worker compiles the task's own kernel (or runs its float64 Python reference)
and never sees a candidate; the candidate's worker runs only the cubin the compile worker built,
no host code of the candidate's. Both then serve the controller's timing rounds (rounds.py).

A cpp task's workers serve its CUDA view (cpp.CppTask.worker_task): the reference's worker runs
the GPU-side reference (a port, sent built as a cubin), and after the rounds times the copies a
drop-in host function makes (`copies`). Outputs the C++ code reads before writing (init =
"fill:V") start as V on both sides, never poisoned (`Runner`).
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import TYPE_CHECKING, Any

from .serving import flat

if TYPE_CHECKING:
    from .serving import Worker


def _runner_class() -> Any:
    from .runners import GUARD_BITS, CudaRunner, guarded, leads, poisoned

    class Runner(CudaRunner):
        """A CUDA task's runner whose outputs with a declared start (init = "fill:V") start as
        V, inside guard bands as every array is: for every other task the same as its base."""

        def outputs(self, sizes: dict[str, int], poison: int, spread: int = 0) -> dict[str, Any]:
            from .fills import fill_value

            lead = leads(spread, len(self.task.args))
            made = {}
            for i, a in enumerate(self.task.args):
                if a.role != "out":
                    continue
                shape = self.task.shape(a, sizes)
                start = fill_value(a.init)
                if start is None:
                    made[a.name] = poisoned(shape, a.dtype, poison, lead[i])
                else:
                    made[a.name] = guarded(shape, a.dtype, GUARD_BITS, lead[i])
                    made[a.name].fill(start)
            return made

    return Runner


def cuda_reference(worker: Worker, cubin: bytes | None = None) -> None:

    from .rounds import CudaRounds
    from .runners import load_module
    from .timing import Clock

    task = worker.task
    source = None if cubin else (task.source, worker.job["backend"], worker.arch)
    runner = _runner_class()(task, None, worker.scratch, "reference", cubin=cubin, source=source)
    if runner.compile_result is not None and not runner.compile_result.ok:
        worker.send(
            {
                "type": "error",
                "error": "the task's own kernel does not compile: "
                + runner.compile_result.first_error,
            }
        )
        return
    ref_fn = None
    if task.reference_python:
        func = task.reference_python.rsplit(":", 1)[1]
        ref_fn = getattr(load_module(str(worker.scratch / "kw_reference.py"), "kw_reference"), func)
    on_gpu = bool(worker.job["device"].get("vmm"))  # large trials compared here (devcompare)
    trials, later = after_rounds(worker.job, on_gpu)
    for i, trial in trials:
        _reference_trial(worker, runner, ref_fn, i, trial, on_gpu)
    _fresh_pool()
    worker.clock = Clock(worker.job["device"]["l2_bytes"], queue_ahead=True)
    worker.serve(CudaRounds(task, runner, worker.clock, int(worker.job.get("poison", 0x7FC00001))))
    if worker.job.get("copies"):
        worker.send({"type": "copies", "ms": copies(task)})
    for i, trial in later:
        _reference_trial(worker, runner, ref_fn, i, trial, on_gpu)


def after_rounds(
    job: dict[str, Any], on_gpu: bool
) -> tuple[list[tuple[int, Any]], list[tuple[int, Any]]]:
    """The job's trials the reference runs before its rounds, and those it runs after them
    (the controller's "after_rounds": compared here, they run as the candidate's do, after
    the timing), each with its index; without memory to hand over, all before."""
    trials = list(enumerate(job["trials"]))
    after = [int(i) for i in job.get("after_rounds") or []] if on_gpu else []
    if not all(0 <= i < len(trials) and trials[i][1].get("device") for i in after):
        raise ValueError(f"trials {after} cannot run after the rounds")
    return [t for t in trials if t[0] not in after], [trials[i] for i in after]


def _reference_trial(
    worker: Worker, runner: Any, ref_fn: Any, i: int, trial: dict[str, Any], on_gpu: bool
) -> None:
    """The reference's outputs for trial i: sent to the controller, or, for a trial marked
    `device` (a large one), kept on the GPU and compared here with the candidate's, which
    arrive as memory handles (devcompare.compare_here)."""
    import cupy

    from .expr import evaluate
    from .runners import checksum, release_guards

    task = worker.task
    sizes, seed = trial["sizes"], trial["seed"]
    release_guards()
    ins = runner.inputs(sizes, seed, trial.get("inits"))
    sums = {a.name: checksum(ins[a.name]) for a in task.args if a.role == "in"}
    outs: list[Any] = []
    if ref_fn is not None:
        kwargs: dict[str, Any] = {}
        for a in task.args:
            if a.role == "scalar":
                kwargs[a.name] = evaluate(a.value, sizes)
            elif a.name in ins:
                x = ins[a.name]
                kwargs[a.name] = x.astype(cupy.float64) if x.dtype.kind == "f" else x.copy()
        result = ref_fn(cupy, **kwargs)
        for a in task.args:
            if a.role in ("out", "inout"):
                want = task.shape(a, sizes)
                dt = reference_dtype(a.dtype, math.prod(want))
                arr = cupy.ascontiguousarray(cupy.asarray(result[a.name]), dtype=dt)
                if tuple(arr.shape) != want:
                    raise ValueError(
                        f"reference() returned {a.name} with shape "
                        f"{tuple(arr.shape)}, expected {want}"
                    )
                outs.append(arr)
    else:
        arrays = {**ins, **runner.outputs(sizes, 0x7FC00001)}
        runner.launch(arrays, sizes)
        outs = [arrays[a.name] for a in task.args if a.role in ("out", "inout")]
    worker.sync()
    dtypes = [str(x.dtype) for x in outs]
    header = {"type": "expected", "trial": i, "checksums": sums, "dtypes": dtypes}
    if ref_fn is not None:
        header["kernel_miss"] = kernel_miss(task, runner, ins, outs, sizes)
    if on_gpu and trial.get("device"):
        from .devcompare import compare_here

        worker.send({**header, "device": True})
        compare_here(worker, i, outs)
        return
    worker.send(header, [flat(x.get()) for x in outs])


def kernel_miss(task: Any, runner: Any, ins: dict[str, Any], truth: list[Any], sizes: Any) -> dict:
    """How far the task's own kernel, which the timing runs as the reference, misses its
    float64 reference on a trial's inputs, in tolerances (the worst element), by output name:
    a candidate's timed outputs are held to that kernel's, within one tolerance plus this
    (judge.honest_times). Inputs the kernel writes are copied first; outputs poisoned as a
    trial's are."""

    from .correctness import tolerance

    arrays = dict(ins)
    for a in task.args:
        if a.role == "inout":
            arrays[a.name] = ins[a.name].copy()
    arrays |= runner.outputs(sizes, 0x7FC00001)
    runner.launch(arrays, sizes)
    missed: dict[str, float] = {}
    outs = [a for a in task.args if a.role in ("out", "inout")]
    for a, want in zip(outs, truth, strict=True):
        got = arrays[a.name]
        if got.dtype.kind != "f":
            continue
        atol, rtol = tolerance(a.dtype, task.atol, task.rtol)
        missed[a.name] = worst_miss(got, want, atol, rtol)
    del arrays
    return missed


MISS_CHUNK = 1 << 22  # elements at a time: five float64 temporaries of 32 MiB each at most


def worst_miss(got: Any, want: Any, atol: float, rtol: float, chunk: int = MISS_CHUNK) -> float:
    """The worst element's miss of `want` (where it is finite), in tolerances, a chunk at a
    time (CuPy or NumPy arrays): float64 copies of a whole large output were five times its
    elements in eight bytes each. NaN where `want` is finite: inf (unknown)."""
    import cupy

    xp = cupy.get_array_module(got)
    g_all, t_all = got.ravel(), want.ravel()
    worst = 0.0
    for i in range(0, t_all.size, chunk):
        t = t_all[i : i + chunk].astype(xp.float64)
        g = g_all[i : i + chunk].astype(xp.float64)
        finite = xp.isfinite(t)
        err = xp.abs(g - t)[finite] / (atol + rtol * xp.abs(t[finite]))
        here = float(err.max()) if err.size else 0.0
        if here != here:  # NaN: unknown
            return float("inf")
        worst = max(worst, here)
    return worst


def copies(task: Any, calls: int = 12, budget_s: float = 2.0) -> list[float]:
    """What a drop-in host function spends beside its kernel, at the bench size, call by call
    (ms): allocating each array, copying in what the function reads from pageable host memory,
    copying back what it writes, freeing (cpp_host.copies says which)."""
    import time

    import numpy as np
    from cupy.cuda import runtime

    from .cpp_host import copy_bytes

    plan = copy_bytes(task, task.bench)
    host = {name: np.ones(max(n, 1), dtype=np.uint8) for name, n, _, _ in plan}  # touched
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < calls and (len(times) < 3 or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        ptrs = {name: runtime.malloc(max(n, 1)) for name, n, _, _ in plan}
        for name, n, to_device, _ in plan:
            if to_device:
                runtime.memcpy(ptrs[name], host[name].ctypes.data, n, runtime.memcpyHostToDevice)
        for name, n, _, back in plan:
            if back:
                runtime.memcpy(host[name].ctypes.data, ptrs[name], n, runtime.memcpyDeviceToHost)
        for ptr in ptrs.values():
            runtime.free(ptr)
        runtime.deviceSynchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def cuda_candidate(worker: Worker, cubin: bytes | None) -> None:
    import contextlib

    import cupy

    from . import vmm
    from .rounds import CudaRounds
    from .runners import broken_guards, checksum, release_guards
    from .spec import LaunchSpec
    from .timing import Clock

    task = worker.task
    cand = worker.job["candidate"]
    launch = LaunchSpec.model_validate(cand["launch"]) if cand.get("launch") else None
    runner = _runner_class()(task, launch, worker.scratch, "candidate", cubin=cubin)

    def trial_run(label: Any, trial: dict[str, Any]) -> None:
        for run, poison in enumerate(trial["poisons"]):
            sizes = trial["sizes"]
            release_guards()
            ins = runner.inputs(sizes, trial["seed"], trial.get("inits"))
            shared = vmm.Allocator(cupy.cuda.Device().id) if trial.get("device") else None
            with cupy.cuda.using_allocator(shared) if shared else contextlib.nullcontext():
                made = runner.outputs(sizes, poison)
            arrays = {**ins, **made}
            runner.launch(arrays, sizes)
            worker.sync()
            sums = {a.name: checksum(ins[a.name]) for a in task.args if a.role == "in"}
            header = {"type": "outputs", "trial": label, "run": run, "checksums": sums}
            header["guards"] = broken_guards(arrays)
            names = [a.name for a in task.args if a.role in ("out", "inout")]
            if shared is None:
                worker.send(header, [flat(arrays[n].get()) for n in names])
                continue
            # Compared where they are, by the reference's worker: handed over as memory
            # handles, and unmapped here first, so nothing in this process reaches them again.
            places, fds = [], []
            for n in names:
                mapping, offset = shared.holding(arrays[n].data.ptr)
                fds.append(mapping.export())
                places.append({"size": mapping.size, "offset": offset})
            del arrays, made
            release_guards()
            shared.release()
            try:
                worker.send({**header, "device": places})
                worker.send_fds(fds)
            finally:
                for fd in fds:
                    os.close(fd)
            worker.handed_over()

    for i, trial in enumerate(worker.job["trials"]):
        trial_run(i, trial)
    _fresh_pool()
    worker.clock = Clock(worker.job["device"]["l2_bytes"], queue_ahead=True)
    rounds = CudaRounds(task, runner, worker.clock, int(worker.job.get("poison", 0x7FC00001)))
    worker.serve(rounds, post=trial_run)


def cuda_run_once(worker: Worker, cubin: bytes | None) -> None:
    """For compute-sanitizer to watch: the launches the controller drew (`launches`: sizes,
    seed and poison each, sanitize.watched), each made as a trial's is (its inputs from that
    seed, its outputs poisoned with that poison, every array where a trial puts it:
    _own_allocation). For Nsight Compute: one launch at the bench size. No channel, the job
    comes as a file."""
    from .runners import release_guards
    from .spec import LaunchSpec

    cand = worker.job["candidate"]
    launch = LaunchSpec.model_validate(cand["launch"]) if cand.get("launch") else None
    watched = worker.job.get("launches")
    if watched:
        import cupy

        cupy.cuda.set_allocator(_own_allocation)
    runner = _runner_class()(worker.task, launch, worker.scratch, "candidate", cubin=cubin)
    for one in watched or [{"sizes": worker.task.bench, "seed": 1, "poison": 0}]:
        sizes = one["sizes"]
        release_guards()
        arrays = {**runner.inputs(sizes, int(one["seed"])), **runner.outputs(sizes, one["poison"])}
        runner.launch(arrays, sizes)
        worker.sync()
        del arrays


# Where a trial's array starts in its buffer: past its leading guard band (runners.GUARD_BYTES,
# which the sanitizer's child sets to 0 so that no band hides a stray access from memcheck).
TRIAL_LEAD_BYTES = 256


def _own_allocation(nbytes: int) -> Any:
    """Memory for one array under compute-sanitizer: an allocation of its own that ends where
    the array ends (memcheck sees the first byte past it), the array TRIAL_LEAD_BYTES into it,
    where a trial's guard band puts it in a block of the pool: its address says nothing a
    trial's would not. The bytes before it are never written: initcheck sees a read there."""
    import cupy

    memory = cupy.cuda.Memory(nbytes + TRIAL_LEAD_BYTES)
    return cupy.cuda.MemoryPointer(memory, TRIAL_LEAD_BYTES)


def sanitize(worker: Worker, cubin: bytes | None) -> None:
    """Each sanitizer tool over a one-shot child in this worker's own confinement; the raw
    output goes to the controller, which alone reads it (sanitize.py)."""
    import subprocess

    from . import sanitize as report

    (worker.scratch / "once.json").write_text(json.dumps({**worker.job, "role": "once"}))
    if cubin:
        (worker.scratch / "once.cubin").write_bytes(cubin)
    child = [sys.executable, "-m", "kernelwright.tools.worker", "--job", "once.json", "--plain"]
    # Every array its own allocation, so memcheck knows where each one ends: no pools.
    env = {**os.environ, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    out: dict[str, Any] = {}
    for tool in worker.job["tools"]:
        cmd = [worker.job["sanitizer"], "--tool", tool, "--print-limit", "10"]
        cmd += ["--error-exitcode", str(report.ERROR_EXIT)]
        if tool == "racecheck":  # every hazard, not only those it is sure corrupt data
            cmd += ["--racecheck-detect-level", "info"]
        cmd += child
        try:
            proc = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=float(worker.job.get("timeout_s", 600)),
                cwd=worker.scratch,
                env=env,
            )
            # The sanitizer's report is its stdout; the program's own output (its prints, a
            # kernel's printf: the child points its stdout at its stderr) is never read as
            # the report. Every summary line of the whole report, however long it grew.
            out[tool] = {
                "report": proc.stdout[-200_000:],
                "summaries": report.summary_lines(proc.stdout),
                "program": proc.stderr[-4_000:],
                "code": proc.returncode,
            }
        except subprocess.TimeoutExpired:
            out[tool] = f"timed out after {worker.job.get('timeout_s', 600)} s"
    worker.send({"type": "sanitized", "tools": out})


def reference_dtype(dtype: str, elements: int) -> str:
    """What a float64 reference's outputs travel as: float64, but in the output's own dtype
    when large (a float32 expectation of 64M elements is 256 MB instead of 512)."""
    return "float64" if dtype.startswith("float") and elements <= (4 << 20) else dtype


def _fresh_pool() -> None:
    """Before timing, in both workers alike: every cached block freed, so both allocate their
    rounds' arrays afresh in the same order, not carved out of the trials' blocks (the
    reference's held float64 ones). Each round's arrays then sit at offsets drawn from its seed
    (runners.SPREAD_BYTES)."""
    import cupy

    from .runners import release_guards

    release_guards()
    cupy.get_default_memory_pool().free_all_blocks()
