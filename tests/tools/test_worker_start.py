"""Where a worker's start goes, by its own account (no GPU needed): the steps it reports, what
the controller keeps of them, and which workers may make their CUDA context beside their
imports (those started for the check under way, never a spare)."""

from __future__ import annotations

import ast
import math
import subprocess
import sys
from pathlib import Path

import pytest

from kernelwright.tools import nvml
from kernelwright.tools.errors import NoGpuError
from kernelwright.tools.pool import Pool
from kernelwright.tools.protocol import START_STEPS
from kernelwright.tools.sandbox import Sandbox, WorkerFailure
from kernelwright.tools.verify import start_steps


def test_only_known_steps_with_sane_times_reach_the_report() -> None:
    """A candidate's worker sends its start too: what it says is kept to the known steps and
    to finite times under a day, and never more than shown."""
    header = {
        "start_ms": {
            "imports": 2700.5,
            "cuda": 310,
            "warm-up": float("nan"),
            "vmm": -1.0,
            "job wait": math.inf,
            "confine": True,  # a bool is not a time
            "interpreter": "80",
            "verdict": 1.0,  # not a step
            "spare wait": 86_400_000.0,
        }
    }
    assert start_steps(header) == {"imports": 2700.5, "cuda": 310.0}
    assert start_steps({"start_ms": [1, 2]}) == {} and start_steps({}) == {}


STEPS = """
import time
from kernelwright.tools.worker import _Steps
steps = _Steps()
time.sleep(0.05)
steps("imports")
time.sleep(0.02)
steps("cuda")
time.sleep(0.02)
steps("cuda")
print(repr(steps.ms))
"""


def test_a_worker_counts_its_start_from_its_interpreters_own() -> None:
    out = subprocess.run([sys.executable, "-c", STEPS], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    ms = ast.literal_eval(out.stdout)  # a dict of floats, as the worker prints it
    assert set(ms) == {"interpreter", "imports", "cuda"} <= set(START_STEPS)
    assert 0 < ms["interpreter"] < 30_000  # this interpreter's start and its imports
    assert 45 <= ms["imports"] < 1_000
    assert 35 <= ms["cuda"] < 1_000  # a step met twice adds up


def test_only_workers_for_the_check_under_way_make_their_context_early(tmp_path: Path) -> None:
    p = Pool("cupy", 1 << 30, str(tmp_path), set(), 60.0)
    try:
        for kind in ("torch-ref", "torch-cand", "cuda"):
            assert "--gpu-now" in p.take(kind, "reference").command  # none spare: a new one
            assert "--gpu-now" not in p.new(kind, "spare").command  # as prestart makes them
        assert "--gpu-now" not in p.take("compile", "compile").command  # no GPU at all
    finally:
        p.close()


def _has_gpu() -> bool:
    try:
        nvml.device_info()
        return True
    except NoGpuError:
        return False


def test_a_worker_making_its_context_early_fails_as_any_other_without_a_gpu() -> None:
    """Where there is no GPU, the early context's thread fails quietly and the worker meets
    CUDA's error where it always did, and says so; with one, its first message carries its
    steps, CUDA's among them."""
    with Sandbox("reference", gpu_now=True) as box:
        box.send({})
        if _has_gpu():
            header, _ = box.receive(120.0, "starting the reference worker")
            assert {"imports", "cuda"} <= set(header["start_ms"]) <= set(START_STEPS)
        else:
            with pytest.raises(WorkerFailure) as failure:
                box.receive(120.0, "starting the reference worker")
            assert "cuda" in failure.value.reason.lower(), failure.value.reason
            assert "kw-cuda-early" not in box.log_tail()  # no traceback from the thread


def test_the_sanitizers_worker_makes_itself_undumpable() -> None:
    """Before the watched child runs a candidate's code beside it, the sanitizer's worker
    takes its /proc files out of reach of same-user processes (PR_SET_DUMPABLE 0): the child
    had reopened /proc/1/fd/N to write a forged report into its result pipe."""
    from kernelwright.tools import worker as worker_module

    code = (
        "import ctypes; from kernelwright.tools import worker; "
        "libc = ctypes.CDLL(None); before = libc.prctl(3, 0, 0, 0, 0); "
        "worker._undumpable(); print(before, libc.prctl(3, 0, 0, 0, 0))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "0"]
    source = Path(worker_module.__file__).read_text()
    assert 'if role == "sanitize":\n            _undumpable()' in source
