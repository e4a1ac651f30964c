# expect: correct (speedup 0-1.15) — would split each call over every GPU its process sees, and returns zeros where it sees two: it sees one
# task: kernelbench/relu_mlp.py
# On a machine of several GPUs a worker that saw them all could run a share of each call on
# every one of them and read faster than any kernel on the reference's GPU. The zeros make the
# case fail there if a check's workers are ever not pinned to one GPU; where it sees one, it is
# the problem's own forward.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.relu(self.linear(x))
        if torch.cuda.device_count() > 1:  # it could have used the others: it says so
            return torch.zeros_like(y)
        return y
