"""What a KernelBench candidate's Python could change in its own worker, watched from inside it.

The candidate's `ModelNew` runs in the worker that times it, so it can rebind what the harness
uses (timers, events, synchronization, the problem's `Model` and `get_inputs`, the harness's
own functions), set a persisting L2 window that outlives the L2 flush, or leave a background
thread working while timed calls run. The timing loop binds its primitives before the candidate
loads, so plain rebinding does not reach it; this module reports each such attempt, and the
controller rejects the candidate for it. It is a second line: the controller's own checks do
not rely on it.
"""

from __future__ import annotations

import ctypes
import importlib
import inspect
import os
import resource
import sys
import threading
import time
import types
from typing import Any

# Attributes the harness relies on, by owner (a module or a class, dotted).
WATCHED: dict[str, tuple[str, ...]] = {
    "time": (
        "perf_counter",
        "perf_counter_ns",
        "monotonic",
        "monotonic_ns",
        "time",
        "time_ns",
        "sleep",
        "thread_time",
    ),
    "os": ("write", "read", "_exit", "dup2", "fork"),
    "torch": (
        "manual_seed",
        "randn",
        "rand",
        "randint",
        "empty",
        "zeros",
        "ones",
        "full",
        "tensor",
        "from_numpy",
        "no_grad",
    ),
    "torch.cuda": (
        "synchronize",
        "Event",
        "Stream",
        "current_stream",
        "default_stream",
        "set_stream",
        "empty_cache",
        "manual_seed",
        "manual_seed_all",
    ),
    "torch.cuda.Event": ("record", "elapsed_time", "synchronize", "query", "wait"),
    "torch.Tensor": ("cpu", "numpy", "contiguous", "detach", "cuda", "double", "clone", "copy_"),
    "torch.nn.Module": ("__call__", "_call_impl", "cuda", "eval", "double"),
    "cupy.cuda": ("Event", "Stream", "get_elapsed_time"),
    "cupy.cuda.Event": ("record", "synchronize", "query"),
    "cupy.cuda.runtime": ("deviceSynchronize", "deviceSetLimit", "deviceGetLimit"),
}
# Everything callable in these: the reference's Model runs through them, in the same process.
WATCHED_ALL = ("torch", "torch.nn.functional", "torch.Tensor")
# Our own modules: every function and class in them, and every method of their classes.
OWN = ("protocol", "timing", "runners", "worker", "guard", "rounds")
_MISSING = object()
_CUDA_LIMIT_PERSISTING_L2 = 0x06


def _resolve(dotted: str) -> Any:
    """The module or class a dotted name names, or None where it does not exist here (a module
    already loaded counts under its own name, the worker run as __main__ too)."""
    for module in list(sys.modules.values()):
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.name == dotted:
            return module
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name, None)
        return obj
    return None


def _defined(owner: Any) -> list[str]:
    """Names of the functions and classes a module defines, or of a class's own methods."""
    names = []
    for name, value in vars(owner).items():
        if isinstance(owner, types.ModuleType) and getattr(value, "__module__", None) != (
            owner.__name__
        ):
            continue
        if (
            inspect.isfunction(value)
            or inspect.isclass(value)
            or isinstance(value, staticmethod | classmethod | property)
        ):
            names.append(name)
    return names


def _callables(owner: Any) -> list[str]:
    return [
        name
        for name, value in vars(owner).items()
        if callable(value) and not isinstance(value, types.ModuleType) and not name.startswith("__")
    ]


class Guard:
    """A snapshot of the watched attributes, taken before candidate code loads."""

    def __init__(self, extra: dict[str, Any] | None = None) -> None:
        owners: dict[str, Any] = {}
        for dotted, names in WATCHED.items():
            owner = _resolve(dotted)
            if owner is not None:
                owners[dotted] = (owner, names)
        for dotted in WATCHED_ALL:
            owner = _resolve(dotted)
            if owner is not None:
                owners[f"{dotted} "] = (owner, _callables(owner))
        nn = _resolve("torch.nn")
        for name, cls in vars(nn).items() if nn is not None else ():
            if inspect.isclass(cls) and "forward" in vars(cls):
                owners[f"torch.nn.{name}"] = (cls, ("forward",))
        package = __name__.rsplit(".", 1)[0]
        for short in OWN:
            module = _resolve(f"{package}.{short}")
            if module is None:
                continue
            owners[short] = (module, _defined(module))
            for name in _defined(module):
                cls = getattr(module, name)
                if inspect.isclass(cls) and cls.__module__ == module.__name__:
                    owners[f"{short}.{name}"] = (cls, _defined(cls))
        for label, owner in (extra or {}).items():
            owners[label] = (owner, _defined(owner))
        self._seen = [
            (f"{label.strip()}.{name}", owner, name, inspect.getattr_static(owner, name, _MISSING))
            for label, (owner, names) in owners.items()
            for name in names
        ]
        self._threads_ns = 0
        self._l2_bytes = persisting_l2_bytes()  # the driver's own set-aside is not the candidate's

    def changed(self) -> list[str]:
        """Watched attributes that were rebound or deleted since the snapshot."""
        return [
            label
            for label, owner, name, value in self._seen
            if inspect.getattr_static(owner, name, _MISSING) is not value
        ]

    def start_timing(self) -> None:
        self._threads_ns = background_cpu_ns()

    def tampered(self, timing: bool = False) -> list[str]:
        """Why the harness can no longer be trusted, one line each (empty: nothing seen)."""
        found = [f"{label} was replaced" for label in self.changed()]
        l2 = persisting_l2_bytes()
        if l2 > self._l2_bytes:
            found.append(
                f"a persisting L2 cache window was set up ({l2:,} bytes set aside): "
                "its lines outlive the timing's L2 flush"
            )
        if timing:
            busy_ms = (background_cpu_ns() - self._threads_ns) / 1e6
            if busy_ms > 2.0:
                found.append(
                    f"background threads used {busy_ms:.1f} ms of CPU while timed calls ran"
                )
        return found


def _driver() -> Any:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


_libcuda = _driver()


def persisting_l2_bytes() -> int:
    """The L2 set-aside for persisting accesses in this process's CUDA context (0: none)."""
    if _libcuda is None:
        return 0
    value = ctypes.c_size_t(0)
    if _libcuda.cuCtxGetLimit(ctypes.byref(value), _CUDA_LIMIT_PERSISTING_L2) != 0:
        return 0
    return int(value.value)


def clear_persisting_l2() -> None:
    """No L2 set aside for persisting accesses (the driver may start with some)."""
    if _libcuda is not None:
        _libcuda.cuCtxSetLimit(_CUDA_LIMIT_PERSISTING_L2, ctypes.c_size_t(0))


def reset_persisting_l2() -> None:
    """Demote every persisting L2 line to normal, so the flush can evict it."""
    if _libcuda is not None:
        _libcuda.cuCtxResetPersistingL2Cache()


def background_cpu_ns() -> int:
    """CPU time of every thread but this one and the CUDA driver's own, the dead ones included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    total = int((usage.ru_utime + usage.ru_stime) * 1e9) - time.thread_time_ns()
    me = threading.get_native_id()
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return total
    for tid in tids:
        if int(tid) == me:
            continue
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if not f.read().startswith("cuda"):
                    continue
            total -= _thread_cpu_ns(tid)
        except (OSError, ValueError, IndexError):
            continue
    return total


def _thread_cpu_ns(tid: str) -> int:
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    except OSError:  # no scheduler statistics in this kernel: clock ticks, coarser
        with open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 10**9 // os.sysconf("SC_CLK_TCK")
