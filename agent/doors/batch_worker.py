"""One batch task on a Dask worker pinned to one GPU (batch_dask.py sends it here).

The worker runs the task's loop as the plain batch does (batch.run_one) and returns an
`Outcome`, a few picklable fields; it never writes the batch's state or report, which only the
coordinator writes. While the loop runs, its progress goes back to the coordinator as Dask
events, and a loop the coordinator no longer wants (Ctrl-C, a cancel) stops at its next step.

A check that crashes, times out or errs may be the candidate's fault or the GPU's: the
`HealthChecked` backend then asks NVML about the GPU and runs a trivial kernel on it in a fresh
process. A GPU that fails either is lost: the check raises `GpuLost` before anything records
the crash, so no candidate is marked crashed (nor remembered as such) for the GPU's fault, and
the worker turns every later task away until the coordinator retires it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

from kernelwright.agent.formats import first_line
from kernelwright.agent.llm import ChatModel
from kernelwright.agent.settings import Settings, load
from kernelwright.tools.backend import GpuBackend
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.results import Attempt, CheckReport, ProfileResult, SanitizeResult
from kernelwright.tools.task import Candidate, Task

from .batch import run_one
from .batch_records import BatchState, Status, TaskState

# Verdicts after which the GPU itself may be at fault, not (only) the candidate.
SUSPECT = ("crashed", "timeout", "error")
HEALTH_TIMEOUT_S = 120.0
TRIVIAL_KERNEL = """
import cupy
k = cupy.RawKernel('extern "C" __global__ void k(int* x) { x[threadIdx.x] = threadIdx.x; }', "k")
x = cupy.zeros(32, dtype=cupy.int32)
k((1,), (32,), (x,))
cupy.cuda.Device().synchronize()
assert x.get().tolist() == list(range(32)), "wrong result"
"""


class GpuLost(Exception):
    """This worker's GPU no longer works: the task must run on another."""


class Cancelled(Exception):
    """The coordinator no longer wants this task (it was interrupted or cancelled it)."""


@dataclass(frozen=True)
class WorkerParts:
    """What a worker builds for a task instead of the real parts (tests: a scripted model, a
    replayed GPU); picklable. None: the real one (make_model, local_gpu, gpu_health, NVML's
    architecture of the worker's GPU)."""

    model: Callable[[Settings, TaskState], ChatModel] | None = None
    gpu: Callable[[Settings], GpuBackend] | None = None
    health: Callable[[str], str] | None = None  # the GPU's CUDA_VISIBLE_DEVICES -> why lost
    arch: str | None = None


@dataclass(frozen=True)
class Job:
    task: TaskState
    out: Path
    batch: BatchState  # its limits (budget, minutes, plateau, memory); its tasks left out
    overrides: dict[str, Any]  # the settings the batch fixes: model, compile backend
    memory_url: str | None  # the memory server the batch's workers share
    topic: str  # the coordinator's events topic
    parts: WorkerParts


@dataclass(frozen=True)
class Outcome:
    slug: str
    worker: str  # the worker's address
    gpu: str  # its GPU's label
    status: Status
    reason: str = ""
    stop_reason: str = ""
    run_dir: str = ""
    wall_s: float = 0.0
    lost: str = ""  # why the GPU is lost: the task did not run to its end and goes elsewhere


_lost = ""  # why this worker's GPU was found lost; every later task is turned away


def run_job(job: Job) -> Outcome:
    """The Dask task: one batch task's loop on this worker's GPU."""
    global _lost
    from distributed import get_worker

    worker = get_worker()
    key = str(worker.get_current_task())
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    label = gpu_label(visible)
    send = partial(_send, worker, job.topic, job.task.slug, key)
    send({"started": label, "worker": worker.address})
    task = job.task.model_copy()
    outcome = partial(Outcome, task.slug, worker.address, label)
    if _lost:
        return outcome(task.status, lost=_lost)
    with _exclusive(job.out / "runs" / task.slug):  # a lost worker's run may not have ended
        try:
            settings = _settings(job)
            model = job.parts.model(settings, task) if job.parts.model else _model(settings)
            arch = job.parts.arch or _arch(visible)
        except KernelwrightError as exc:
            return outcome("failed", first_line(str(exc)))
        gpu = job.parts.gpu(settings) if job.parts.gpu else _local_gpu(settings)
        health = partial(job.parts.health or gpu_health, visible)
        before = task.wall_s
        try:
            run_one(
                task,
                job.out,
                settings,
                job.batch,
                model=model,
                gpu=HealthChecked(gpu, health),
                arch=arch,
                progress=partial(_forward, worker, key, send),
                passthrough=(GpuLost, Cancelled),
            )
        except GpuLost as exc:
            _lost = str(exc)
            return outcome(task.status, lost=_lost)
        finally:
            gpu.close()
    return outcome(task.status, task.reason, task.stop_reason, task.run_dir, task.wall_s - before)


def sees(read: list[str], write: list[str]) -> str:
    """The first folder this host does not see (or, of `write`, cannot write to), or "" (run on
    every worker of a cluster before a batch)."""
    for path in [*read, *write]:
        if not os.path.isdir(path) or (path in write and not os.access(path, os.W_OK)):
            return path
    return ""


def _settings(job: Job) -> Settings:
    settings = load(**job.overrides)
    if job.memory_url:
        memory = settings.memory.model_copy(update={"url": job.memory_url})
        settings = settings.model_copy(update={"memory": memory})
    return settings


def _model(settings: Settings) -> ChatModel:
    from kernelwright.agent.llm import make_model

    model = make_model(settings)
    model.ensure_ready()
    return model


def _local_gpu(settings: Settings) -> GpuBackend:
    from kernelwright.agent.options import local_gpu

    return local_gpu(settings)


def _send(worker: Any, topic: str, slug: str, key: str, msg: dict[str, Any]) -> None:
    worker.log_event(topic, {"slug": slug, "key": key, **msg})


def _forward(worker: Any, key: str, send: Callable[[dict[str, Any]], None], event: Any) -> None:
    """The loop's progress callback: raise Cancelled once the coordinator has let the task go
    (a worker's thread cannot be stopped from outside), else pass the event on."""
    ts = worker.state.tasks.get(key)
    if ts is None or ts.state in ("cancelled", "released", "forgotten"):
        raise Cancelled(f"{key} was cancelled")
    msg: dict[str, Any] = {
        "node": str(event.get("node", "")),
        "message": str(event.get("message", "")),
    }
    if isinstance(event.get("best_speedup"), int | float):
        msg["best_speedup"] = float(event["best_speedup"])
    attempt = event.get("attempt")
    if isinstance(attempt, Attempt):
        msg["attempt"] = attempt.model_dump(mode="json")
    send(msg)


@contextlib.contextmanager
def _exclusive(folder: Path) -> Iterator[None]:
    """Hold the task's lock: a run of it elsewhere that its worker's death did not end (a
    worker cut off from the scheduler, a loop not yet at its next step) finishes first."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class HealthChecked:
    """A GPU backend whose suspicious checks are followed by a health check of the GPU."""

    def __init__(self, inner: GpuBackend, health: Callable[[], str]) -> None:
        self.inner, self.health = inner, health

    def check(self, task: Task, candidate: Candidate) -> CheckReport:
        try:
            report = self.inner.check(task, candidate)
        except Exception as exc:
            self._lost_after(f"{type(exc).__name__}: {exc}")
            raise
        if report.verdict in SUSPECT:
            self._lost_after(f"{report.verdict}: {report.reason}")
        return report

    def _lost_after(self, what: str) -> None:
        why = self.health()
        if why:
            raise GpuLost(f"{why} (after a check: {first_line(what)})")

    def profile(self, task: Task, candidate: Candidate) -> ProfileResult:
        return self.inner.profile(task, candidate)

    def sanitize(self, task: Task, candidate: Candidate) -> SanitizeResult:
        return self.inner.sanitize(task, candidate)

    def close(self) -> None:
        self.inner.close()


def _handle(n: Any, visible: str) -> Any:
    """NVML's handle of the GPU CUDA_VISIBLE_DEVICES names (NVML itself ignores that)."""
    first = visible.split(",")[0].strip()
    if first.startswith(("GPU-", "MIG-")):
        return n.nvmlDeviceGetHandleByUUID(first)
    return n.nvmlDeviceGetHandleByIndex(int(first) if first.isdigit() else 0)


def gpu_health(visible: str, timeout_s: float = HEALTH_TIMEOUT_S) -> str:
    """Why the GPU is lost, or "" when NVML still answers for it and a trivial kernel runs and
    gives the right result on it in a fresh process."""
    from kernelwright.tools import nvml

    try:
        with nvml.nvml() as n:
            h = _handle(n, visible)
            n.nvmlDeviceGetMemoryInfo(h)
            n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)
    except Exception as exc:  # NVMLError_GpuIsLost, NoGpuError, ...
        return f"NVML no longer reaches the GPU ({first_line(str(exc) or type(exc).__name__)})"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", TRIVIAL_KERNEL],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return f"a trivial kernel did not finish in {timeout_s:.0f} s"
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return f"a trivial kernel failed on it ({first_line(last[0])})"
    return ""


@cache
def gpu_label(visible: str) -> str:
    """The worker's GPU as the report shows it: "GPU 3 on host-a" (NVML's number, as
    nvidia-smi lists them), else what CUDA_VISIBLE_DEVICES says."""
    from kernelwright.tools import nvml

    host = socket.gethostname()
    try:
        with nvml.nvml() as n:
            return f"GPU {n.nvmlDeviceGetIndex(_handle(n, visible))} on {host}"
    except Exception:
        return f"{visible or 'GPU ?'} on {host}"


def _arch(visible: str) -> str:
    """The architecture of the worker's GPU; NoGpuError when NVML cannot tell it."""
    from kernelwright.tools import nvml
    from kernelwright.tools.errors import NoGpuError

    with nvml.nvml() as n:
        try:
            major, minor = n.nvmlDeviceGetCudaComputeCapability(_handle(n, visible))
        except (n.NVMLError, ValueError) as exc:
            raise NoGpuError(f"NVML does not know the GPU {visible!r} ({exc})") from None
    return f"sm_{major}{minor}"
