"""What a confined worker sees of the host: the software it runs on, and nothing of the user's.

A worker's root is a fresh tmpfs holding read-only binds of the system's own directories
(`/usr`, `/lib*`, `/bin`, `/sys`, the dynamic loader's cache), Python's prefixes and every
directory on `sys.path`, the CUDA toolkit and driver library directories, plus a minimal
`/dev`, its own `/proc` and a scratch directory that is a size-capped tmpfs. `/etc` (but the
loader's files), `/home`, `/root`, `/tmp`, `/var` and the user's projects are simply not there:
a candidate cannot read, print or compile in what it cannot open. The compile worker narrows
its view once more, to the CUDA headers alone (`narrow`).

Called from confine() in the worker's private mount namespace, before capabilities are dropped.
"""

from __future__ import annotations

import ctypes
import functools
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

from . import mounts

SYSTEM = (
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/sys",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
)
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203}
_libc = ctypes.CDLL(None, use_errno=True)


def worker_paths() -> list[str]:
    """Everything a worker needs to run Python, CuPy, PyTorch, NVRTC and a host compiler."""
    paths = list(SYSTEM)
    paths += [sys.prefix, sys.base_prefix, sys.exec_prefix]
    paths += [p for p in sys.path if p and os.path.isdir(p) and installed_here(p)]
    paths.append(str(Path(__file__).resolve().parent))  # this package, wherever it lives
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(var):
            paths.append(os.environ[var])
    paths += [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    return [p for p in dict.fromkeys(paths) if os.path.lexists(p)]


# What a worker imports from a path entry that holds no installed distribution (a source
# checkout on PYTHONPATH, say): such an entry is bound only where it holds one of these.
NEEDED = ("kernelwright", "torch", "cupy", "cupy_backends", "numpy", "triton")


@functools.cache
def _install_roots() -> tuple[str, ...]:
    """The interpreter's prefixes and site directories, resolved once a process."""
    import site

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, site.getusersitepackages()}
    return tuple(os.path.realpath(p) for p in (*roots, *site.getsitepackages()))


def installed_here(entry: str) -> bool:
    """Whether a sys.path entry is a place packages are installed, and so part of a worker's
    view: under the interpreter's prefixes, a site directory, a directory holding an installed
    distribution's metadata, or one holding a package a worker imports (NEEDED). Not a user's
    own directory that PYTHONPATH or an editable install's .pth put on the path: a review read
    a project's .env from a candidate's worker through one."""
    real = os.path.realpath(entry)
    if any(real == root or real.startswith(root + os.sep) for root in _install_roots()):
        return True
    try:
        names = os.listdir(real)
    except OSError:
        return False
    if any(n.endswith((".dist-info", ".egg-info")) for n in names):
        return True
    return any(n in NEEDED or n.removesuffix(".py") in NEEDED for n in names)


def _covered(path: str, placed: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in placed)


def build(
    root: str,
    paths: Sequence[str],
    writable: Sequence[str],
    scratch: str,
    scratch_bytes: int | None,
    system: bool = True,
) -> None:
    """Populate `root` (a fresh tmpfs) with the view; `scratch` becomes a tmpfs of
    `scratch_bytes` there (None: the current scratch, bound as it is)."""
    placed: list[str] = []
    for path in sorted(dict.fromkeys(os.path.abspath(p) for p in paths), key=len):
        _place(root, path, placed)
    for path in writable:
        real = os.path.realpath(path)
        if real == scratch:
            continue
        os.makedirs(root + real, exist_ok=True)
        mounts.mount(real, root + real, None, mounts.BIND | mounts.REC)
    os.makedirs(root + scratch, exist_ok=True)
    if scratch_bytes is None:
        mounts.mount(scratch, root + scratch, None, mounts.BIND | mounts.REC)
    else:
        mounts.mount(
            "tmpfs", root + scratch, "tmpfs", mounts.NOSUID | mounts.NODEV, f"size={scratch_bytes}"
        )
    if not os.path.lexists(root + "/tmp"):
        os.symlink(scratch, root + "/tmp")  # temporary files share the scratch quota
    if system:  # a narrowed view (the compile worker) has neither: nothing needs them
        os.makedirs(root + "/proc", exist_ok=True)
        mounts.own_proc(root + "/proc")  # its kernel settings read-only (mounts.PROC_KERNEL)
        mounts.minimal_dev(root)


def _place(root: str, path: str, placed: list[str]) -> None:
    """Bind `path` read-only at the same place under `root`, keeping symlinks as symlinks."""
    if _covered(path, placed):
        return
    real = os.path.realpath(path)
    if real != path:
        parent = os.path.dirname(path)
        if os.path.realpath(parent) == parent and not os.path.lexists(root + path):
            os.makedirs(root + parent, exist_ok=True)
            os.symlink(os.readlink(path), root + path)  # as on the host, relative or not
        else:  # a symlink further up: bind the target where this path names it
            _bind(root, real, path)
            placed.append(path)
            return
        _place(root, real, placed)
        return
    _bind(root, path, path)
    placed.append(path)


def _bind(root: str, source: str, target: str) -> None:
    mode = os.stat(source).st_mode
    if stat.S_ISDIR(mode):
        os.makedirs(root + target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(root + target), exist_ok=True)
        os.close(os.open(root + target, os.O_CREAT | os.O_WRONLY, 0o644))
    mounts.mount(source, root + target, None, mounts.BIND | mounts.REC)


def enter(root: str, writable: Sequence[str]) -> None:
    """Make everything under `root` read-only but `writable` and the scratch tmpfs, then make
    `root` the root: the host's tree is detached and gone from this namespace."""
    keep = [root + os.path.realpath(w) for w in writable]
    for point, options in mounts.rw_mounts():
        if not point.startswith(root + "/") or _covered(point, keep):
            continue
        if point.startswith((root + "/proc", root + "/dev/shm")):
            continue
        mounts.remount_read_only(point, options)
    old = root + "/.old"
    os.mkdir(old)
    number = _PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"pivot_root: unknown machine {os.uname().machine}")
    if _libc.syscall(number, root.encode(), old.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"pivot_root: {os.strerror(err)}")
    os.chdir("/")
    mounts.detach("/.old")
    os.rmdir("/.old")
    mounts.remount_read_only("/", [])
