"""Confine a worker before it runs anything of a candidate's: its own mount, PID and network
namespaces, a root that holds only the software it runs on, read-only (view.py), a scratch
directory that is a size-capped tmpfs (and the harness's kernel cache, where asked), a private
/proc and a /dev with only the GPU and the null devices, and no capabilities.

Called first thing in the worker, while it has one thread and no CUDA context. It forks: the
parent stays outside as a shim that only waits, the child goes on as PID 1 of the new
namespace, so killing the worker's process group kills every process the candidate started,
even one that left the group. As root this needs nothing more; as a user it needs
unprivileged user namespaces. Where neither works the worker runs unconfined and says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
import select
import signal
import struct
import sys
from collections.abc import Callable, Sequence

from . import mounts, view

NEWNS, NEWUSER, NEWPID, NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
# System V IPC of its own: a shared-memory segment a worker leaves behind dies with its
# namespace (in the host's, one outlived every kill of its tree: a red-team review), and no
# IPC object is a channel from one check's worker to another's
NEWIPC = 0x08000000
PR_SET_PDEATHSIG, PR_SET_SECCOMP, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 22, 24, 38
# Syscalls a worker may not make, by architecture (audit arch: the numbers): where it runs is
# the controller's choice (pool.timing_cpus), fixed for its life
_ARCH_SYSCALLS = {"x86_64": (0xC000003E, (203,)), "aarch64": (0xC00000B7, (122,))}
SCRATCH_BYTES = 2 << 30  # what a worker may write in all (its scratch is a tmpfs this size)
_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def confine(
    writable: Sequence[str],
    scratch_bytes: int = SCRATCH_BYTES,
    prepare: Callable[[], None] | None = None,
    narrow: Sequence[str] | None = None,
    readable: Sequence[str] = (),
) -> list[str]:
    """Confine this process (see the module's docstring); returns notes for the worker's log.

    `writable[0]` is the scratch directory (the working directory); `readable` are shown
    read-only besides the software (a shared cache to copy from). `prepare` runs inside the
    view before capabilities go; `narrow`, if given, then shrinks the view to those paths (the
    compile worker: the CUDA headers, once its compiler is loaded). Returns in the confined
    child only; the shim parent never returns.
    """
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    uid, gid = os.getuid(), os.getgid()
    flags = NEWNS | NEWPID | NEWNET | NEWIPC | (NEWUSER if os.geteuid() != 0 else 0)
    if _libc.unshare(flags) != 0:
        why = os.strerror(ctypes.get_errno())
        isolated = _libc.unshare(NEWNET) == 0
        if prepare is not None:
            prepare()
        notes = [f"confinement unavailable ({why})"] + (["network: isolated"] if isolated else [])
        return [*notes, _stay_put()]
    if flags & NEWUSER:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{gid} {gid} 1")
    _fork_shim()
    notes = ["network: isolated", "processes: own PID namespace"]
    scratch = os.path.realpath(writable[0])
    mounts.mount(None, "/", None, mounts.REC | mounts.PRIVATE)
    try:
        paths = [*view.worker_paths(), *readable]
        _enter_view(paths, writable, scratch, scratch_bytes, ".root")
        notes.append(
            f"file system: only the software it runs on, read-only; scratch a "
            f"{scratch_bytes >> 20} MiB tmpfs"
        )
    except OSError as exc:
        keep = [scratch, *(os.path.realpath(p) for p in writable[1:] if p)]  # as mountinfo has them
        notes.append(f"no view of its own ({exc}): " + _read_only_host(keep))
    if prepare is not None:
        prepare()
    if narrow is not None:
        try:
            _enter_view(narrow, [scratch], scratch, None, ".narrow")
            notes.append("file system: narrowed to " + ", ".join(narrow))
        except OSError as exc:
            notes.append(f"view not narrowed ({exc})")
    _drop_capabilities()
    return [*notes, _stay_put()]


def stay_put_filter(machine: str) -> bytes | None:
    """The seccomp program (classic BPF, as bytes) that refuses sched_setaffinity with EPERM,
    and every call through another ABI (x86_64: i386's `int 0x80` and x32, where it has other
    numbers); None where the architecture is not known (pure)."""
    if machine not in _ARCH_SYSCALLS:
        return None
    arch, numbers = _ARCH_SYSCALLS[machine]
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    refuse, allow = 0x00050000 | errno.EPERM, 0x7FFF0000
    tests = [(jge, 0x40000000)] if machine == "x86_64" else []  # x32: bit 30 set
    tests += [(jeq, nr) for nr in numbers]
    prog = [(ld, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, refuse), (ld, 0, 0, 0)]
    prog += [(op, len(tests) - i, 0, k) for i, (op, k) in enumerate(tests)]  # true: refuse
    prog += [(ret, 0, 0, allow), (ret, 0, 0, refuse)]
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog)


def _stay_put() -> str:
    """From now on this process and every thread and child it makes stay on the CPUs the
    controller gives them: a seccomp filter refuses sched_setaffinity (the controller, outside,
    still pins them). NO_NEW_PRIVS is set first, as seccomp requires of an unprivileged one."""
    prog = stay_put_filter(os.uname().machine)
    if prog is None:
        return f"CPU pinning: not enforced on {os.uname().machine}"
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = _SockFprog(len(prog) // 8, ctypes.addressof(buf))
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if _libc.prctl(PR_SET_SECCOMP, 2, ctypes.byref(fprog), 0, 0) != 0:
        return f"CPU pinning: not enforced ({os.strerror(ctypes.get_errno())})"
    return "CPU: where the controller pins it (sched_setaffinity refused)"


def _enter_view(
    paths: Sequence[str],
    writable: Sequence[str],
    scratch: str,
    scratch_bytes: int | None,
    name: str,
) -> None:
    root = os.path.join(scratch, name)
    os.makedirs(root, exist_ok=True)
    mounts.mount("tmpfs", root, "tmpfs", mounts.NOSUID | mounts.NODEV, "size=4m,mode=755")
    view.build(root, paths, writable[1:], scratch, scratch_bytes, system=name != ".narrow")
    view.enter(root, [scratch, *writable[1:]])
    os.chdir(scratch)


def _fork_shim() -> None:
    """Fork; the parent waits for the child and exits as it did, the child returns."""
    alive_r, alive_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(alive_r)
        for fd in (0, 1):  # the child alone holds the result channel
            os.close(fd)
        while True:
            with contextlib.suppress(InterruptedError):
                _, status = os.waitpid(pid, 0)
                break
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    os.close(alive_w)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if select.select([alive_r], [], [], 0)[0]:  # the shim died before the signal was armed
        os._exit(1)
    os.close(alive_r)


def _read_only_host(writable: list[str]) -> str:
    """The fallback: the host's tree stays visible, every file system read-only but scratch."""
    cwd = os.getcwd()
    for path in writable:
        os.makedirs(path, exist_ok=True)
        mounts.mount(path, path, None, mounts.BIND | mounts.REC)
    os.chdir(cwd)  # onto the writable bind mount, not the directory beneath it
    mounts.own_proc("/proc")  # its kernel settings read-only, as view.build's
    mounts.minimal_dev()
    if not any(p == "/run" or p.startswith("/run/") for p in [*writable, *sys.path]):
        mounts.mount(
            "tmpfs",
            "/run",
            "tmpfs",
            mounts.RDONLY | mounts.NOSUID | mounts.NODEV | mounts.NOEXEC,
            "size=4k,mode=755",
        )
    failed = 0
    for mount_point, options in mounts.rw_mounts():
        inside = any(mount_point == p or mount_point.startswith(p + "/") for p in writable)
        if inside or mount_point == "/dev/shm" or mount_point.startswith("/proc"):
            continue
        try:
            mounts.remount_read_only(mount_point, options)
        except OSError as exc:
            failed += exc.errno != errno.ENOENT  # hidden under /dev or /run: out of reach anyway
    return "every file system read-only but scratch" + (
        f" ({failed} mounts could not be made read-only)" if failed else ""
    )


def _drop_capabilities() -> None:
    """No capability stays, in any set, and none can come back through exec."""
    for cap in range(64):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # fails for unknown ones: fine
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _libc.capset(ctypes.byref(header), data)
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
