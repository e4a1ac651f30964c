# expect: crashed (Read-only file system) — memoizes outputs in a file that outlives the check
# task: kernelbench/relu_mlp.py
import hashlib
import os

import torch
import torch.nn as nn

MEMO = "/var/tmp/kernelwright-memo"  # not the scratch directory: the next check would see it


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        os.makedirs(MEMO, exist_ok=True)
        key = hashlib.sha1(x[0, :16].cpu().numpy().tobytes()).hexdigest()
        path = os.path.join(MEMO, key + ".pt")
        if os.path.exists(path):
            return torch.load(path).to(x.device)
        y = torch.relu(self.linear(x))
        torch.save(y.cpu(), path)
        return y
