"""Profile a candidate's kernel once under Nsight Compute, inside the sandbox."""

from __future__ import annotations

import shutil
import subprocess
import sys

from . import ncu
from .kernelbench import KernelBenchCandidate, KernelBenchTask
from .results import ProfileResult
from .sandbox import Sandbox, WorkerFailure
from .spec import CudaCandidate, CudaTask


def profile(task: CudaTask | KernelBenchTask, candidate: CudaCandidate | KernelBenchCandidate,
            backend: str = "nvrtc", timeout_s: float = 180.0) -> ProfileResult:
    """Nsight Compute metrics of one launch at the bench size, or why there are none."""
    if isinstance(task, KernelBenchTask) or isinstance(candidate, KernelBenchCandidate):
        return ProfileResult(available=False, reason="profiling unavailable: Nsight Compute "
                             "profiling covers CUDA tasks; KernelBench problems are timed only")
    if shutil.which("ncu") is None:
        return ProfileResult(available=False, reason="profiling unavailable: ncu not found on PATH "
                             "(install Nsight Compute)")
    box = Sandbox("profile")
    log = box.scratch / "ncu.csv"
    box.command = [*ncu.command(task.entry, str(log)), sys.executable, "-m",
                   "kernelwright.tools.worker"]
    job = {"role": "profile", "task": task.model_dump(), "trials": [], "backend": backend,
           "candidate": {"source": candidate.source,
                         "launch": candidate.launch.model_dump() if candidate.launch else None}}
    with box:
        try:
            box.send(job)
            box.receive(timeout_s, "starting the profiler")
            header, _ = box.receive(timeout_s, "compiling")
            if not header["result"]["ok"]:
                return ProfileResult(available=False, reason="profiling unavailable: the kernel "
                                     "does not compile")
            box.receive(timeout_s, "profiling")
            if box.proc is not None:
                box.proc.wait(timeout=timeout_s)
            failure = None
        except (WorkerFailure, subprocess.TimeoutExpired) as exc:
            failure = exc
        text = log.read_text(errors="replace") if log.is_file() else ""
        parsed = ncu.parse(text + "\n" + box.log_tail(20))
    if failure is not None and parsed.available is False and parsed.reason.endswith("no metrics"):
        return ProfileResult(available=False, reason=f"profiling unavailable: {failure}")
    return parsed
