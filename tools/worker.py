"""The sandboxed worker: `python -m kernelwright.tools.worker`, one process per candidate.

It reads one job from the controller, compiles, runs the trials and the timing rounds, and sends
raw outputs and raw samples back. It never sees expected outputs and never decides a verdict:
the controller does both. Anything the kernel or its Python glue prints lands in the worker's
log, not on the result channel.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from .confine import confine
from .protocol import FrameReader, write_message


def _harden(limits: dict[str, int], notes: list[str]) -> list[str]:
    """Limits the worker puts on itself before any task or candidate code is loaded."""
    notes = list(notes)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    fsize = limits.get("file_bytes", 1 << 30)
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    nofile = limits.get("open_files", 1024)
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    if limits.get("no_network", 1) and "network: isolated" not in notes:
        try:  # a private network namespace with no interfaces: works as root or with userns
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.unshare(0x40000000) == 0:  # CLONE_NEWNET
                notes.append("network: isolated")
        except OSError:
            pass
    return notes


def _raw(array: Any) -> memoryview:
    """An array's bytes without a copy, as one flat frame."""
    import numpy as np

    return memoryview(np.ascontiguousarray(array)).cast("B")  # type: ignore[arg-type]


def _device() -> dict[str, Any]:
    import cupy

    dev = cupy.cuda.Device()
    attrs = dev.attributes
    return {
        "type": "device",
        "pci_bus_id": dev.pci_bus_id,
        "cc": dev.compute_capability,
        "sm_count": attrs["MultiProcessorCount"],
        "l2_bytes": attrs["L2CacheSize"],
    }


def _warm() -> None:
    """A spare worker, before its job: import what every check needs and run the harness's own
    small kernels once, so the imports and CuPy's module loads (lazy, a few hundred ms in all)
    happen while it waits and not inside a check. Runs before any candidate code is loaded."""
    import cupy
    import numpy as np

    from . import kernelbench, rounds, runners, spec, timing  # noqa: F401 - imported to warm

    arg = spec.ArgSpec(name="x", dtype="float32", shape=("4",), role="in")
    x = runners.generate(arg, (4,), 1)
    runners.checksum(x)
    runners.broken_guards({"x": x})
    rounds.perturb_cupy([x], 1, 0)
    tally = cupy.zeros(3, dtype=cupy.uint64)
    rounds.count_poisoned(x.view(cupy.uint32), np.uint32(0), tally)
    rounds.count_mismatched(x, x, np.float64(0), np.float64(0), tally)
    cupy.cuda.runtime.deviceSynchronize()
    runners.release_guards()


def _task(job: dict[str, Any]) -> Any:
    from .kernelbench import KernelBenchTask
    from .spec import CudaTask

    raw = job["task"]
    return (
        CudaTask.model_validate(raw)
        if raw["kind"] == "cuda"
        else KernelBenchTask.model_validate(raw)
    )


class Worker:
    def __init__(
        self, reader: FrameReader | None, out_fd: int, job: dict[str, Any], scratch: Path
    ) -> None:
        self.reader, self.out_fd, self.job, self.scratch = reader, out_fd, job, scratch
        self.task = _task(job)
        self.clock: Any = None  # timing primitives, when bound before a candidate loads

    def send(self, header: dict[str, Any], arrays: list[Any] = ()) -> None:  # type: ignore[assignment]
        write_message(self.out_fd, header, arrays)

    def sync(self) -> None:
        import cupy

        cupy.cuda.runtime.deviceSynchronize()

    # --- CUDA tasks -------------------------------------------------------------------------
    def cuda_reference(self) -> None:
        import cupy

        from .runners import CudaRunner, checksum, load_module, release_guards

        task = self.task
        arch = "sm_" + self.job["device"]["cc"]
        runner = CudaRunner(
            task, task.source, None, self.scratch, self.job["backend"], arch, "reference"
        )
        if not runner.compile_result.ok:
            self.send(
                {
                    "type": "error",
                    "error": "the task's own kernel does not compile: "
                    + runner.compile_result.first_error,
                }
            )
            return
        ref_fn = None
        if task.reference_python:
            file, func = task.reference_python.rsplit(":", 1)
            ref_fn = getattr(load_module(file, "kw_reference"), func)
        for i, trial in enumerate(self.job["trials"]):
            sizes, seed = trial["sizes"], trial["seed"]
            release_guards()
            ins = runner.inputs(sizes, seed)
            sums = {a.name: checksum(ins[a.name]) for a in task.args if a.role == "in"}
            expected, dtypes = [], []
            if ref_fn is not None:
                kwargs: dict[str, Any] = {}
                for a in task.args:
                    if a.role == "scalar":
                        from . import expr

                        kwargs[a.name] = expr.evaluate(a.value, sizes)
                    else:
                        x = ins.get(a.name)
                        if x is None:
                            continue
                        kwargs[a.name] = x.astype(cupy.float64) if x.dtype.kind == "f" else x.copy()
                result = ref_fn(cupy, **kwargs)
                for a in task.args:
                    if a.role in ("out", "inout"):
                        want = task.shape(a, sizes)
                        big = math.prod(want) > (4 << 20)  # large: sent in the output's own dtype
                        dt = cupy.float64 if a.dtype.startswith("float") and not big else a.dtype
                        arr = cupy.ascontiguousarray(cupy.asarray(result[a.name]), dtype=dt)
                        if tuple(arr.shape) != want:
                            raise ValueError(
                                f"reference() returned {a.name} with shape "
                                f"{tuple(arr.shape)}, expected {want}"
                            )
                        expected.append(_raw(arr.get()))
                        dtypes.append(str(arr.dtype))
            else:
                arrays = {**ins, **runner.outputs(sizes, 0x7FC00001)}
                runner.launch(arrays, sizes)
                self.sync()
                for a in task.args:
                    if a.role in ("out", "inout"):
                        expected.append(_raw(arrays[a.name].get()))
                        dtypes.append(a.dtype)
            self.send(
                {"type": "expected", "trial": i, "checksums": sums, "dtypes": dtypes}, expected
            )

    def cuda_candidate(self) -> None:
        from .runners import CudaRunner, broken_guards, checksum, release_guards
        from .spec import LaunchSpec

        task = self.task
        arch = "sm_" + self.job["device"]["cc"]
        cand = self.job["candidate"]
        launch = LaunchSpec.model_validate(cand["launch"]) if cand.get("launch") else None
        runner = CudaRunner(
            task, cand["source"], launch, self.scratch, self.job["backend"], arch, "candidate"
        )
        self.send({"type": "compiled", "result": runner.compile_result.model_dump()})
        if not runner.compile_result.ok:
            return

        def trial_run(label: Any, trial: dict[str, Any]) -> None:
            for run, poison in enumerate(trial["poisons"]):
                sizes = trial["sizes"]
                release_guards()
                ins = runner.inputs(sizes, trial["seed"])
                arrays = {**ins, **runner.outputs(sizes, poison)}
                runner.launch(arrays, sizes)
                self.sync()
                sums = {a.name: checksum(ins[a.name]) for a in task.args if a.role == "in"}
                outs = [_raw(arrays[a.name].get()) for a in task.args if a.role in ("out", "inout")]
                header = {"type": "outputs", "trial": label, "run": run, "checksums": sums}
                self.send({**header, "guards": broken_guards(arrays)}, outs)

        for i, trial in enumerate(self.job["trials"]):
            trial_run(i, trial)
        # The reference kernel, for the timing rounds: compiled while the controller still
        # gathers the reference's outputs, so the timing does not wait for it.
        ref = CudaRunner(
            task, task.source, None, self.scratch, self.job["backend"], arch, "reference"
        )
        assert self.reader is not None
        command, _ = self.reader.read_message(time.monotonic() + 3600)
        if command.get("cmd") != "time":
            return
        self.cuda_timing(ref, runner, command)
        trial_run("post", command["post_trial"])

    def cuda_timing(self, ref: Any, runner: Any, command: dict[str, Any]) -> None:
        """Reference and candidate alternated in rounds on the same input sets, each writing its
        own outputs; the rounds' hooks poison and check the candidate's (rounds.py)."""
        import random
        import secrets

        from .rounds import CudaTimedChecks
        from .runners import release_guards

        task, bench = self.task, self.task.bench
        poison = int(command.get("poison", 0x7FC00001))
        pristine = [ref.inputs(bench, s) for s in command["seeds"]]
        inouts = [a.name for a in task.args if a.role == "inout"]
        sides = {
            side: [
                {**p, **{n: p[n].copy() for n in inouts}, **ref.outputs(bench, poison)}
                for p in pristine
            ]
            for side in ("ref", "cand")
        }
        checks = CudaTimedChecks(task, pristine, sides, poison, command.get("perturb_seed", 0))
        calls = {
            "ref": [ref.bind(arrays, bench) for arrays in sides["ref"]],
            "cand": [runner.bind(arrays, bench) for arrays in sides["cand"]],
        }
        self.timing(
            {name: (lambda k, c=c: c[k]()) for name, c in calls.items()},
            len(pristine),
            hooks=checks,
            shuffle=random.Random(secrets.randbits(64)),  # unpredictable to the kernel
            extra=lambda: ({"timed": checks.report()}, []),
            queue_ahead=True,
        )
        calls.clear()
        sides.clear()
        pristine.clear()
        release_guards()

    def cuda_profile(self) -> None:
        """One launch at the bench size, for Nsight Compute to profile."""
        from .runners import CudaRunner
        from .spec import LaunchSpec

        cand = self.job["candidate"]
        launch = LaunchSpec.model_validate(cand["launch"]) if cand.get("launch") else None
        runner = CudaRunner(
            self.task,
            cand["source"],
            launch,
            self.scratch,
            self.job["backend"],
            "sm_" + self.job["device"]["cc"],
            "candidate",
        )
        self.send({"type": "compiled", "result": runner.compile_result.model_dump()})
        if runner.compile_result.ok:
            sizes = self.task.bench
            arrays = {**runner.inputs(sizes, 1), **runner.outputs(sizes, 0)}
            runner.launch(arrays, sizes)
            self.sync()

    def timing(
        self,
        timed: dict[str, Any],
        n_sets: int,
        rounds: int | None = None,
        hooks: Any = None,
        shuffle: Any = None,
        extra: Any = None,
        queue_ahead: bool = False,
        budget_scale: float = 1.0,
        max_rounds: int = 300,
        cap_s: float | None = None,
    ) -> None:
        """Run the timing rounds and send the raw samples, with what `extra()` adds."""
        from .timing import Clock, measure

        clock = self.clock or Clock(self.job["device"]["l2_bytes"], queue_ahead)
        t0 = time.perf_counter()
        raw = measure(
            clock,
            timed,
            n_sets,
            budget_s=self.job.get("timing_budget_s", 0.6) * budget_scale,
            max_rounds=max_rounds,
            cap_s=cap_s,
            rounds=rounds,
            hooks=hooks,
            shuffle=shuffle,
        )
        clock.sync()
        header = {
            "type": "timing",
            **raw,
            "wall_ms": (time.perf_counter() - t0) * 1e3,
            "input_sets": n_sets,
        }
        more, payload = extra() if extra else ({}, [])
        tampered = [*header.pop("tampered", []), *more.pop("tampered", [])]
        self.send({**header, **more, "tampered": tampered}, payload)


def _writable() -> list[str]:
    """The scratch directory (the working directory) and each `--writable DIR` given."""
    args = sys.argv[1:]
    return [os.getcwd()] + [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--writable"]


def main() -> None:
    profiled = len(sys.argv) == 3 and sys.argv[1] == "--job"  # under a profiler: no channel
    # First, while this process has one thread and no CUDA context (profiling needs the
    # profiler's own files and sockets, and runs device code only: left as it is).
    confined = [] if profiled else confine(_writable())
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # kernel printf and stray prints go to the log, never to the result channel
    compile_only = "--compile-only" in sys.argv  # the loop's compile step: no GPU needed
    try:
        device = {} if compile_only else _device()  # a spare worker waits with CUDA up
        if device and "--writable" in sys.argv:  # harness kernels cached: a spare, warmed up
            _warm()
        if profiled:
            job = json.loads(Path(sys.argv[2]).read_text())
            reader, proto_out = None, null
        else:
            reader = FrameReader(proto_in)
            job, _ = reader.read_message(time.monotonic() + 3600)
        notes = _harden(job.get("limits", {}), confined)
        if compile_only:
            from .compile import compile_kernel

            result, _ = compile_kernel(
                job["backend"], job["source"], job["entry"], job["arch"], "candidate.cu"
            )
            write_message(proto_out, {"type": "compiled", "result": result.model_dump()})
            write_message(proto_out, {"type": "done"})
            return
        write_message(proto_out, {**device, "notes": notes})
        job["device"] = {**device, **job.get("device", {})}
        worker = Worker(reader, proto_out, job, Path.cwd())
        kind, role = worker.task.kind, job["role"]
        if kind == "cuda" and role == "profile":
            worker.cuda_profile()
        elif kind == "cuda":
            worker.cuda_reference() if role == "reference" else worker.cuda_candidate()
        else:
            from .torch_roles import torch_candidate, torch_reference

            torch_reference(worker) if role == "reference" else torch_candidate(worker)
        write_message(proto_out, {"type": "done"})
    except BaseException as exc:
        text = "".join(traceback.format_exception_only(exc)).strip()
        traceback.print_exc()
        with contextlib.suppress(OSError):
            write_message(proto_out, {"type": "error", "error": text[-2000:]})
    finally:
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
