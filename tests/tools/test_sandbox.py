"""The worker sandbox with CPU-only payloads: scrubbed environment, deadlines, crashes,
garbage on the channel, the memory watchdog, and the kill of the whole process group."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kernelwright.tools.sandbox import Crew, Sandbox, WorkerFailure, scrubbed_env

PRELUDE = """\
import os, subprocess, sys, time
from kernelwright.tools.protocol import FrameReader, write_message
job, _ = FrameReader(0).read_message(time.monotonic() + 10)
"""

Payload = Callable[[str], list[str]]


def payload_writer(tmp_path: Path, prelude: str) -> Payload:
    """A worker command: a script of `prelude` and then `body`, in a file of its own."""

    def make(body: str) -> list[str]:
        script = tmp_path / f"payload_{len(list(tmp_path.iterdir()))}.py"
        script.write_text(prelude + textwrap.dedent(body))
        return [sys.executable, str(script)]

    return make


@pytest.fixture
def payload(tmp_path: Path) -> Payload:
    return payload_writer(tmp_path, PRELUDE)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie nobody has reaped yet is dead too
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_environment_is_scrubbed(payload: Payload, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KW_SECRET_TOKEN", "x")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
    cmd = payload("""
        write_message(1, {"job": job, "env": dict(os.environ), "cwd": os.getcwd()})
    """)
    with Sandbox("test", command=cmd) as box:
        box.send({"hello": [1, 2]})
        header, arrays = box.receive(20, "test")
        scratch = box.scratch.resolve()
    assert header["job"] == {"hello": [1, 2], "arrays": []} and arrays == []
    env = header["env"]
    assert "KW_SECRET_TOKEN" not in env and "SSH_AUTH_SOCK" not in env
    assert Path(env["HOME"]).resolve() == scratch
    assert Path(env["TMPDIR"]).resolve() == scratch
    assert Path(header["cwd"]).resolve() == scratch
    assert not scratch.exists()  # removed when the with-block ends


def test_hang_is_killed_at_the_deadline(payload: Payload) -> None:
    with Sandbox("test", command=payload("time.sleep(1000)")) as box:
        box.send({})
        start = time.monotonic()
        with pytest.raises(WorkerFailure) as info:
            box.receive(1, "running at N=5")
        assert time.monotonic() - start < 5
        assert info.value.verdict == "timeout"
        assert "no progress" in info.value.reason and "running at N=5" in info.value.reason
        assert box.proc is not None and box.proc.poll() is not None


def test_exit_is_a_crash_with_the_exit_code(payload: Payload) -> None:
    cmd = payload("print('boom: bad things', file=sys.stderr)\nsys.exit(3)")
    with Sandbox("test", command=cmd) as box, pytest.raises(WorkerFailure) as info:
        box.send({})
        box.receive(20, "compiling")
    assert info.value.verdict == "crashed"
    assert "exit code 3" in info.value.reason and "compiling" in info.value.reason
    assert "boom: bad things" in info.value.reason  # the worker's log tail


def test_garbage_on_the_channel_is_a_crash(payload: Payload) -> None:
    cmd = payload("os.write(1, bytes(range(256)) * 4)\ntime.sleep(1000)")
    with Sandbox("test", command=cmd) as box:
        box.send({})
        with pytest.raises(WorkerFailure) as info:
            box.receive(20, "running")
        assert info.value.verdict == "crashed" and "protocol" in info.value.reason
        assert box.proc is not None and box.proc.poll() is not None


def test_host_memory_watchdog(payload: Payload) -> None:
    cmd = payload("hog = b'x' * (600 << 20)\ntime.sleep(1000)")
    with Sandbox("test", host_memory_bytes=200 << 20, command=cmd) as box:
        box.send({})
        start = time.monotonic()
        with pytest.raises(WorkerFailure) as info:
            box.receive(30, "running")
        assert time.monotonic() - start < 10
        assert info.value.verdict == "crashed" and "host memory" in info.value.reason
        assert box.peak_host_bytes > 200 << 20  # what it held when it was stopped


def test_a_workers_peak_host_memory_is_kept_for_the_report(payload: Payload) -> None:
    """A worker that holds 150 MB for a moment, then lets it go and answers: its peak stays,
    and the check's crew reports it by the worker's label (CheckReport.peak_host_bytes)."""
    cmd = payload("""
        hog = bytearray(150 << 20)
        hog[::4096] = b'x' * len(hog[::4096])
        time.sleep(1.5)
        del hog
        write_message(1, {"type": "done"})
        time.sleep(1000)
    """)
    with Crew() as crew:
        box = crew.join(Sandbox("candidate", command=cmd))
        box.send({})
        header, _ = box.receive(30, "running")
        assert header["type"] == "done"
    assert crew.peaks()["candidate"] >= 150 << 20


def test_whole_process_group_is_killed(payload: Payload) -> None:
    cmd = payload("""
        child = subprocess.Popen(["sleep", "1000"])
        write_message(1, {"pid": child.pid})
        time.sleep(1000)
    """)
    with Sandbox("test", command=cmd) as box:
        box.send({})
        header, _ = box.receive(20, "starting")
        pid = header["pid"]
        assert _alive(pid)
        with pytest.raises(WorkerFailure):
            box.receive(0.5, "running")
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_outputs_larger_than_expected_are_refused_unread(payload: Payload) -> None:
    # Six 1 GiB outputs announced: the controller must not hold (or wait for) any of them.
    cmd = payload("""
        import json, struct
        header = {"type": "outputs", "meta": [{"dtype": "float32", "shape": [1 << 28]}] * 6,
                  "arrays": [1 << 30] * 6}
        raw = json.dumps(header).encode()
        os.write(1, struct.pack(">Q", len(raw)) + raw)
        time.sleep(30)
    """)
    from kernelwright.tools.protocol import Expect

    with Sandbox("test", command=cmd) as box:
        box.send({})
        start = time.monotonic()
        with pytest.raises(WorkerFailure) as info:
            box.receive(20, "running at N=1000", Expect(sizes=(4000,)))
        assert time.monotonic() - start < 5
    assert info.value.verdict == "wrong"
    assert "float32 [268435456]" in info.value.reason and "expected 1 of 4,000" in info.value.reason


def test_a_long_log_reaches_a_reason_cut(payload: Payload) -> None:
    cmd = payload("""
        sys.stderr.write("x" * (24 << 20) + "\\nlast words\\n")
        sys.stderr.flush()
        os._exit(3)
    """)
    with Sandbox("test", command=cmd) as box:
        box.send({})
        with pytest.raises(WorkerFailure) as info:
            box.receive(20, "running")
    assert "last words" in info.value.reason and len(info.value.reason) < 1000


def test_a_spare_touches_no_gpu_until_let_on() -> None:
    """The real worker, started as a spare, does its host work and then waits: no CUDA call
    (on a machine without a GPU it would fail at once and say so) until `go`; then it warms up
    and says "warm" (with a GPU) or fails on CUDA (without one)."""
    import selectors

    from kernelwright.tools import nvml
    from kernelwright.tools.errors import NoGpuError

    try:
        nvml.device_info()
        has_gpu = True
    except NoGpuError:
        has_gpu = False
    with Sandbox("spare").start() as box:
        assert box.proc is not None and box.proc.stdout is not None
        with selectors.DefaultSelector() as sel:  # not select(): a long test run's fds pass 1024
            sel.register(box.proc.stdout, selectors.EVENT_READ)
            ready = sel.select(timeout=8.0)
        assert not ready and box.alive(), box.log_tail()
        box.go()
        if has_gpu:
            assert box.settle(60.0)
        else:
            with pytest.raises(WorkerFailure) as failure:
                box.receive(60.0, "warming up")
            assert "cuda" in failure.value.reason.lower()


LAYOUT = """
from kernelwright.tools.worker import steady_layout
steady_layout()
print(open("/proc/self/personality").read().strip())
print(next(line for line in open("/proc/self/maps") if "[heap]" in line).split()[0])
"""


def _layout() -> tuple[int, str]:
    out = subprocess.run([sys.executable, "-c", LAYOUT], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    personality, heap = out.stdout.split()
    return int(personality, 16), heap


def test_workers_start_alike() -> None:
    """Without address randomization (and with one hash seed) two workers lay their memory out
    the same way: a forward timed with its host dispatch reads the same level in each."""
    from kernelwright.tools.worker import ADDR_NO_RANDOMIZE

    first, heap = _layout()
    if not first & ADDR_NO_RANDOMIZE:
        pytest.skip("this kernel or container refuses personality(ADDR_NO_RANDOMIZE)")
    assert [_layout() for _ in range(2)] == [(first, heap)] * 2
    env = scrubbed_env(Path(tempfile.mkdtemp()))
    probe = [sys.executable, "-c", "import sys; print(sys.flags.hash_randomization, hash('kw'))"]
    seeds = {
        subprocess.run(probe, env=env, capture_output=True, text=True, timeout=60).stdout
        for _ in range(2)
    }
    assert len(seeds) == 1 and seeds.pop().startswith("0 ")  # one hash seed, not random


def test_the_real_worker_runs_without_address_randomization() -> None:
    from kernelwright.tools.worker import ADDR_NO_RANDOMIZE

    if not _layout()[0] & ADDR_NO_RANDOMIZE:
        pytest.skip("this kernel or container refuses personality(ADDR_NO_RANDOMIZE)")
    with Sandbox("spare").start() as box:
        assert box.proc is not None
        end = time.monotonic() + 30
        flags = 0
        while time.monotonic() < end and not flags & ADDR_NO_RANDOMIZE:
            flags = int(Path(f"/proc/{box.proc.pid}/personality").read_text(), 16)
            time.sleep(0.01)
        assert flags & ADDR_NO_RANDOMIZE, box.log_tail()
        assert box.alive(), box.log_tail()  # the exec kept its channel and went on


def test_every_worker_sees_one_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check's workers are pinned to CUDA's device 0: the first GPU the controller's
    CUDA_VISIBLE_DEVICES names, or "0" where it names none (device 0 in CUDA's own order)."""
    from kernelwright.tools import sandbox

    def pinned(visible: str | None) -> dict[str, str]:
        if visible is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        return sandbox.one_gpu()

    assert pinned("2,3") == {"CUDA_VISIBLE_DEVICES": "2"}
    assert pinned("GPU-abcd, GPU-ef01") == {"CUDA_VISIBLE_DEVICES": "GPU-abcd"}
    assert pinned("MIG-1234") == {"CUDA_VISIBLE_DEVICES": "MIG-1234"}
    assert pinned("") == {"CUDA_VISIBLE_DEVICES": ""}  # none: none
    assert pinned(None) == {"CUDA_VISIBLE_DEVICES": "0"}
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # kept as it is: "0" follows it
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    env = scrubbed_env(Path(tempfile.mkdtemp()))
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


WAKER = """
    import signal, threading

    def wake_every_ms() -> None:  # SIGCONT every millisecond, from outside the worker's tree
        me = os.getpid()
        if os.fork() == 0:  # a daemon, reparented away from the worker (unconfined here)
            if os.fork() == 0:
                while True:
                    try:
                        os.kill(me, signal.SIGCONT)
                    except ProcessLookupError:
                        os._exit(0)
                    time.sleep(0.001)
            os._exit(0)
        os.wait()
"""


@pytest.mark.parametrize("waker", [False, True])
def test_a_pause_is_seen_to_hold(payload: Payload, waker: bool) -> None:
    """SIGSTOP does not hold a process that gets SIGCONT (a POSIX timer of its own: a
    red-team review ran one through the timing's pauses; here, for a waker that wakes it
    every time, a daemon outside its tree). A watched pause counts every thread's switches
    once the tree has stopped and again before it resumes: an honest worker (threads asleep,
    as between its batches) is never said to have run; one woken in every pause is said to
    have run in every one, whether it ran between the counts or never stayed stopped to be
    counted."""
    body = (
        WAKER
        + ("    wake_every_ms()\n" if waker else "")
        + """
    threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()
    write_message(1, {"ready": True})
    while True:
        time.sleep(0.0005)
    """
    )
    with Sandbox("candidate", command=payload(body)) as box:
        box.send({})
        assert box.receive(20, "starting")[0]["ready"]
        for _ in range(3):
            box.pause()
            time.sleep(0.2)  # long enough that the waker, however starved, runs in it
            box.resume()
        box.pause(watch=False)  # the reference's: not watched, not counted
        time.sleep(0.02)
        box.resume()
        said = box.ran_while_paused()
    assert box.pauses == 3
    if waker:
        assert said.startswith("its process ran while it was paused, 3 of 3 times (")
    else:
        assert said == "" and box.woke == []


def test_a_tree_past_what_a_walk_lists_is_not_believed_stopped(
    payload: Payload, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk of a worker's tree stops at TREE_MAX processes, and a process past it is
    neither stopped nor seen (a review hid a spinner behind 4,100 zombies): a watched pause of
    a tree that long says it did not stop."""
    import kernelwright.tools.sandbox as sandbox_module

    monkeypatch.setattr(sandbox_module, "TREE_MAX", 3)
    body = """
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    kids = [subprocess.Popen(sleep) for _ in range(4)]
    write_message(1, {"ready": True})
    time.sleep(60)
    """
    with Sandbox("candidate", command=payload(body)) as box:
        box.send({})
        assert box.receive(20, "starting")[0]["ready"]
        box.pause()
        box.resume()
        assert box.tree_cut
        assert "did not stop" in box.ran_while_paused()


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_held_reference_worker_stops_with_its_group_and_a_candidates_cannot_be_held(
    payload: Payload,
) -> None:
    """Between a candidate's timed calls the reference's worker is held: SIGSTOP to its
    process group (a confined worker runs under a shim, its child, in that group), and let go
    with SIGCONT. A worker that runs a candidate's code is never held: it is paused, watched."""
    body = """
    child = os.fork()
    if child == 0:
        while True:
            time.sleep(0.001)
    write_message(1, {"child": child})
    while True:
        time.sleep(0.001)
    """
    with Sandbox("reference", command=payload(body)) as box:
        box.send({})
        child = box.receive(20, "starting")[0]["child"]
        box.hold(True)
        time.sleep(0.05)
        assert _state(box.proc.pid) == "T" and _state(child) == "T"
        box.hold(False)
        time.sleep(0.05)
        assert _state(box.proc.pid) != "T" and _state(child) != "T"
    cand = Sandbox("candidate", command=payload("time.sleep(60)\n"), host_code=True)
    with cand, pytest.raises(ValueError, match="paused, not held"):
        cand.hold(True)


def test_the_directory_the_controller_started_from_is_on_no_workers_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m ...` puts the directory it was started from first on sys.path: a user's own
    (a project's .env was read from a candidate's worker so, a red-team review). The worker's
    PYTHONPATH, which its view binds, holds the rest of the controller's paths, not that one."""
    import sys

    project = tmp_path / "project"
    (project / "tools").mkdir(parents=True)
    (project / "tools" / "run.py").write_text("")
    other = tmp_path / "lib"
    other.mkdir()
    monkeypatch.chdir(project)  # `python -m ...` started here, or `python tools/run.py`
    monkeypatch.setattr(sys, "argv", [str(project / "tools" / "run.py")])
    extra = [str(project), str(project / "tools"), str(other)]
    monkeypatch.setattr(sys, "path", [*extra, *sys.path])
    paths = scrubbed_env(tmp_path / "scratch")["PYTHONPATH"].split(os.pathsep)
    assert str(project) not in paths and str(project / "tools") not in paths
    assert str(other) in paths  # a path the program put there itself stays
