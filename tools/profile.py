"""Profile a candidate's kernel once under Nsight Compute, inside the sandbox."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable

from . import ncu
from .cpp import CppTask
from .cpp_candidates import CppKernel
from .results import ProfileResult
from .sandbox import Sandbox, WorkerFailure
from .spec import CudaCandidate, CudaTask
from .task import Candidate, Task


def profile(
    task: Task,
    candidate: Candidate,
    backend: str = "nvrtc",
    timeout_s: float = 180.0,
) -> ProfileResult:
    """Nsight Compute metrics of one launch at the bench size, or why there are none."""
    profiler = _PROFILERS.get(task.kind) if candidate.kind == task.kind else None
    if profiler is None:
        return ProfileResult(
            available=False,
            reason="profiling unavailable: Nsight Compute profiles CUDA kernels; this "
            f"candidate ({candidate.kind}: PyTorch or C++ code) is timed only",
        )
    return profiler(task, candidate, backend, timeout_s)


def _profile_kernel(
    task: CudaTask, candidate: CudaCandidate, backend: str, timeout_s: float
) -> ProfileResult:
    """Nsight Compute metrics of one launch of a CUDA task's candidate at the bench size."""
    if shutil.which("ncu") is None:
        return ProfileResult(
            available=False,
            reason="profiling unavailable: ncu not found on PATH (install Nsight Compute)",
        )
    from .compile import compile_in_sandbox
    from .nvml import device_info

    flags = candidate.compile_flags(backend)
    compiled, cubin = compile_in_sandbox(
        candidate.source, task.entry, device_info().arch, backend, flags=flags
    )
    if cubin is None:
        return ProfileResult(
            available=False, reason=f"profiling unavailable: {compiled.first_error}"
        )
    box = Sandbox("profile", channel=False)
    log, job_file = box.scratch / "ncu.csv", box.scratch / "job.json"
    job_file.with_suffix(".cubin").write_bytes(cubin)  # built where only CUDA headers exist
    # ncu talks to its library inside the worker over local sockets: no private network here.
    job = {
        "role": "once",
        "task": task.model_dump(),
        "trials": [],
        "backend": backend,
        "limits": {"no_network": 0},
        "candidate": {
            "source": candidate.source,
            "launch": candidate.worker_job(task.path).get("launch"),  # its knobs in place
        },
    }
    job_file.write_text(json.dumps(job))
    box.command = [
        *ncu.command(task.entry, str(log)),
        sys.executable,
        "-m",
        "kernelwright.tools.worker",
        "--job",
        str(job_file),
    ]
    with box:
        try:
            box.wait(timeout_s, "profiling")
            failure = None
        except WorkerFailure as exc:
            failure = exc
        text = log.read_text(errors="replace") if log.is_file() else ""
        parsed = ncu.parse(text + "\n" + box.log_tail(20))
        worker_log = box.log_tail(2)
    if failure is not None and not parsed.available:
        return ProfileResult(available=False, reason=f"profiling unavailable: {failure.reason}")
    if not parsed.available and "error code" in parsed.reason and worker_log:
        return parsed.model_copy(update={"reason": f"{parsed.reason} ({worker_log})"})
    return parsed


def _profile_port(
    task: CppTask, candidate: CppKernel, backend: str, timeout_s: float
) -> ProfileResult:
    """A C++ task's kernel, as its CUDA view runs it."""
    return _profile_kernel(task.worker_task(), candidate, backend, timeout_s)


# The profiler for each task kind whose candidates it can profile: a kind not here is timed only.
_PROFILERS: dict[str, Callable[..., ProfileResult]] = {
    "cuda": _profile_kernel,
    "cpp": _profile_port,
}
