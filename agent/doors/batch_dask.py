"""A batch over several GPUs, on Dask's `distributed`: every GPU of this host (`--gpus`), or the
workers of an existing cluster (`--scheduler`).

One worker per GPU: a Nanny with one thread, pinned to its GPU by CUDA_VISIBLE_DEVICES (the
GPU's UUID) and offering one `GPU` resource, so each runs one task at a time. The coordinator
(this process) is the only writer of the batch's state and report: it hands out tasks, no more
than there are GPUs (a task waiting in a worker's queue would be blamed for that worker's
death), and turns each task's `Outcome` into the state. Dask runs a task whose worker died on
another, at most `retries` more times (the scheduler's allowed-failures), then the task fails
with the reason; a GPU found lost (batch_worker.py) has its worker retired and the task goes
to another GPU. The tasks' run directories are the plain batch's: a task run again resumes
from its checkpoints.

Workers share the memory through one Chroma server: on one host the batch starts `chroma run`
on the memory directory for its workers (one process owning the directory, where several
embedded clients would not be safe); across hosts, the server the settings' memory.url names.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import queue
import re
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelwright.agent.formats import first_line
from kernelwright.agent.settings import Settings
from kernelwright.tools.errors import KernelwrightError, NoGpuError
from kernelwright.tools.results import Attempt

from .batch import BatchProgress, attempts_done
from .batch_records import BatchState, TaskState
from .batch_report import write_task_json
from .batch_worker import Job, Outcome, WorkerParts, run_job, sees

if TYPE_CHECKING:
    from distributed import Client, Future

DEFAULT_RETRIES = 2  # a task's runs after its worker died, before it is failed
CONNECT_TIMEOUT_S = 10.0
MEMORY_SERVER_START_S = 60.0
STOP_S = 1.0  # a stopped batch's workers get this long to end their task, then are killed
POLL_S = 2.0  # how often the coordinator looks for GPUs that joined or left, when idle


class BatchSetupError(KernelwrightError):
    """The batch cannot run where it was told: no such GPU, no scheduler there, workers that
    cannot see its folders, no memory server every host reaches."""


class AllGpusLost(KernelwrightError):
    """Every GPU of the batch was lost; its unfinished tasks wait for a --resume."""


@dataclass(frozen=True)
class GpuSlot:
    index: int  # as nvidia-smi numbers it
    uuid: str  # what the worker's CUDA_VISIBLE_DEVICES is set to


@dataclass(frozen=True)
class Where:
    """Where a batch runs: `--gpus` (a spec: "0,1,3", "0-3", "all") or `--scheduler`."""

    gpus: str | None = None
    scheduler: str | None = None
    retries: int = DEFAULT_RETRIES


def parse_gpus(spec: str) -> list[int] | None:
    """The GPU numbers `--gpus` names; None for all (pure)."""
    text = spec.strip().lower()
    if text == "all":
        return None
    wanted: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m or int(m[2] or m[1]) < int(m[1]):
            raise BatchSetupError(
                f"--gpus {spec}: expected GPU numbers as nvidia-smi lists them (0,1,3 or 0-3) "
                "or all"
            )
        wanted += [i for i in range(int(m[1]), int(m[2] or m[1]) + 1) if i not in wanted]
    return wanted


def pick_gpus(spec: str, slots: list[GpuSlot]) -> list[GpuSlot]:
    """The slots `--gpus` names among this machine's (pure)."""
    wanted = parse_gpus(spec)
    if not slots:
        raise NoGpuError("no NVIDIA GPU found")
    if wanted is None:
        return slots
    by_index = {s.index: s for s in slots}
    for i in wanted:
        if i not in by_index:
            have = ", ".join(str(s.index) for s in slots)
            raise BatchSetupError(f"--gpus {spec}: no GPU {i} on this machine (it has {have})")
    return [by_index[i] for i in wanted]


def machine_gpus() -> list[GpuSlot]:
    """This machine's GPUs, from NVML; NoGpuError without one."""
    from kernelwright.tools import nvml

    with nvml.nvml() as n:
        slots = []
        for i in range(n.nvmlDeviceGetCount()):
            uid = n.nvmlDeviceGetUUID(n.nvmlDeviceGetHandleByIndex(i))
            slots.append(GpuSlot(i, uid.decode() if isinstance(uid, bytes) else str(uid)))
        return slots


@dataclass
class Place:
    """A cluster ready for the batch: the client, and the memory server its workers share."""

    client: Client
    remote: bool
    retries: int
    halt: Callable[[], None]  # stop the workers now (this host's; a cluster's stay)
    memory_url: str | None = None


def _nothing() -> None:
    pass


@contextlib.contextmanager
def open_place(
    where: Where,
    settings: Settings,
    out: Path,
    *,
    root: Path,
    memory: bool,
    slots: list[GpuSlot] | None = None,
) -> Iterator[Place]:
    """Start the workers (or reach the scheduler), check that they can run the batch and
    start the memory server; BatchSetupError (or NoGpuError) in one line when something is
    missing. `slots`: this machine's GPUs (None: NVML's)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(_quiet())
        if where.scheduler is not None:
            client = stack.enter_context(_remote(where.scheduler))
            halt: Callable[[], None] = _nothing
        else:
            chosen = pick_gpus(where.gpus or "all", machine_gpus() if slots is None else slots)
            client, halt = stack.enter_context(_local(chosen, where.retries))
        place = Place(client, where.scheduler is not None, where.retries, halt)
        deadline = time.monotonic() + CONNECT_TIMEOUT_S  # a cluster's workers may be starting
        while place.remote and not _gpu_workers(client, set()) and time.monotonic() < deadline:
            time.sleep(0.5)
        if not _gpu_workers(client, set()):
            raise BatchSetupError(
                f"the scheduler at {where.scheduler} has no worker with a GPU resource: start "
                "one per GPU with `dask worker ADDRESS --nthreads 1 --resources GPU=1` (README)"
            )
        if place.remote:
            place.retries = client.run_on_scheduler(_allowed_failures)
            _check_workers(client, root.resolve(), out.resolve())
        if memory:
            place.memory_url = stack.enter_context(_memory(settings, out, place.remote))
        yield place


def _allowed_failures(dask_scheduler: Any) -> int:
    return int(dask_scheduler.allowed_failures)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Dask's own log lines off while the batch runs: it says what matters itself."""
    log = logging.getLogger("distributed")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


@contextlib.contextmanager
def _local(slots: list[GpuSlot], retries: int) -> Iterator[tuple[Client, Callable[[], None]]]:
    """A worker per GPU on this host, and how to stop them at once (Ctrl-C)."""
    from distributed import Client, Nanny, Scheduler, SpecCluster

    workers = {
        f"gpu{s.index}": {
            "cls": Nanny,
            "options": {
                "nthreads": 1,
                "resources": {"GPU": 1},
                "env": {"CUDA_VISIBLE_DEVICES": s.uuid},
                "memory_limit": 0,  # the loop is small; the verifier limits its own workers
                "silence_logs": logging.CRITICAL,
                "dashboard": False,
            },
        }
        for s in slots
    }
    scheduler = {
        "cls": Scheduler,
        "options": {
            "host": "127.0.0.1",
            "port": 0,
            "dashboard": False,
            "dashboard_address": "127.0.0.1:0",  # its HTTP server: on no fixed port
            "allowed_failures": retries,
        },
    }
    try:
        cluster = SpecCluster(
            workers=workers, scheduler=scheduler, silence_logs=logging.CRITICAL, name="kernelwright"
        )
    except (OSError, RuntimeError, TimeoutError) as exc:
        raise BatchSetupError(f"could not start a worker per GPU: {first_line(str(exc))}") from None
    with cluster, Client(cluster) as client:
        yield client, partial(cluster.sync, _stop, list(cluster.workers.values()))


async def _stop(nannies: list[Any]) -> None:
    await asyncio.gather(
        *(n.close(timeout=STOP_S, reason="kernelwright-stop") for n in nannies),
        return_exceptions=True,
    )


@contextlib.contextmanager
def _remote(address: str) -> Iterator[Client]:
    from distributed import Client

    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as exc:
        raise BatchSetupError(
            f"--scheduler {address}: no Dask scheduler answers there "
            f"({first_line(str(exc) or type(exc).__name__)}); start one with `dask scheduler`"
        ) from None
    with client:
        yield client


def _gpu_workers(client: Client, retired: set[str]) -> dict[str, int]:
    """Each running worker offering GPUs -> how many."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    return {
        address: int(info.get("resources", {}).get("GPU", 0))
        for address, info in workers.items()
        if address not in retired
        and info.get("status", "running") == "running"
        and info.get("resources", {}).get("GPU", 0) >= 1
    }


def _check_workers(client: Client, root: Path, out: Path) -> None:
    """Every GPU worker imports kernelwright and sees the batch's folders at the same paths."""
    gpus = list(_gpu_workers(client, set()))
    answers = client.run(sees, [str(root)], [str(out)], workers=gpus, on_error="return")
    for address, answer in sorted(answers.items()):
        if isinstance(answer, BaseException):
            raise BatchSetupError(
                f"worker {address} cannot run the batch ({type(answer).__name__}: "
                f"{first_line(str(answer))}): install kernelwright there"
            )
        if answer:
            raise BatchSetupError(
                f"worker {address} does not see {answer}: the task folder and --out must be "
                "on a file system every worker shares, at the same path"
            )


@contextlib.contextmanager
def _memory(settings: Settings, out: Path, remote: bool) -> Iterator[str]:
    """The memory server's URL: the settings' memory.url, else (one host) a `chroma run` this
    batch starts on the memory directory and stops at its end. The store is opened once here,
    so its schema is up to date before the workers open it together."""
    from kernelwright.agent.experience import open_store

    server = None
    url = settings.memory.url
    if url is None and remote:
        raise BatchSetupError(
            "--scheduler with the memory on needs a memory server every worker reaches: run "
            "`chroma run --path DIR --host 0.0.0.0 --port 8000` on one host and set memory.url "
            "(README), or add --no-memory"
        )
    try:
        if url is None:
            server, url = _chroma(settings.memory_dir, out / "memory-server.log")
        memory = settings.memory.model_copy(update={"url": url})
        open_store(settings.model_copy(update={"memory": memory})).close()
        yield url
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()


_CHROMA = "import sys; from chromadb.cli.cli import app; sys.argv[0] = 'chroma'; app()"


def _chroma(path: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    # chromadb's own command-line app, run by this Python: its `chroma` script is not always
    # on PATH or beside the interpreter (a --target or --user install puts it elsewhere).
    if importlib.util.find_spec("chromadb.cli.cli") is None:
        raise BatchSetupError("chromadb's server (chromadb.cli) is not installed with kernelwright")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, "-c", _CHROMA, "run", "--path", str(path), "--host", "127.0.0.1"]
    args += ["--port", str(port)]
    with open(log, "wb") as sink:  # the server keeps its own descriptor
        server = subprocess.Popen(
            args, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + MEMORY_SERVER_START_S
    import httpx

    while True:
        try:
            httpx.get(f"{url}/api/v2/heartbeat", timeout=2.0)
            return server, url
        except httpx.HTTPError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            last = (log.read_text(errors="replace").strip().splitlines() or ["no output"])[-1]
            raise BatchSetupError(
                f"the memory server (chroma run --path {path}) did not start: {first_line(last)}"
            )
        time.sleep(0.1)  # waiting for a process to listen: nothing to wait on but the port


def run_parallel(
    state: BatchState,
    out: Path,
    place: Place,
    *,
    overrides: dict[str, Any],
    parts: WorkerParts,
    progress: BatchProgress,
) -> BatchState:
    """Run every unfinished task on the place's GPUs; the state is saved at every change and
    the batch's wall time added. AllGpusLost when no GPU is left; KeyboardInterrupt leaves the
    running tasks running, for a resume."""
    start = time.monotonic()
    batch = state.model_copy(update={"tasks": [], "skipped": []})

    def job(task: TaskState, topic: str) -> Job:
        return Job(task.model_copy(), out, batch, overrides, place.memory_url, topic, parts)

    try:
        Coordinator(state, out, place, job, progress).run()
    finally:
        state.wall_s += time.monotonic() - start
        state.save(out)
    return state


@dataclass
class Coordinator:
    state: BatchState
    out: Path
    place: Place
    job: Callable[[TaskState, str], Job]
    ui: BatchProgress
    topic: str = field(default_factory=lambda: f"kernelwright-batch-{uuid.uuid4().hex[:12]}")
    inbox: queue.Queue[tuple[str, Any]] = field(default_factory=queue.Queue)
    pending: deque[int] = field(default_factory=deque)
    live: dict[str, Future] = field(default_factory=dict)  # slug -> its task's future
    started: set[str] = field(default_factory=set)  # keys whose run began
    labels: dict[str, str] = field(default_factory=dict)  # worker address -> its GPU
    lost: dict[str, str] = field(default_factory=dict)  # retired worker -> why
    moved: Counter[str] = field(default_factory=Counter)  # slug -> times its GPU was lost

    def run(self) -> None:
        client = self.place.client
        self.pending.extend(
            i for i, t in enumerate(self.state.tasks) if t.status not in ("done", "failed")
        )
        client.subscribe_topic(self.topic, lambda event: self.inbox.put(("event", event[1])))
        try:
            while self.pending or self.live:
                self._top_up()
                try:
                    kind, item = self.inbox.get(timeout=POLL_S)
                except queue.Empty:
                    continue
                if kind == "event":
                    self._event(item)
                else:
                    self._done(item)
        finally:
            client.unsubscribe_topic(self.topic)
            if self.live:  # interrupted: a cluster's workers stop them at their next step
                with contextlib.suppress(Exception):
                    client.cancel(list(self.live.values()), force=True)
                with contextlib.suppress(Exception):
                    self.place.halt()  # this host's workers: now

    def _top_up(self) -> None:
        """Hand out tasks while a GPU is free."""
        if not self.pending:
            return
        free = sum(_gpu_workers(self.place.client, set(self.lost)).values()) - len(self.live)
        while free > 0 and self.pending:
            self._submit(self.pending.popleft())
            free -= 1
        if self.pending and not self.live and self.lost and free <= 0:
            gone = "; ".join(f"{self.labels.get(a, a)}: {why}" for a, why in self.lost.items())
            raise AllGpusLost(
                f"every GPU of the batch was lost ({gone}); {len(self.pending)} tasks wait: "
                "continue with --resume once the GPUs work"
            )

    def _submit(self, index: int) -> None:
        task = self.state.tasks[index]
        key = f"kernelwright-{task.slug}-{uuid.uuid4().hex[:8]}"
        future = self.place.client.submit(
            run_job, self.job(task, self.topic), key=key, resources={"GPU": 1}, pure=False
        )
        self.live[task.slug] = future
        future.add_done_callback(lambda f: self.inbox.put(("done", f)))

    def _find(self, slug: str, key: str) -> tuple[int, TaskState] | None:
        """The task an event or a result is about, if it comes from the task's current run."""
        future = self.live.get(slug)
        if future is None or future.key != key:
            return None
        return next((i, t) for i, t in enumerate(self.state.tasks) if t.slug == slug)

    def _event(self, msg: dict[str, Any]) -> None:
        found = self._find(msg["slug"], msg["key"])
        if found is None:
            return  # late news of a run already over
        index, task = found
        if "started" not in msg:
            event = dict(msg)
            if isinstance(msg.get("attempt"), dict):
                event["attempt"] = Attempt.model_validate(msg["attempt"])
            self.ui.loop_event(task, event)
            return
        self.labels[msg["worker"]] = msg["started"]
        if msg["key"] in self.started:
            self.ui.note(f"{task.id}: its worker died; running it again on {msg['started']}")
        self.started.add(msg["key"])
        task.status, task.gpu = "running", msg["started"]
        self.state.save(self.out)
        self.ui.task_started(index, task, attempts_done(self.out, task))

    def _done(self, future: Future) -> None:
        slug = next((s for s, f in self.live.items() if f is future), None)
        if slug is None:
            return
        del self.live[slug]
        index, task = next((i, t) for i, t in enumerate(self.state.tasks) if t.slug == slug)
        if future.cancelled():
            return
        failed = future.status == "error"
        result: Outcome | BaseException | None = future.exception() if failed else future.result()
        future.release()  # its worker keeps no result: it can be retired at once
        if isinstance(result, Outcome) and result.lost:
            self._lose(index, task, result)
            return
        if isinstance(result, Outcome):
            task.status, task.reason = result.status, result.reason
            task.stop_reason, task.run_dir = result.stop_reason, result.run_dir
            task.wall_s += result.wall_s
            task.gpu = result.gpu
        else:
            task.status, task.reason = "failed", self._why(result)
        self.state.save(self.out)
        self.ui.task_finished(index, task, write_task_json(task, self.out))

    def _why(self, exc: BaseException | None) -> str:
        from distributed import KilledWorker

        if isinstance(exc, KilledWorker):
            last = exc.last_worker
            where = self.labels.get(last.address) or f"worker {last.name}"
            return (
                f"the worker running it died {exc.allowed_failures + 1} times (the last on "
                f"{where}), so it was not run again: a crash outside the sandbox, or the host's "
                "memory ran out (see the worker's log)"
            )
        return first_line(f"{type(exc).__name__}: {exc}")

    def _lose(self, index: int, task: TaskState, outcome: Outcome) -> None:
        """The task's GPU was found lost: retire its worker, and run the task on another GPU
        (a bounded number of times)."""
        if outcome.worker not in self.lost:
            self.lost[outcome.worker] = outcome.lost
            self.ui.note(f"{outcome.gpu} is lost: {outcome.lost}; its worker is retired")
            with contextlib.suppress(Exception):  # it may be gone already
                self.place.client.retire_workers([outcome.worker], close_workers=True)
        self.moved[task.slug] += 1
        if self.moved[task.slug] <= self.place.retries:
            self.pending.appendleft(index)
            return
        task.status = "failed"
        task.reason = f"the GPU running it was lost {self.moved[task.slug]} times: {outcome.lost}"
        self.state.save(self.out)
        self.ui.task_finished(index, task, write_task_json(task, self.out))
