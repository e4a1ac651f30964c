# expect: wrong — starts a detached daemon (own session) meant to outlive the check, then returns zeros
# task: kernelbench/relu_mlp.py
import subprocess
import sys

import torch
import torch.nn as nn

subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(3600)", "kw-adversarial-daemon"],
    start_new_session=True,  # leaves the worker's process group
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.zeros(x.shape[0], self.linear.out_features, device=x.device)
