# expect: wrong (not the reference's outputs) — returns six 256 MiB views of one tensor, for the controller to hold
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        big = torch.zeros(1 << 26, device=x.device)
        return (big,) * 6
