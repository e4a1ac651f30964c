"""The verifier's workers: a fresh process for every role of every check, and the spares that
make "fresh" cheap.

Spares by what they are ready for: "cuda" (either role of a CUDA task), "compile", and for
KernelBench problems "torch-ref" and "torch-cand" (torch imported; the candidate's with its own
copy of the harness's kernel cache, never the shared one). A spare is never reused: it serves
one role of one check and dies with it.

A spare does its host work (confinement, imports) as soon as it starts, and touches the GPU
only when let on (`release`); the verifier lets spares on only outside timed rounds, and waits
(`settle`) for any still warming up before rounds begin. Where the machine has CPUs beyond the
two the timing uses, the next check's spares start as a check starts, on those other CPUs;
else as it ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from . import fit
from .sandbox import Sandbox

if TYPE_CHECKING:
    from .verify_options import VerifyOptions

WANTED = {
    "cuda": {"cuda": 2, "compile": 1},
    "kernelbench": {"torch-ref": 1, "torch-cand": 1},
    "cpp": {"cuda": 2, "compile": 1},  # its kernels run as a CUDA task's do
}


def timing_cpus() -> set[int]:
    """The two CPUs both timed workers run on, in turn (none pinned on a machine of fewer than
    4): the highest for the thread that times the calls, the other for their other threads
    (Sandbox.pin). The same CPU for both workers' timing threads: a CPU's speed drifts (on a
    virtual machine, by 15% and more for seconds at a time, with whatever else its host runs),
    and two workers timed on two CPUs would each carry their own CPU's drift into the ratio;
    on one, whatever it is falls on both alike, batch by batch. The worker not being timed is
    paused or waiting for a message."""
    cpus = sorted(os.sched_getaffinity(0))
    return set(cpus[-2:]) if len(cpus) >= 4 else set()


@contextlib.contextmanager
def controller_off(cpus: set[int], others: set[int] | None = None) -> Iterator[None]:
    """While timed rounds run, every thread of this process (the controller, which polls for
    replies without sleeping) runs off the timed workers' CPUs and their cores, and back where
    it was after: a timed worker never shares its CPU, or its core, with the controller, which
    the scheduler could put beside one worker and not the other. `others`: other_cpus(cpus),
    where known."""
    if not cpus:
        yield
        return
    saved = {}
    for tid in _threads():
        with contextlib.suppress(OSError):
            saved[tid] = os.sched_getaffinity(tid)
    others = other_cpus(cpus) if others is None else others
    try:
        if others:
            for tid in saved:
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(tid, others)
        yield
    finally:
        for tid, mask in saved.items():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, mask)


def other_cpus(cpus: set[int]) -> set[int]:
    """This process's CPUs off `cpus` and off the cores they are on (if that leaves none, only
    off `cpus`): where spares and the controller run while workers are timed."""
    mine = set(os.sched_getaffinity(0)) - cpus
    return (mine - _siblings(cpus)) or mine


def _threads() -> list[int]:
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


def _siblings(cpus: set[int]) -> set[int]:
    """The hyperthreads that share a core with any of `cpus` (from sysfs; none known: none)."""
    out: set[int] = set()
    for cpu in cpus:
        path = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
        with contextlib.suppress(OSError, ValueError):
            out |= _cpu_list(path.read_text())
    return out


def _cpu_list(text: str) -> set[int]:
    """CPUs from a sysfs list such as "3,11" or "0-3"."""
    out: set[int] = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def for_options(o: VerifyOptions) -> Pool:
    """The pool a Verifier with these options uses: its timing CPUs, and KernelBench's
    processes a side (as many as asked, fewer where host memory is short)."""
    pin = timing_cpus() if o.pin_cpus else set()
    processes = fit.timing_processes(o.timing_processes, fit.host_available_bytes())
    return Pool(
        o.backend,
        o.host_memory_bytes,
        o.cache_dir,
        pin,
        o.start_timeout_s,
        {"kernelbench": processes},
    )


class Pool:
    def __init__(
        self,
        backend: str,
        host_memory_bytes: int,
        cache_dir: str | None,
        pin: set[int],
        start_timeout_s: float,
        processes: dict[str, int] | None = None,
    ) -> None:
        self.backend, self.memory, self.pin = backend, host_memory_bytes, pin
        # per task kind, the workers of each role a check takes (its timing's processes a side)
        self.processes = processes or {}
        self.others = other_cpus(pin) if pin else set()  # where spares and the controller go
        self.start_timeout_s = start_timeout_s
        self._own_cache = cache_dir is None
        # CuPy's cache of the harness's own kernels, written only by workers that run none of
        # a candidate's host code
        self.cache = Path(cache_dir or tempfile.mkdtemp(prefix="kw-cupy-cache-"))
        self._spares: dict[str, list[Sandbox]] = {}

    def close(self) -> None:
        """Stop the spares and remove a cache this pool made."""
        for boxes in self._spares.values():
            for box in boxes:
                box.close()
            boxes.clear()
        if self._own_cache:
            shutil.rmtree(self.cache, ignore_errors=True)

    def new(
        self, kind: str, label: str, cpus: set[int] | None = None, now: bool = False
    ) -> Sandbox:
        """A worker of this kind, not started. `now`: for the check under way (its CUDA
        context made beside its imports); a spare waits to be let onto the GPU."""
        if kind == "compile":
            command = [
                sys.executable, "-m", "kernelwright.tools.worker", "--compile-only", self.backend,
                *(["--cpus", ",".join(map(str, sorted(cpus)))] if cpus else []),
            ]  # fmt: skip
            return Sandbox(label, self.memory, command=command)
        if kind == "torch-cand":
            return Sandbox(  # the candidate's Python runs in it: its pauses are watched
                label, self.memory, seed_cache=self.cache, warm_torch=True, cpus=cpus,
                gpu_now=now, host_code=True,
            )  # fmt: skip
        torch = kind == "torch-ref"
        return Sandbox(
            label, self.memory, cupy_cache=self.cache, warm_torch=torch, cpus=cpus, gpu_now=now
        )

    def take(self, kind: str, label: str) -> Sandbox:
        """A fresh worker for one check: a spare if one is up, else a new process."""
        pool = self._spares.setdefault(kind, [])
        while pool:
            box = pool.pop()
            if box.alive():
                box.label = label
                return box
            box.close()
        return self.new(kind, label, now=True)

    def prestart(self, task_kind: str, early: bool = False) -> None:
        """Spares for a check of this kind ("cuda" or "kernelbench"); `early`: as a check
        starts, only where there are CPUs to spare beside the timing's."""
        others = self.others
        if early and not others:
            return
        self._fill(task_kind, others or None, now=False)

    def head_start(self, task_kind: str) -> None:
        """The workers a first check of this kind takes, started now, as the door that asked
        goes on loading (a one-off `kernelwright check` spent 0.8 s of its own start-up before
        its first worker was asked for, an H100, twenty-second session). Each is what `take`
        would start (for the check under way: unpinned, its CUDA context made beside its
        imports) and is handed out by it; what the check does not take is stopped with the
        pool. A door that has no GPU never calls this."""
        self._fill(task_kind, None, now=True)

    def _fill(self, task_kind: str, cpus: set[int] | None, now: bool) -> None:
        """Started, up to what a check of this kind takes of each worker kind."""
        for kind, count in WANTED[task_kind].items():
            pool = self._spares.setdefault(kind, [])
            while len(pool) < count * self.processes.get(task_kind, 1):
                pool.append(self.new(kind, "spare", cpus, now=now).start())

    def release(self) -> None:
        """Let every spare onto the GPU (after a check's timing, or as it ends)."""
        for pool in self._spares.values():
            for box in pool:
                box.go()

    def settle(self) -> None:
        """Before timing: every spare let onto the GPU has finished warming up (one that fails
        is dropped)."""
        for kind, pool in self._spares.items():
            self._spares[kind] = [b for b in pool if b.settle(self.start_timeout_s)]
