# expect: correct (speedup 0-1.15) — locks the GPU's clocks low after each of its calls and unlocks them before the next
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn

try:
    import pynvml

    pynvml.nvmlInit()
    _gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    _low = min(pynvml.nvmlDeviceGetSupportedGraphicsClocks(
        _gpu, max(pynvml.nvmlDeviceGetSupportedMemoryClocks(_gpu))))
except Exception:
    _gpu = None

if _gpu is not None:  # were this to work from inside the worker, the suite must hear of it
    try:
        pynvml.nvmlDeviceSetGpuLockedClocks(_gpu, _low, _low)
    except Exception:
        pass
    else:
        pynvml.nvmlDeviceResetGpuLockedClocks(_gpu)
        raise RuntimeError("the candidate's worker locked the GPU's clocks")


def _lock(low):
    if _gpu is None:
        return
    try:
        if low:
            pynvml.nvmlDeviceSetGpuLockedClocks(_gpu, _low, _low)
        else:
            pynvml.nvmlDeviceResetGpuLockedClocks(_gpu)
    except Exception:
        pass


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        _lock(False)
        y = torch.relu(self.linear(x))
        torch.cuda.synchronize()
        _lock(True)  # whoever runs next runs slow
        return y
