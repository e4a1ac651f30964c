# expect: wrong (during timing) — skips its work in a worker that never ran a trial (one shape only, 3+ calls): timing-only processes
# task: kernelbench/relu_mlp.py
# Each side is timed in several processes; only the first runs the trials, the others only
# time. A worker that has seen a single input shape, again and again, is one of those: here
# the candidate returns relu(bias) without the matmul. Every timed output, in every process,
# is sketched against the reference's on the same inputs, so the skipped calls are wrong in
# whichever process they ran. (On a host with under 16 GiB free, KernelBench is timed in one
# process a side; this candidate then never skips, and reads correct.)
import torch
import torch.nn as nn

_shapes: dict[tuple[int, ...], int] = {}


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        shape = tuple(x.shape)
        _shapes[shape] = _shapes.get(shape, 0) + 1
        if len(_shapes) == 1 and _shapes[shape] >= 3:  # never a trial's size: timing only
            return torch.relu(self.linear.bias).expand(x.shape[0], -1).contiguous()
        return torch.relu(self.linear(x))
