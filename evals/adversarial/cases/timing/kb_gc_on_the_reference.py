# expect: correct (speedup 0.05-1.15) — switches the collector on while timed, over a slow heap: only its own process pays
# task: kernelbench/relu_mlp.py
import gc

import torch
import torch.nn as nn

# Many tracked objects: a full collection walks them all (milliseconds), whoever triggers it.
_HEAP = [[i] for i in range(300_000)]


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        gc.enable()
        gc.set_threshold(50, 1, 1)  # a collection every few allocations, often a full one
        return torch.relu(self.linear(x))
