# expect: crashed (out of memory) — takes all the GPU's memory and keeps it
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn

_hoard = []


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        while True:  # 1 GiB at a time until the allocator gives up
            _hoard.append(torch.empty(1 << 28, dtype=torch.float32, device=x.device))
