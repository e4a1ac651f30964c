"""Mount calls for a worker's private mount namespace (Linux, through libc)."""

from __future__ import annotations

import ctypes
import os
import re
import stat

RDONLY, NOSUID, NODEV, NOEXEC, REMOUNT = 1, 2, 4, 8, 32
NOATIME, NODIRATIME, BIND, REC, PRIVATE = 1 << 10, 1 << 11, 1 << 12, 1 << 14, 1 << 18
RELATIME, STRICTATIME = 1 << 21, 1 << 24
MNT_DETACH = 2
# A worker's own /proc: nothing set-uid, no device, nothing executed from it; and the kernel's
# settings in it read-only, as a container runtime leaves them (PROC_KERNEL), whatever the
# worker's uid: where the controller runs as root the worker is uid 0, and the kernel lets uid
# 0 write /proc/sys whatever its capabilities (kernel.core_pattern: a command it runs as root
# outside every namespace, a red-team review). The rest stays writable: a whole read-only
# /proc left CUDA unable to start in the worker (cudaErrorOperatingSystem, an H200).
PROC_FLAGS = NOSUID | NODEV | NOEXEC
PROC_KERNEL = ("sys", "sysrq-trigger", "irq", "bus", "fs", "sysvipc")
_KEPT_FLAGS = {
    "nosuid": NOSUID,
    "nodev": NODEV,
    "noexec": NOEXEC,
    "noatime": NOATIME,
    "nodiratime": NODIRATIME,
    "relatime": RELATIME,
    "strictatime": STRICTATIME,
}
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(src: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(
        _libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data or None)),
        f"mount {target}",
    )


def detach(target: str) -> None:
    _check(_libc.umount2(target.encode(), MNT_DETACH), f"umount {target}")


def own_proc(target: str) -> None:
    """A /proc of this namespace's processes at `target`, its kernel settings (PROC_KERNEL)
    bound read-only over themselves."""
    mount("proc", target, "proc", PROC_FLAGS)
    for name in PROC_KERNEL:
        part = f"{target}/{name}"
        if os.path.lexists(part):
            mount(part, part, None, BIND)
            remount_read_only(part, ["nosuid", "nodev", "noexec"])


def remount_read_only(point: str, options: list[str]) -> None:
    kept = sum(_KEPT_FLAGS.get(o, 0) for o in options)
    mount(None, point, None, BIND | REMOUNT | RDONLY | kept)


def rw_mounts() -> list[tuple[str, list[str]]]:
    """(mount point, per-mount options) of this namespace's writable mounts (mountinfo)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4])  # \040: space
            options = fields[5].split(",")
            if "ro" not in options:
                out.append((point, options))
    return out


def minimal_dev(root: str = "") -> None:
    """A fresh `root`/dev holding the null devices and the NVIDIA ones, bound from /dev."""
    old_dev = os.open("/dev", os.O_PATH | os.O_DIRECTORY)
    try:
        names = [
            n
            for n in os.listdir(f"/proc/self/fd/{old_dev}")
            if n in DEVICES or n.startswith("nvidia")
        ]
        dev = root + "/dev"
        os.makedirs(dev, exist_ok=True)
        mount("tmpfs", dev, "tmpfs", NOSUID | NOEXEC, "size=64k,mode=755")
        for name in names:
            source, target = f"/proc/self/fd/{old_dev}/{name}", f"{dev}/{name}"
            mode = os.stat(source).st_mode
            if stat.S_ISDIR(mode):
                os.mkdir(target)
                mount(source, target, None, BIND | REC)
            elif stat.S_ISCHR(mode):
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
                mount(source, target, None, BIND)
    finally:
        os.close(old_dev)
    for link, to in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(to, f"{dev}/{link}")
    os.mkdir(f"{dev}/shm")
    mount("tmpfs", f"{dev}/shm", "tmpfs", NOSUID | NODEV, "size=64m,mode=1777")
