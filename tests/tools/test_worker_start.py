"""Where a worker's start goes, by its own account (no GPU needed): the steps it reports and
what the controller keeps of them."""

from __future__ import annotations

import math
import subprocess
import sys

from kernelwright.tools.protocol import START_STEPS
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
    ms = eval(out.stdout)  # a dict of floats, as the worker prints it
    assert set(ms) == {"interpreter", "imports", "cuda"} <= set(START_STEPS)
    assert 0 < ms["interpreter"] < 30_000  # this interpreter's start and its imports
    assert 45 <= ms["imports"] < 1_000
    assert 35 <= ms["cuda"] < 1_000  # a step met twice adds up
