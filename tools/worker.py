"""The sandboxed worker: `python -m kernelwright.tools.worker`, one process per role and check.

It reads one job from the controller and answers as protocol.py writes down: expected outputs
(the reference's worker), outputs of the candidate's trials, timing rounds (both), a compiled
cubin (the compile worker). It never sees what another worker computed and never decides a
verdict: the controller does. Anything the kernel or its Python glue prints lands in the
worker's log, not on the result channel.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .confine import confine
from .protocol import FrameReader, process_age_ms, write_message
from .serving import Worker

PR_SET_DUMPABLE = 4


def _undumpable() -> None:
    """This process's /proc files (its fds, its memory) out of reach of every process of the
    same user, the candidate's code it starts included: the sanitizer's watched child runs a
    KernelBench candidate's Python beside this worker, in its PID namespace, and reopening
    /proc/1/fd/N wrote a forged report into this worker's result pipe (a red-team review).
    Set where no candidate code has run yet; ptrace-style access then needs CAP_SYS_PTRACE."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


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


class _Steps:
    """Where this worker's start went, ms a step (protocol.START_STEPS), from the process's
    own start (its interpreter's, an exec by steady_layout included) to its first message."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self.mark = time.monotonic()
        if (age := process_age_ms()) is not None:
            self.ms["interpreter"] = age

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.ms[name] = round(self.ms.get(name, 0.0) + (now - self.mark) * 1e3, 1)
        self.mark = now


def _cuda_early() -> threading.Thread:
    """CUDA's driver up and the GPU's primary context made in a thread, beside the imports,
    for a worker started for the check under way (`--gpu-now`; never a spare, which waits to
    be let on). ctypes lets go of the GIL in each call, so the imports go on meanwhile; the
    runtime (CuPy's, PyTorch's) takes this context when it starts. Any failure is left for
    `_device` to meet and report as it would without this."""

    def up() -> None:
        with contextlib.suppress(OSError, AttributeError):
            cuda = ctypes.CDLL("libcuda.so.1")
            device, context = ctypes.c_int(), ctypes.c_void_p()
            if cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(device), 0) == 0:
                cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)

    thread = threading.Thread(target=up, name="kw-cuda-early", daemon=True)
    thread.start()
    return thread


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
        # device code can read and write pageable host memory (HMM, or Grace Hopper)
        "pageable": bool(attrs.get("PageableMemoryAccess", 0)),
    }


def cupy_device() -> int:
    import cupy

    return int(cupy.cuda.Device().id)


def _seed_cache(args: list[str]) -> None:
    """Copy the harness's compiled kernels from the shared cache (read-only here) into this
    worker's own: its candidate may write its own cache, never the shared one."""
    import shutil

    if "--seed-cache" not in args:
        return
    source = Path(args[args.index("--seed-cache") + 1])
    target = Path(os.environ.get("CUPY_CACHE_DIR", "cupy"))
    target.mkdir(parents=True, exist_ok=True)
    for f in source.glob("*") if source.is_dir() else ():
        if f.is_file() and f.stat().st_size < (64 << 20):
            shutil.copyfile(f, target / f.name)


def _imports(torch: bool, steps: Callable[[str], None]) -> None:
    """What every check needs, imported while a spare waits: host work only. A spare touches
    no GPU until the controller says so (a "go" or its job), never while another check's
    rounds are timed. `steps` hears each part's end: "imports" (CuPy and the harness),
    "torch" (PyTorch and its role), "meta warm-up" (below), so a report says which took the
    start's seconds."""
    import cupy  # noqa: F401

    from . import kernelbench, kernels, rounds, runners, sketch, spec, timing  # noqa: F401

    steps("imports")
    if torch:
        import torch as torch_module

        from . import torch_roles  # noqa: F401

        steps("torch")

        # PyTorch loads its meta device's kernels on their first use, which took 6.2 s on the
        # lent H100's host: the reference sizes its trials on them (torch_roles.sized) before
        # its first trial, so they load here, while a spare waits (host work, no GPU)
        with torch_module.device("meta"), torch_module.no_grad():
            layer = torch_module.nn.Linear(3, 4)
            layer(torch_module.rand(2, 3)).relu().sum()
        steps("meta warm-up")


def _warm(torch: bool) -> None:
    """CUDA up and the harness's own kernels run once, so module loads happen before the job,
    not inside a check. Runs before any candidate code is loaded."""
    import cupy

    from . import kernels, runners, sketch, spec

    arg = spec.ArgSpec(name="x", dtype="float32", shape=("4",), role="in")
    x = runners.generate(arg, (4,), 1)
    runners.checksum(x)
    runners.broken_guards({"x": x})
    sketch.sketch(x.data.ptr, x.size, "float32", (1, 2))
    kernels.function("kw_l2_flush")
    cupy.cuda.runtime.deviceSynchronize()
    runners.release_guards()
    if torch:
        import torch as torch_module

        torch_module.ones(1, device="cuda").sum().item()


def _writable() -> list[str]:
    """The scratch directory (the working directory) and each `--writable DIR` given."""
    args = sys.argv[1:]
    return [os.getcwd()] + [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--writable"]


def _readable() -> list[str]:
    """Shown read-only: a shared cache to copy from (`--seed-cache`), a KernelBench clone's
    src/ whose timing a `--kb-time` worker runs (`--readable`)."""
    args = sys.argv[1:]
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("--seed-cache", "--readable")]


def _compile_worker(proto_out: int, reader: FrameReader, notes: list[str]) -> None:
    """Compile one candidate, where only the CUDA headers can be opened (see main)."""
    from .compile import compile_kernel

    job, _ = reader.read_message(time.monotonic() + 3600)
    narrowed = any(n.startswith("file system: narrowed") for n in notes)
    result, cubin = compile_kernel(
        job["backend"],
        job["source"],
        job["entry"],
        job["arch"],
        "candidate.cu",
        screen=not narrowed,
        flags=tuple(str(f) for f in job.get("flags", ())),
    )
    header = {"type": "compiled", "result": result.model_dump(), "notes": notes}
    write_message(proto_out, header, [cubin] if cubin else [])


def _compile_view() -> tuple[Any, list[str] | None]:
    """What the compile worker loads before its view narrows, and what stays visible after:
    the CUDA headers alone, for NVRTC; nvcc needs the host's compiler (compile.py checks what
    it opened instead)."""
    backend = sys.argv[sys.argv.index("--compile-only") + 1]

    def prepare() -> None:
        from .compile import compile_kernel, cuda_include_dir

        compile_kernel(
            backend, 'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }', "k", "sm_90"
        )
        cuda_include_dir()

    if backend != "nvrtc":
        return prepare, None
    from .compile import cuda_include_dir

    include = cuda_include_dir()
    return prepare, [include] if include else []


ADDR_NO_RANDOMIZE = 0x0040000  # linux/personality.h


def steady_layout() -> None:
    """Go on as a process without address randomization, its hash seed fixed as well (the
    sandbox's environment): every worker starts alike. A forward timed with its host dispatch
    settled at a level of its own in each process, and three processes a side did not average
    it away: on an H100 (session 13, 14 checks each, side by side) KernelBench's reference read
    against itself with an SD of 3.1%, 5 of 14 outside 2%, and with this 0.8%, none outside.
    The process starts itself again (exec) with the personality set, once; where the kernel or
    a container's seccomp refuses it, it goes on as it is."""
    libc = ctypes.CDLL(None, use_errno=True)
    current = libc.personality(0xFFFFFFFF)
    if current == -1 or current & ADDR_NO_RANDOMIZE:
        return
    if libc.personality(current | ADDR_NO_RANDOMIZE) == -1:
        return
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


def main() -> None:
    steps = _Steps()
    args = sys.argv
    once = len(args) >= 3 and args[1] == "--job"  # under ncu or compute-sanitizer: no channel
    compile_only = "--compile-only" in args
    build_only = "--build-extension" in args  # extbuild.py: torch builds one extension
    kb_time = "--kb-time" in args  # kbtime.py: KernelBench's own timing, from a user's clone
    apart = once or compile_only or build_only or kb_time  # none of a check's timed workers
    if not apart:  # the workers that time
        steady_layout()
    if "--cpus" in args:
        with contextlib.suppress(OSError, ValueError):
            os.sched_setaffinity(0, {int(c) for c in args[args.index("--cpus") + 1].split(",")})
    null = os.open(os.devnull, os.O_RDWR)  # before the view: the compile worker's has no /dev
    # First, while this process has one thread and no CUDA context (a watched run needs the
    # profiler's own files and sockets, and runs device code the verifier already passed).
    if once:
        confined: list[str] = []
    elif compile_only:
        prepare, narrow = _compile_view()
        confined = confine(_writable(), prepare=prepare, narrow=narrow)
    else:
        confined = confine(_writable(), readable=_readable())
    steps("confine")
    early = None
    if "--gpu-now" in args and not apart:
        early = _cuda_early()  # after confine: it ran with one thread and no CUDA context
    proto_in, proto_out = os.dup(0), os.dup(1)
    os.dup2(null, 0)
    os.dup2(2, 1)  # kernel printf and stray prints go to the log, never to the result channel
    try:
        if compile_only:
            _compile_worker(proto_out, FrameReader(proto_in), confined)
            write_message(proto_out, {"type": "done"})
            return
        if kb_time:  # runs a candidate's kernel: limited as a check's workers are
            from .kbtime import worker_main

            _harden({}, confined)
            worker_main(FrameReader(proto_in), proto_out)
            write_message(proto_out, {"type": "done"})
            return
        if build_only:
            from .extbuild import build_worker

            build_worker(FrameReader(proto_in), proto_out)
            write_message(proto_out, {"type": "done"})
            return
        _seed_cache(args)
        if "--plain" in args:  # under compute-sanitizer: no guard bands, no memory pool
            import cupy

            from . import runners

            cupy.cuda.set_allocator(None)
            runners.GUARD_BYTES = 0
        arrays: list[Any] = []
        if once:  # under a profiler, the harness's own kernels would be profiled too
            # no channel: the streams it came with are the watcher's own (compute-sanitizer
            # writes its report to its stdout, which this process inherited as its own), and
            # nothing the run does may write into that report
            os.close(proto_in)
            os.close(proto_out)
            device = _device()
            job = json.loads(Path(args[2]).read_text())
            reader, proto_out = None, null
            cubin_file = Path(args[2]).with_suffix(".cubin")
            arrays = [cubin_file.read_bytes()] if cubin_file.is_file() else []
        else:
            torch = "--warm" in args
            _imports(torch, steps)
            reader = FrameReader(proto_in)
            job, arrays = reader.read_message(time.monotonic() + 3600)
            steps("job wait")
            if early is not None:
                early.join()
            device = _device()
            steps("cuda")
            _warm(torch)
            steps("warm-up")
            if job.get("cmd") == "go":  # a spare, let onto the GPU: warm now, then wait
                write_message(proto_out, {"type": "warm"})
                job, arrays = reader.read_message(time.monotonic() + 3600)
                steps("spare wait")
        if "--fds" in args and job.get("role") in ("reference", "candidate"):
            from . import vmm  # whether large outputs can be compared where they are

            device["vmm"] = vmm.supported(cupy_device())
            steps("vmm")
        notes = _harden(job.get("limits", {}), confined)
        write_message(proto_out, {**device, "notes": notes, "start_ms": steps.ms})
        job["device"] = {**device, **job.get("device", {})}
        worker = Worker(reader, proto_out, job, Path.cwd())
        if "--fds" in args:  # the socket that carries memory handles (vmm.py)
            worker.fd_channel = int(args[args.index("--fds") + 1])
        from . import cuda_roles

        kind, role = worker.task.kind, job["role"]
        cubin = bytes(arrays[0]) if arrays else None
        if role == "sanitize":
            _undumpable()  # before the watched child runs a candidate's code beside it
            cuda_roles.sanitize(worker, cubin)
        elif kind == "cuda" and role == "once":
            cuda_roles.cuda_run_once(worker, cubin)
        elif role == "once":
            from .torch_roles import torch_once

            torch_once(worker)
        elif kind == "cuda":
            if role == "reference":  # a cpp task's port comes built, as a candidate's does
                cuda_roles.cuda_reference(worker, cubin)
            else:
                cuda_roles.cuda_candidate(worker, cubin)
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
