"""The worker's confinement with CPU-only payloads: a read-only file system but for scratch, no
network, its own PID namespace (a daemon that left the process group still dies with the
worker), no capabilities, a /dev without disks; and a memory watchdog that counts children."""

from __future__ import annotations

import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from kernelwright.tools.compile import compile_in_sandbox
from kernelwright.tools.sandbox import Sandbox, WorkerFailure
from tests.tools.test_sandbox import Payload, payload_writer

CONFINED = """\
import ctypes, os, socket, subprocess, sys, time
from kernelwright.tools.confine import confine
notes = confine([os.getcwd()])
from kernelwright.tools.protocol import FrameReader, write_message
job, _ = FrameReader(0).read_message(time.monotonic() + 10)
"""


@pytest.fixture
def payload(tmp_path: Path) -> Payload:
    return payload_writer(tmp_path, CONFINED)


def _confined(header: dict[str, object]) -> None:
    notes = " ".join(map(str, header.get("notes", [])))
    if "unavailable" in notes:
        pytest.skip(f"this machine cannot confine a worker: {notes}")


def _marked(mark: bytes) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and mark in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
        except OSError:
            pass
    return found


def test_file_system_network_processes_and_devices(payload: Payload, tmp_path: Path) -> None:
    outside = tmp_path / "escaped.txt"
    cmd = payload("""
        report = {"notes": notes}
        for key, path in (("outside", job["outside"]), ("inside", "inside.txt")):
            try:
                with open(path, "w") as f:
                    f.write("x")
                report[key] = "written"
            except OSError as exc:
                report[key] = exc.strerror
        try:
            socket.create_connection(("127.0.0.1", 9), timeout=2)
            report["network"] = "connected"
        except OSError as exc:
            report["network"] = exc.strerror
        report["pids"] = sorted(p for p in os.listdir("/proc") if p.isdigit())
        report["dev"] = sorted(os.listdir("/dev"))
        libc = ctypes.CDLL(None, use_errno=True)
        report["remount"] = libc.mount(None, b"/", None, 32 | 4096, None)  # MS_REMOUNT|MS_BIND
        report["cap_eff"] = open("/proc/self/status").read().split("CapEff:")[1].split()[0]
        write_message(1, report)
    """)
    with Sandbox("test", command=cmd) as box:
        box.send({"outside": str(outside)})
        header, _ = box.receive(30, "test")
    _confined(header)
    # not written: the directory is read-only in the view, or (a user's own directory, which
    # the view binds only where packages are installed in it) not there at all
    assert header["outside"] in ("Read-only file system", "No such file or directory")
    assert not outside.exists()
    assert header["inside"] == "written"
    assert header["network"] in ("Network is unreachable", "Cannot assign requested address")
    assert header["pids"] == ["1"]  # nothing else is visible, not even the controller
    assert "null" in header["dev"] and not {"sda", "vda", "nvme0n1", "mem"} & set(header["dev"])
    assert header["remount"] != 0 and header["cap_eff"] == "0000000000000000"


def test_a_daemon_that_left_the_process_group_dies_with_the_worker(payload: Payload) -> None:
    mark = f"kw-confine-daemon-{time.monotonic_ns()}"
    cmd = payload(f"""
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(120)", "{mark}"],
            start_new_session=True,
        )
        write_message(1, {{"notes": notes}})
        time.sleep(1000)
    """)
    with Sandbox("test", command=cmd) as box:
        box.send({})
        header, _ = box.receive(30, "test")
        deadline = time.monotonic() + 5
        while not _marked(mark.encode()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _marked(mark.encode())  # it runs, in a session of its own
    _confined(header)
    deadline = time.monotonic() + 5
    while _marked(mark.encode()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _marked(mark.encode())


def test_memory_of_children_counts_against_the_worker(tmp_path: Path) -> None:
    script = tmp_path / "hog.py"
    script.write_text(
        textwrap.dedent("""
        import subprocess, sys, time
        from kernelwright.tools.protocol import FrameReader
        FrameReader(0).read_message(time.monotonic() + 10)
        hog = "x = b'x' * (600 << 20); import time; time.sleep(1000)"
        subprocess.Popen([sys.executable, "-c", hog])
        time.sleep(1000)
    """)
    )
    with Sandbox("test", host_memory_bytes=300 << 20, command=[sys.executable, str(script)]) as box:
        box.send({})
        start = time.monotonic()
        with pytest.raises(WorkerFailure) as info:
            box.receive(30, "running")
        assert time.monotonic() - start < 15
    assert info.value.verdict == "crashed" and "host memory" in info.value.reason


@pytest.mark.parametrize(
    "line",
    [
        '#include "/etc/passwd"',
        '#include \\\n"/etc/passwd"',
        '#include \f"/etc/passwd"',  # a form feed
        'int n = 1\'024;\n#include "/etc/passwd"',  # a digit separator shifts a line parser
        "#include </etc/passwd>",
        "#include <../../../../../../etc/passwd>",
        '#include "/proc/self/mountinfo"',  # the host's paths, from its own /proc
    ],
)
def test_the_compile_worker_can_open_only_the_cuda_headers(nvrtc: None, line: str) -> None:
    ok, cubin = compile_in_sandbox(
        '#include <cuda_fp16.h>\nextern "C" __global__ void k(float* x) { x[0] = 1.0f; }',
        "k",
        "sm_90",
    )
    assert ok.ok and cubin, ok.log
    leak, cubin = compile_in_sandbox(line + '\nextern "C" __global__ void k() {}\n', "k", "sm_90")
    assert not leak.ok and cubin is None
    assert "root:" not in leak.log and "/bin/" not in leak.log  # the file never reached it
    assert "cannot open source file" in leak.log or "could not open" in leak.log


def test_a_worker_sees_only_the_software_it_runs_on(payload: Payload) -> None:
    home = Path(tempfile.mkdtemp(prefix="kw-user-"))  # a user's directory, on no path of ours
    secret = home / "secret.txt"
    secret.write_text("s3cret")
    cmd = payload("""
        report = {"notes": notes}
        for path in job["paths"]:
            report[path] = os.path.exists(path)
        import numpy  # the software it runs on is all there
        try:
            with open("big", "wb") as f:
                for _ in range(4096):
                    f.write(b"x" * (1 << 20))
            report["quota"] = "no limit"
        except OSError as exc:
            report["quota"] = exc.strerror
        write_message(1, report)
    """)
    paths = [
        str(secret),
        "/etc/hostname",
        "/etc/passwd",
        "/root/.bash_history",
        "/usr/bin",
        sys.executable,
    ]
    with Sandbox("test", command=cmd) as box:
        box.send({"paths": paths})
        header, _ = box.receive(60, "test")
    _confined(header)
    assert not header[str(secret)] and not header["/etc/hostname"] and not header["/etc/passwd"]
    assert header["/usr/bin"] and header[sys.executable]
    assert header["quota"] == "No space left on device"  # scratch is capped
    assert any("only the software it runs on" in n for n in header["notes"])


STAY_PUT = """\
import os, subprocess, sys, threading
from kernelwright.tools.confine import _stay_put
print(_stay_put(), flush=True)
def tries():
    try:
        os.sched_setaffinity(0, os.sched_getaffinity(0) | {0})
        return "allowed"
    except PermissionError:
        return "refused"
seen = [tries()]
t = threading.Thread(target=lambda: seen.append(tries()))
t.start(); t.join()
child = "import os\\ntry:\\n os.sched_setaffinity(0, {0}); print('allowed')\\n" \\
    "except PermissionError: print('refused')"
out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True).stdout
seen.append(out.strip())
print(" ".join(seen), flush=True)
sys.stdin.readline()  # pinned from outside meanwhile
print(sorted(os.sched_getaffinity(0)), flush=True)
"""


@pytest.mark.skipif(
    os.uname().machine not in ("x86_64", "aarch64"), reason="filter for x86_64, aarch64"
)
def test_a_worker_cannot_move_itself_off_the_cpu_it_is_timed_on() -> None:
    """Where a worker runs is the controller's choice: the worker, its threads and its children
    are refused sched_setaffinity (a candidate could move to a faster CPU than the reference's),
    while the controller, outside, still pins them."""
    import subprocess

    proc = subprocess.Popen(
        [sys.executable, "-c", STAY_PUT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdin is not None
    note = proc.stdout.readline()
    if "not enforced" in note:
        pytest.skip(note.strip())
    assert proc.stdout.readline().split() == ["refused"] * 3
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(proc.pid, {cpu})
    proc.stdin.write("\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == str([cpu])
    assert proc.wait(10) == 0


def test_the_filter_is_built_only_for_known_architectures() -> None:
    from kernelwright.tools.confine import stay_put_filter

    assert stay_put_filter("sparc") is None
    x86 = stay_put_filter("x86_64")
    arm = stay_put_filter("aarch64")
    assert x86 is not None and arm is not None
    assert len(x86) == 8 * 8 and len(arm) == 7 * 8  # x86_64 also refuses every x32 call


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_the_timing_thread_alone_on_its_cpu_the_rest_beside_it(payload: Payload) -> None:
    """pin() puts the thread that times calls (the confined worker's main thread) on the
    highest CPU given, and its other threads and children on the rest."""
    cmd = payload("""
        import threading
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        write_message(1, {"notes": notes})
        FrameReader(0).read_message(time.monotonic() + 20)
        me = os.getpid()
        seen = {}
        for tid in os.listdir("/proc/self/task"):
            seen["main" if int(tid) == me else "thread"] = sorted(os.sched_getaffinity(int(tid)))
        seen["child"] = sorted(os.sched_getaffinity(child.pid))
        write_message(1, seen)
        child.kill()
    """)
    lo, hi = sorted(os.sched_getaffinity(0))[:2]
    with Sandbox("test", command=cmd) as box:
        box.send({})
        header, _ = box.receive(20, "starting")
        _confined(header)
        box.pin({lo, hi})
        box.send({})
        seen, _ = box.receive(20, "pinned")
    assert {k: seen[k] for k in ("main", "thread", "child")} == {
        "main": [hi],
        "thread": [lo],
        "child": [lo],
    }


INT80 = """\
import ctypes, os, struct, sys
def int80_setaffinity(cpu):  # sched_setaffinity through the i386 ABI: nr 241, int 0x80
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    page = libc.mmap(None, 4096, 7, 0x22 | 0x40, -1, 0)  # RWX, private, anonymous, 32-bit
    ctypes.memmove(page + 2048, struct.pack("<Q", 1 << cpu), 8)
    code = (b"\\x53\\xb8\\xf1\\x00\\x00\\x00\\x31\\xdb\\xb9\\x08\\x00\\x00\\x00\\xba"
            + struct.pack("<I", page + 2048) + b"\\xcd\\x80\\x5b\\xc3")
    ctypes.memmove(page, code, len(code))
    return ctypes.CFUNCTYPE(ctypes.c_int)(page)()
if sys.argv[1] == "filtered":
    from kernelwright.tools.confine import _stay_put
    _stay_put()
print(int80_setaffinity(min(os.sched_getaffinity(0))))
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the i386 ABI is x86_64's")
def test_the_filter_is_not_bypassed_through_another_abi() -> None:
    """The same call through the i386 ABI (`int 0x80`, its own syscall numbers) is refused
    too: the filter refuses every call whose architecture is not this process's own."""
    import subprocess

    def run(mode: str) -> int:
        out = subprocess.run(
            [sys.executable, "-c", INT80, mode], capture_output=True, text=True, timeout=30
        )
        return int(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else -9999

    if run("open") != 0:
        pytest.skip("this kernel has no i386 ABI to bypass through")
    assert run("filtered") == -1  # -EPERM


def test_a_worker_writes_no_kernel_setting_and_keeps_its_ipc_to_itself(payload: Payload) -> None:
    """A worker whose controller runs as root is uid 0, and the kernel lets uid 0 write
    /proc/sys whatever its capabilities: core_pattern there is a command the kernel runs as
    root outside every namespace (a red-team review). Its /proc's kernel settings are read-only
    (its own files are not: a whole read-only /proc left CUDA unable to start). Its System V
    IPC is its own namespace's: a segment it leaves dies with it, in no other process's view."""
    cmd = payload("""
        report = {"notes": notes, "writes": {}}
        for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches",
                     "/proc/sysrq-trigger", "/proc/self/comm"):
            try:
                with open(path, "w") as f:
                    f.write(open(path).read() if path.endswith("comm") else "")
                report["writes"][path] = "written"
            except OSError as exc:
                report["writes"][path] = exc.strerror
        report["ipc"] = os.readlink("/proc/self/ns/ipc")
        libc = ctypes.CDLL(None, use_errno=True)
        report["shm"] = libc.shmget(0, 1 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
        write_message(1, report)
    """)
    with Sandbox("test", command=cmd) as box:
        box.send({})
        header, _ = box.receive(30, "test")
    _confined(header)
    kernel = {p: said for p, said in header["writes"].items() if not p.startswith("/proc/self")}
    for path, said in kernel.items():
        assert said != "written", (path, said)  # read-only, or not there at all
    assert header["writes"]["/proc/sys/kernel/core_pattern"] == "Read-only file system"
    assert header["writes"]["/proc/self/comm"] == "written"  # its own: as in any container
    assert header["ipc"] != os.readlink("/proc/self/ns/ipc")
    assert header["shm"] >= 0  # made, in its own namespace: gone with it
    # not among the host's (key 0, its id, 600, 1 MiB)
    ours = ["0", str(header["shm"]), "600", str(1 << 20)]
    segments = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    assert not any(line.split()[:4] == ours for line in segments), segments


def test_only_places_packages_are_installed_are_bound_from_the_python_path(
    tmp_path: Path,
) -> None:
    """A directory a user's PYTHONPATH or an editable install's .pth puts on sys.path is not
    bound into a worker's view unless packages are installed there (a distribution's metadata,
    or a package a worker imports): a review read a project's .env through one."""
    from kernelwright.tools import view

    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
    wheels = tmp_path / "target"
    (wheels / "chromadb-1.5.9.dist-info").mkdir(parents=True)
    checkout = tmp_path / "src"
    (checkout / "torch").mkdir(parents=True)
    assert not view.installed_here(str(project))
    assert view.installed_here(str(wheels)) and view.installed_here(str(checkout))
    assert view.installed_here(sys.prefix) and not view.installed_here(str(tmp_path / "gone"))


def test_a_worker_does_not_see_a_project_on_the_python_path(
    payload: Payload, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    secret = project / ".env"
    secret.write_text("OPENAI_API_KEY=sk-secret\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(project)])  # as a .pth would put it
    cmd = payload("""
        write_message(1, {"notes": notes, "seen": os.path.exists(job["secret"])})
    """)
    with Sandbox("test", command=cmd) as box:
        box.send({"secret": str(secret)})
        header, _ = box.receive(30, "test")
    _confined(header)
    assert header["seen"] is False
