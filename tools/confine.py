"""Confine a worker before it runs anything of a candidate's: its own mount, PID and network
namespaces, every file system read-only except its scratch directory (and the harness's kernel
cache), a private /proc and a /dev with only the GPU and the null devices, and no capabilities.

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
import re
import resource
import select
import signal
import stat
import sys
from collections.abc import Sequence

NEWNS, NEWUSER, NEWPID, NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
RDONLY, NOSUID, NODEV, NOEXEC, REMOUNT = 1, 2, 4, 8, 32
NOATIME, NODIRATIME, BIND, REC, PRIVATE = 1 << 10, 1 << 11, 1 << 12, 1 << 14, 1 << 18
RELATIME, STRICTATIME = 1 << 21, 1 << 24
_KEPT_FLAGS = {
    "nosuid": NOSUID,
    "nodev": NODEV,
    "noexec": NOEXEC,
    "noatime": NOATIME,
    "nodiratime": NODIRATIME,
    "relatime": RELATIME,
    "strictatime": STRICTATIME,
}
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 24, 38
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(
        _libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data or None)),
        f"mount {target}",
    )


def confine(writable: Sequence[str]) -> list[str]:
    """Confine this process (see the module's docstring); returns notes for the worker's log.

    Returns in the confined child only; the shim parent never returns.
    """
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    uid, gid = os.getuid(), os.getgid()
    flags = NEWNS | NEWPID | NEWNET | (NEWUSER if os.geteuid() != 0 else 0)
    if _libc.unshare(flags) != 0:
        why = os.strerror(ctypes.get_errno())
        isolated = _libc.unshare(NEWNET) == 0
        return [f"confinement unavailable ({why})"] + (["network: isolated"] if isolated else [])
    if flags & NEWUSER:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{gid} {gid} 1")
    _fork_shim()
    notes = ["network: isolated", "processes: own PID namespace"]
    try:
        notes.append(_file_system([os.path.realpath(p) for p in writable if p]))
    except OSError as exc:
        notes.append(f"file system not confined: {exc}")
    _drop_capabilities()
    return notes


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


def _file_system(writable: list[str]) -> str:
    _mount(None, "/", None, REC | PRIVATE)
    cwd = os.getcwd()
    for path in writable:
        os.makedirs(path, exist_ok=True)
        _mount(path, path, None, BIND | REC)
    os.chdir(cwd)  # onto the writable bind mount, not the directory beneath it
    old_dev = os.open("/dev", os.O_PATH | os.O_DIRECTORY)
    try:
        _mount("proc", "/proc", "proc", NOSUID | NODEV | NOEXEC)
        _minimal_dev(old_dev)
    finally:
        os.close(old_dev)
    if not any(p == "/run" or p.startswith("/run/") for p in [*writable, *sys.path]):
        _mount("tmpfs", "/run", "tmpfs", RDONLY | NOSUID | NODEV | NOEXEC, "size=4k,mode=755")
    failed = 0
    for mount_point, options in _mounts():
        inside = any(mount_point == p or mount_point.startswith(p + "/") for p in writable)
        if inside or mount_point == "/dev/shm" or mount_point.startswith("/proc"):
            continue
        kept = sum(_KEPT_FLAGS.get(o, 0) for o in options)
        try:
            _mount(None, mount_point, None, BIND | REMOUNT | RDONLY | kept)
        except OSError as exc:
            failed += exc.errno != errno.ENOENT  # hidden under /dev or /run: out of reach anyway
    return "file system: read-only but for scratch" + (
        f" ({failed} mounts could not be made read-only)" if failed else ""
    )


def _minimal_dev(old_dev: int) -> None:
    """A fresh /dev holding the null devices and the NVIDIA ones, bound from the real /dev."""
    names = [
        n for n in os.listdir(f"/proc/self/fd/{old_dev}") if n in DEVICES or n.startswith("nvidia")
    ]
    _mount("tmpfs", "/dev", "tmpfs", NOSUID | NOEXEC, "size=64k,mode=755")
    for name in names:
        source, target = f"/proc/self/fd/{old_dev}/{name}", f"/dev/{name}"
        mode = os.stat(source).st_mode
        if stat.S_ISDIR(mode):
            os.mkdir(target)
            _mount(source, target, None, BIND | REC)
        elif stat.S_ISCHR(mode):
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
            _mount(source, target, None, BIND)
    for link, to in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(to, f"/dev/{link}")
    os.mkdir("/dev/shm")
    _mount("tmpfs", "/dev/shm", "tmpfs", NOSUID | NODEV, "size=64m,mode=1777")


def _mounts() -> list[tuple[str, list[str]]]:
    """(mount point, per-mount options) of this namespace, from /proc/self/mountinfo."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4])  # \040: space
            options = fields[5].split(",")
            if "ro" not in options:
                out.append((point, options))
    return out


def _drop_capabilities() -> None:
    """No capability stays, in any set, and none can come back through exec."""
    for cap in range(64):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # fails for unknown ones: fine
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _libc.capset(ctypes.byref(header), data)
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
