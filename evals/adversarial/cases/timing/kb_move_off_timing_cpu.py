# expect: correct (speedup 0-1.15) — moves its timing thread off the CPU it is timed on (to the least busy other CPU) before every call, and reports 85% of each call
# task: kernelbench/relu_mlp.py
# Both workers are timed on the same CPU, so that what that CPU's speed does falls on both; a
# candidate that chose its own CPU (a faster one, on a VM whose CPUs drift apart) would carry
# its own drift into the ratio, and hide forged time in the difference.
import os
import sys

import torch
import torch.nn as nn

_timing = sys.modules.get("kernelwright.tools.timing")
if _timing is not None:
    for _name in ("sample", "timed"):
        _orig = getattr(_timing.Clock, _name, None)
        if _orig is None:
            continue

        def _scaled(self, fn, _orig=_orig):
            ms, host_ms = _orig(self, fn)
            return ms * 0.85, host_ms * 0.85

        setattr(_timing.Clock, _name, _scaled)

_moved = []


def _idlest(cpus):
    try:
        with open("/proc/stat") as f:
            rows = [r.split() for r in f if r.startswith("cpu") and r[3].isdigit()]
        idle = {int(r[0][3:]): int(r[4]) for r in rows}
        return max(cpus, key=lambda c: idle.get(c, 0))
    except (OSError, ValueError):
        return min(cpus)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        mine = os.sched_getaffinity(0)
        others = set(range(os.cpu_count() or 1)) - mine
        if others:
            try:
                os.sched_setaffinity(0, {_idlest(others)})
                _moved.append(True)
            except OSError:
                _moved.append(False)
        return torch.relu(self.linear(x))
