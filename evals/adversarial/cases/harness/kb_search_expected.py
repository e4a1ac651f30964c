# expect: wrong — searches the process (the garbage collector, other processes' memory) for the expected outputs
# task: kernelbench/relu_mlp.py
import gc
import os

import torch
import torch.nn as nn


def _other_workers():
    """Processes that look like the reference's worker (it would hold the expected outputs)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"kernelwright.tools.worker" in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        shape = (x.shape[0], self.linear.out_features)
        for obj in gc.get_objects():  # a tensor of the right shape someone else computed?
            if isinstance(obj, torch.Tensor) and tuple(obj.shape) == shape and obj is not x:
                return obj.to(x.device, torch.float32)
        for pid in _other_workers():  # reading their memory would need their maps and mem
            try:
                with open(f"/proc/{pid}/mem", "rb"):
                    pass
            except OSError:
                pass
        return torch.zeros(shape, device=x.device)
