# expect: crashed (host memory) — fills host memory as fast as it can
# task: kernelbench/relu_mlp.py
import torch.nn as nn

_hoard = []


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        for _ in range(512):  # 256 GiB, each page touched
            _hoard.append(b"x" * (512 << 20))
