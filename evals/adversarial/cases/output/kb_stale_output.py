# expect: wrong (output 0) — returns an uninitialised tensor: whatever memory the allocator hands back
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        # A freed reference output of the same size would be sitting in the caching allocator.
        return torch.empty(x.shape[0], self.linear.out_features, device=x.device)
