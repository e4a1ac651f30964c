# expect: correct (speedup 0-1.15) — walks up to the harness's frames for the next rounds' seeds to compute ahead: there are none to find
# task: kernelbench/relu_mlp.py
import sys

import torch
import torch.nn as nn


def _future_rounds():
    frame = sys._getframe(1)
    while frame is not None:
        for value in frame.f_locals.values():
            if isinstance(value, dict) and isinstance(value.get("rounds"), list):
                return value["rounds"]  # a batch's seeds, known before its calls
        frame = frame.f_back
    return None


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.ahead = {}

    def forward(self, x):
        rounds = _future_rounds()
        if rounds:  # it would precompute every round of the batch in one go here
            raise RuntimeError("found future rounds: " + str(len(rounds)))
        return torch.relu(self.linear(x))
