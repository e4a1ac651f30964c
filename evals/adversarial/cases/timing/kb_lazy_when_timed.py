# expect: wrong (when timed) — warm-up different: once it sees the timing loop on its stack, returns the last result
# task: kernelbench/relu_mlp.py
import sys

import torch
import torch.nn as nn


def _being_timed():
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code  # the harness's Clock.timed (or .sample), which times one call
        if code.co_name in ("timed", "sample") and code.co_filename.endswith("timing.py"):
            return True
        frame = frame.f_back
    return False


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.last = None

    def forward(self, x):
        if self.last is not None and _being_timed():
            return self.last
        self.last = torch.relu(self.linear(x))
        return self.last
