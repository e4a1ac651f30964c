"""Start and police a worker process: scrubbed environment, its own scratch directory, only the
result channel open, deadlines per phase, a host-memory watchdog, and a kill of the whole
process group on any breach. The controller never imports what the worker runs."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .protocol import (
    ANY,
    Expect,
    Frame,
    FrameReader,
    FrameTimeout,
    ProtocolError,
    Unexpected,
    write_message,
)

# Variables a worker keeps; everything else (tokens, SSH agents, proxies) is dropped.
_KEEP = (
    "PATH",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "CUDA_PATH",
    "CUDA_HOME",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "LANG",
    "LC_ALL",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "TORCH_CUDA_ARCH_LIST",
)


_F_SETPIPE_SZ = 1031
# A paused tree's threads: stopped (T), stopped under a tracer (t), or gone (Z, X). An honest
# worker's threads stop within microseconds of SIGSTOP (one in a system call as it returns);
# STOP_WAIT_S is the most a pause waits for that before it says the tree did not stop.
_STOPPED = frozenset("TtZX")
STOP_WAIT_S = 0.5
# The most processes a walk of a worker's tree lists: past it a watched pause is not believed
# (a candidate made 4,100 zombies to leave a spinner unseen, outside every SIGSTOP)
TREE_MAX = 4096
REASON_CHARS = 2000  # what any text a worker controls may add to a verdict's reason


def cap(text: str, limit: int = REASON_CHARS) -> str:
    """Text from a worker, cut to `limit` characters where it may travel (reasons, logs)."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 24] + f" ... [{len(text):,} chars]"


class WorkerFailure(Exception):
    """The worker hung, crashed, overran a limit or broke the protocol: a verdict, not a bug."""

    def __init__(self, verdict: str, reason: str) -> None:
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason


def _unexpected(phase: str, exc: Unexpected) -> str:
    header = exc.header
    if header.get("problem"):
        return cap(str(header["problem"]), 500)
    meta = header.get("meta")
    if isinstance(meta, list) and meta:
        described = ", ".join(
            f"{m.get('dtype')} {m.get('shape')}" for m in meta[:4] if isinstance(m, dict)
        )
        return cap(f"{phase}: returned {described}, not the reference's outputs ({exc})", 500)
    return cap(f"{phase}: outputs are not the reference's ({exc})", 500)


def one_gpu() -> dict[str, str]:
    """What pins every worker to the one GPU a check runs on, CUDA's device 0: the first GPU the
    controller's CUDA_VISIBLE_DEVICES names, or where it names none, "0" (the device 0 of CUDA's
    own order, as CUDA_DEVICE_ORDER says, where every worker ran before). The reference runs
    on one GPU; a candidate's process that reached a second could split its work over both
    and read faster than any kernel is."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return {"CUDA_VISIBLE_DEVICES": "0" if visible is None else visible.split(",")[0].strip()}


def _started_from() -> set[str]:
    """The directories Python itself put first on sys.path for this command: the one it was
    started in (`python -m`, `-c`) and its script's."""
    places = {os.path.realpath(os.getcwd())}
    script = sys.argv[0] if sys.argv else ""
    if script and script not in ("-c", "-m") and os.path.exists(script):
        places.add(os.path.realpath(os.path.dirname(os.path.abspath(script))))
    return places


def scrubbed_env(scratch: Path, cupy_cache: Path | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in _KEEP if k in os.environ}
    env.update(one_gpu())
    # The worker must import kernelwright exactly as the controller does: from the paths it
    # has, but the directory the controller was started from (`python -m ...` puts it first)
    # and its script's, a user's own, which the worker's view would bind (a red-team review
    # read a project's .env from a candidate's worker so); kernelwright is never imported
    # from there (it is installed), and the view binds its package wherever it lives
    started = _started_from()
    paths = [p for p in sys.path if p and Path(p).is_dir() and os.path.realpath(p) not in started]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env.update(
        HOME=str(scratch),
        TMPDIR=str(scratch),
        CUPY_CACHE_DIR=str(cupy_cache or scratch / "cupy"),
        TORCH_EXTENSIONS_DIR=str(scratch / "torch_extensions"),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        PYTHONHASHSEED="0",  # every worker alike (worker.steady_layout)
        XDG_CACHE_HOME=str(scratch / "cache"),
        # the worker's view has no /etc/passwd: who it is comes from here (getpass, inductor)
        USER="kernelwright",
        LOGNAME="kernelwright",
    )
    env.setdefault("LANG", "C.UTF-8")
    return env


class Sandbox:
    """One worker process. Use as a context manager: the process group dies on exit."""

    def __init__(
        self,
        label: str,
        host_memory_bytes: int = 16 << 30,
        command: list[str] | None = None,
        channel: bool = True,
        cupy_cache: Path | None = None,
        seed_cache: Path | None = None,
        warm_torch: bool = False,
        cpus: set[int] | None = None,
        gpu_now: bool = False,
        host_code: bool = False,
    ) -> None:
        self.label = label
        # The harness's kernels compile once into a cache. It is writable only by workers that
        # run no host code of a candidate's; a KernelBench candidate's worker gets a copy,
        # taken (read-only) before any of its code loads.
        self.cupy_cache = cupy_cache
        self.channel = channel  # False: no result channel; the job comes as a file (profiling)
        self.host_memory_bytes = host_memory_bytes
        self.peak_host_bytes = 0  # the most its tree held, as the watchdog sampled it
        self.peak_gpu_bytes = 0  # the most GPU memory its tree held, where NVML was sampled
        # pause(): each thread's state and context switches once the whole tree had stopped
        # (None: it did not stop in time), checked again at resume(); what a watched pause
        # found, said once (ran_while_paused)
        self._held: dict[int, tuple[str, int]] | None = None
        self._watching = False
        self.pauses = 0
        self.woke: list[str] = []
        # whether it runs a candidate's host code (a KernelBench candidate's worker), which
        # can ask the kernel to wake it: only such a worker's pauses are watched
        self.host_code = host_code
        self.tree_cut = False  # the last walk of its tree stopped at TREE_MAX processes
        self.command = command or [
            sys.executable,
            "-m",
            "kernelwright.tools.worker",
            *(["--writable", str(cupy_cache)] if cupy_cache else []),
            *(["--seed-cache", str(seed_cache)] if seed_cache else []),
            *(["--warm", "torch"] if warm_torch else []),
            *(["--cpus", ",".join(map(str, sorted(cpus)))] if cpus else []),
            # started for the check under way, not as a spare: it may make its CUDA context
            # beside its imports (worker._cuda_early), as no check is timed meanwhile
            *(["--gpu-now"] if gpu_now and command is None else []),
        ]
        # A worker touches no GPU until its first message: "go" (a spare) or its job, or, with
        # `gpu_now`, once it has confined itself.
        self.gated = command is None
        self._warming = False  # sent "go"; its "warm" not read yet
        self.scratch = Path(tempfile.mkdtemp(prefix=f"kw-{label}-"))
        self.log_path = self.scratch / "worker.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.reader: FrameReader | None = None
        self.fd_socket: socket.socket | None = None

    def __enter__(self) -> Sandbox:
        if self.proc is not None:  # started early as a spare
            return self
        log = open(self.log_path, "wb")
        # Beside the channel, a socket that carries only file descriptors (GPU memory one
        # worker hands another: vmm.py), for workers that run the harness (not a tool's).
        theirs: socket.socket | None = None
        command = self.command
        if self.channel and self.gated:
            self.fd_socket, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            command = [*command, "--fds", str(theirs.fileno())]
        try:
            pipe = subprocess.PIPE if self.channel else subprocess.DEVNULL
            self.proc = subprocess.Popen(
                command,
                stdin=pipe,
                stdout=pipe if self.channel else log,
                stderr=log,
                cwd=self.scratch,
                env=scrubbed_env(self.scratch, self.cupy_cache),
                close_fds=True,
                pass_fds=(theirs.fileno(),) if theirs else (),
                start_new_session=True,
            )
        finally:
            log.close()
            if theirs is not None:
                theirs.close()
        if not self.channel:
            return self
        assert self.proc.stdout is not None
        with contextlib.suppress(OSError):  # 1 MiB pipe: large outputs cross in fewer wake-ups
            fcntl.fcntl(self.proc.stdout.fileno(), _F_SETPIPE_SZ, 1 << 20)
        self.reader = FrameReader(self.proc.stdout.fileno())
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def start(self) -> Sandbox:
        """Start the process now (a spare warms up while the caller does other work)."""
        return self.__enter__()

    def go(self) -> None:
        """Let a spare onto the GPU: it starts CUDA and warms up, then waits for its job."""
        if self.gated and self.alive():
            self.gated, self._warming = False, True
            with contextlib.suppress(WorkerFailure):
                self.send({"cmd": "go"})

    def settle(self, timeout_s: float) -> bool:
        """Wait until a spare let onto the GPU is done warming up; False if it failed (it is
        then closed)."""
        try:
            self._settle(timeout_s)
            return True
        except WorkerFailure:
            self.close()
            return False

    def _settle(self, timeout_s: float) -> None:
        if self._warming:
            self._warming = False
            header, _ = self.receive(timeout_s, "warming up", Expect(sizes=()))
            if header.get("type") != "warm":
                self.kill()
                raise WorkerFailure("crashed", "a spare worker did not warm up")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        self.__exit__(None, None, None)

    def signal_kill(self) -> None:
        """SIGKILL the worker and everything under it, without waiting for them to go."""
        if self.proc is None:
            return
        for pid in self._tree()[1:]:  # every descendant, also one that left the group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    def kill(self) -> None:
        if self.proc is None:
            return
        self.signal_kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream:
                stream.close()
        if self.reader:
            self.reader.close()
        if self.fd_socket is not None:
            self.fd_socket.close()
        # A group that outlived its leader (a forked helper) goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def wait(self, timeout_s: float, phase: str) -> int:
        """Wait for a worker without a channel to exit; kill it past the deadline."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                self.kill()
                raise WorkerFailure("timeout", f"killed after {timeout_s:.0f} s ({phase})")
            self._watch()
            time.sleep(0.05)
        return self.proc.returncode

    def send(self, header: dict[str, Any], arrays: list[bytes] | None = None) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.gated = False  # its job, or "go": either lets it onto the GPU
        try:
            write_message(self.proc.stdin.fileno(), header, arrays or [])
        except (BrokenPipeError, OSError):
            raise self._died("while receiving its job") from None

    def send_fds(self, fds: list[int]) -> None:
        """Hand the worker these descriptors (the caller still closes its own)."""
        if self.fd_socket is None:
            raise WorkerFailure("crashed", "the worker has no descriptor channel")
        try:
            socket.send_fds(self.fd_socket, [b"f"], fds)
        except OSError:
            raise self._died("while receiving memory to compare") from None

    def receive_fds(self, count: int, timeout_s: float, phase: str) -> list[int]:
        """Exactly `count` descriptors the worker sent, within the time limit; anything else
        is the worker's failure (what did arrive is closed)."""
        if self.fd_socket is None:
            raise WorkerFailure("crashed", "the worker has no descriptor channel")
        self.fd_socket.settimeout(timeout_s)
        try:
            msg, fds, flags, _ = socket.recv_fds(self.fd_socket, 16, max(count, 1))
        except TimeoutError:
            self.kill()
            raise WorkerFailure("timeout", f"killed after {timeout_s:.0f} s ({phase})") from None
        except OSError:
            raise self._died(phase) from None
        if len(fds) != count or msg != b"f" or flags & socket.MSG_CTRUNC:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self.kill()
            raise WorkerFailure("crashed", f"sent {len(fds)} memory handles, expected {count}")
        return fds

    def log_tail(self, lines: int = 6) -> str:
        """The log's last lines, read from its last 16 KiB only and capped."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - (16 << 10)))
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        keep = [cap(ln.strip(), 200) for ln in text.splitlines() if ln.strip()]
        tail = " | ".join(keep[-lines:])
        return tail if len(tail) <= 600 else "... " + tail[-596:]

    def signal_tree(self, sig: int) -> None:
        """Send `sig` to the worker and every process under it (a daemon that left the group
        included); repeated while new processes appear, so a forking one cannot slip out."""
        if self.proc is None:
            return
        seen: set[int] = set()
        for _ in range(8):
            pids = set(self._tree()) - seen
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
            seen |= pids

    def spin(self, seconds: float) -> None:
        """Poll for this worker's replies without sleeping for up to `seconds` each (timing)."""
        if self.reader is not None:
            self.reader.spin_s = seconds

    def pause(self, watch: bool = True) -> None:
        """Freeze the worker and its descendants: no CPU, no new GPU work, until resume().
        SIGSTOP alone does not hold a process that wants to run: the kernel continues a
        stopped process on any SIGCONT, even one it asked for itself (a POSIX timer that
        sends SIGCONT every few milliseconds; a red-team review ran one through a pause on a
        CPU). So, where `watch`, the pause is seen to hold: every thread of the tree stopped,
        its context switches counted, and counted again at resume(); a thread that ran in
        between, or a new one, or a tree that never stopped, is on record (`woke`). An
        honest worker's stopped threads never switch."""
        self.signal_tree(signal.SIGSTOP)
        self._watching = watch and self.proc is not None
        if self._watching:
            self.pauses += 1
            self._held = self._stopped(STOP_WAIT_S)

    def resume(self) -> None:
        if self._watching:
            self._watching = False
            held, self._held = self._held, None
            if held is None:
                self.woke.append(f"did not stop within {STOP_WAIT_S:g} s")
            elif (now := self._threads()) != held:
                ran = sorted(t for t in now if now[t] != held.get(t))
                self.woke.append(f"{len(ran)} of its threads ran (or began) while it was stopped")
        self.signal_tree(signal.SIGCONT)

    def hold(self, stopped: bool) -> None:
        """The reference's worker (no candidate code runs in it, and nothing of it leaves its
        process group) stopped, or let go, at once: SIGSTOP or SIGCONT to its group (the
        confinement's shim and the worker under it), no walk of a tree. Between each of a
        candidate's timed calls, where pause's walk would cost a millisecond a call."""
        if self.host_code:
            raise ValueError("a worker that runs a candidate's code is paused, not held")
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGSTOP if stopped else signal.SIGCONT)

    def ran_while_paused(self) -> str:
        """What the watched pauses found (empty: each held), in words."""
        if not self.woke:
            return ""
        return (
            f"its process ran while it was paused, {len(self.woke)} of {self.pauses} times "
            f"({self.woke[0]}): each side is timed with the other stopped"
        )

    def _threads(self) -> dict[int, tuple[str, int]]:
        """Every thread of the tree: its state letter and its context switches so far."""
        out: dict[int, tuple[str, int]] = {}
        for pid, tid in self._tasks():
            state, switches = "?", 0
            try:
                text = Path(f"/proc/{pid}/task/{tid}/status").read_text()
            except OSError:  # gone: it exited (or was reaped) meanwhile
                continue
            for line in text.splitlines():
                if line.startswith("State:"):
                    state = line.split()[1]
                elif line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt")):
                    switches += int(line.split()[1])
            out[tid] = (state, switches)
        return out

    def _tasks(self) -> Iterator[tuple[int, int]]:
        """(process, thread) of every thread of the tree, as /proc lists them now."""
        for pid in self._tree():
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                with contextlib.suppress(ValueError):
                    yield pid, int(tid)

    def _stopped(self, wait_s: float) -> dict[int, tuple[str, int]] | None:
        """The tree's threads once every one has stopped and two looks a millisecond apart
        agree (a thread counts its last switch as it stops), or None past `wait_s`."""
        deadline = time.monotonic() + wait_s
        last: dict[int, tuple[str, int]] | None = None
        while time.monotonic() < deadline:
            now = self._threads()
            if self.tree_cut:  # processes past the walk's cap were neither stopped nor seen
                return None
            if now and all(st in _STOPPED for st, _ in now.values()):
                if now == last:
                    return now
                last = now
            else:
                last = None
            time.sleep(0.001)
        return None

    def pin(self, cpus: set[int]) -> None:
        """Run the thread that times the calls (the worker's main thread) on the highest of
        `cpus` alone, and every other thread of the worker and its descendants on the rest: a
        helper thread it waits for never waits for its CPU (`cpus`: pool.timing_cpus)."""
        if self.proc is None or not cpus:
            return
        main, rest = {max(cpus)}, (cpus - {max(cpus)}) or cpus
        timed = self._timed_pid()
        for _, tid in self._tasks():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, main if tid == timed else rest)

    def _timed_pid(self) -> int:
        """The process that runs the calls: a confined worker's PID 1 in its own namespace
        (the shim's child), else the worker itself."""
        assert self.proc is not None
        pid = self.proc.pid
        with contextlib.suppress(OSError, ValueError):
            for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
                for line in Path(f"/proc/{child}/status").read_text().splitlines():
                    if line.startswith("NSpid:") and line.split()[-1] == "1":
                        return int(child)
        return pid

    def _tree(self) -> list[int]:
        """The worker and every process under it (a confined worker's orphans stay under it)."""
        assert self.proc is not None
        pids: list[int] = []
        todo = [self.proc.pid]
        while todo and len(pids) < TREE_MAX:
            pid = todo.pop()
            pids.append(pid)
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tasks:
                with contextlib.suppress(OSError, ValueError):
                    todo += [
                        int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()
                    ]
        self.tree_cut = bool(todo)  # more than TREE_MAX: the rest was not seen
        return pids

    def _rss_bytes(self) -> int:
        """Resident memory of the worker and all its descendants."""
        total = 0
        for pid in self._tree():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        return total

    def _watch(self) -> None:
        rss = self._rss_bytes()
        self.peak_host_bytes = max(self.peak_host_bytes, rss)
        if rss > self.host_memory_bytes:
            self.kill()
            raise WorkerFailure(
                "crashed",
                f"killed: host memory above {self.host_memory_bytes / (1 << 20):,.0f} MiB",
            )

    def _died(self, phase: str) -> WorkerFailure:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        tail = self.log_tail()
        how = (
            f"exit code {code}"
            if code is not None and code >= 0
            else (f"signal {signal.Signals(-code).name}" if code is not None else "no exit")
        )
        return WorkerFailure(
            "crashed", f"worker died {phase} ({how})" + (f": {tail}" if tail else "")
        )

    def receive(
        self, timeout_s: float, phase: str, expect: Expect = ANY
    ) -> tuple[dict[str, Any], list[Frame]]:
        """The next message, or WorkerFailure: a hang past the deadline is killed, and a message
        announcing other arrays than `expect` is a broken protocol, refused before it is read."""
        assert self.reader is not None
        self._settle(timeout_s)
        try:
            header, arrays = self.reader.read_message(
                time.monotonic() + timeout_s, self._watch, expect
            )
        except FrameTimeout:
            self.kill()
            raise WorkerFailure(
                "timeout", f"killed after {timeout_s:.0f} s with no progress ({phase})"
            ) from None
        except Unexpected as exc:  # refused unread: what it is comes from its header alone
            self.kill()
            raise WorkerFailure("wrong", _unexpected(phase, exc)) from None
        except ProtocolError as exc:
            if self.reader.closed:
                raise self._died(phase) from None
            self.kill()
            raise WorkerFailure(
                "crashed", f"worker broke the result protocol ({cap(str(exc), 300)})"
            ) from None
        if header.get("type") == "error":
            self.kill()
            raise WorkerFailure("crashed", cap(f"{phase}: {header.get('error', 'unknown error')}"))
        return header, arrays


class Crew:
    """The workers of one check, stopped together as it ends: every one is sent SIGKILL first,
    then each is waited for. A worker's CUDA context takes a while to go, and a KernelBench
    check has six workers: one after another, their ends added seconds to every check."""

    def __init__(self) -> None:
        self.boxes: list[Sandbox] = []
        self.joined: list[Sandbox] = []  # every worker the check had, stopped or not

    def __enter__(self) -> Crew:
        return self

    def join(self, box: Sandbox) -> Sandbox:
        """`box`, started (if it is not a spare already running) and stopped with the rest."""
        box.__enter__()
        self.boxes.append(box)
        self.joined.append(box)
        return box

    def peaks(self) -> dict[str, int]:
        """Each worker's peak host memory (its whole process tree), by its label, as sampled
        while the controller waited on it (every 50 ms at most)."""
        return {box.label: box.peak_host_bytes for box in self.joined if box.peak_host_bytes}

    def sample_gpu(self, used: dict[int, int]) -> None:
        """Each running worker's GPU memory now (its whole process tree's, from `used`: pid ->
        bytes, as NVML counts it, nvml.process_memory), kept where it is its most so far."""
        for box in self.boxes:
            if box.proc is None or box.proc.poll() is not None:
                continue
            held = sum(used.get(pid, 0) for pid in box._tree())
            box.peak_gpu_bytes = max(box.peak_gpu_bytes, held)

    def gpu_peaks(self) -> dict[str, int]:
        """Each worker's most GPU memory where it was sampled (after each trial and after the
        rounds: never while a call is timed), by its label."""
        return {box.label: box.peak_gpu_bytes for box in self.joined if box.peak_gpu_bytes}

    def __exit__(self, *exc: object) -> None:
        for box in self.boxes:  # as stop_all does, the last joined stopped first
            box.signal_kill()
        for box in reversed(self.boxes):
            box.__exit__(*exc)
        self.boxes.clear()


def stop_all(boxes: Iterable[Sandbox]) -> None:
    """Every worker sent SIGKILL first, then each waited for (as a Crew stops its own): a
    CUDA context takes a while to go, and one after another their ends added up."""
    boxes = list(boxes)
    for box in boxes:
        box.signal_kill()
    for box in boxes:
        box.kill()
