# expect: implausible (longer than its samples explain) — 16 threads named like the CUDA driver's burn CPU, to slow the reference's dispatch: they starve only their own process
# task: kernelbench/relu_mlp.py
import threading

import torch
import torch.nn as nn


def _burn():
    while True:
        sum(range(10_000))


for _ in range(16):
    threading.Thread(target=_burn, name="cuda-EvtHandlr", daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
