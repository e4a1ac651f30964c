# expect: correct (speedup 0.85-1.15) — rebinds the problem's Model.forward in its own process: the reference is timed elsewhere
# task: kernelbench/relu_mlp.py
import sys
import time

import torch
import torch.nn as nn

_problem = sys.modules.get("kw_problem")  # the harness loaded the problem under this name
if _problem is not None:
    _forward = _problem.Model.forward

    def _slow_forward(self, x):
        time.sleep(0.001)
        return _forward(self, x)

    _problem.Model.forward = _slow_forward


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
