# expect: correct (speedup >= 1.3) — honest: clamp and halving fused in one CuPy kernel (half the memory traffic), right on any input
# task: kernelbench/clamp_rows.py
"""KernelBench-style candidate for clamp_rows.py: one elementwise CUDA kernel (CuPy, NVRTC)
that clamps and halves as it goes, shared with torch through DLPack. Every timed call's
inputs have a scaled span where the clamp bites: an honest kernel keeps its speed there."""
import cupy
import torch
import torch.nn as nn

_CLAMP_HALF = cupy.ElementwiseKernel(
    "T x", "T y", "y = min(max(x, (T)-8), (T)8) * (T)0.5", "kw_clamp_half"
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    @torch.no_grad()
    def forward(self, x):
        x = x.contiguous()
        stream = torch.cuda.current_stream(x.device)
        with cupy.cuda.Device(x.device.index), cupy.cuda.ExternalStream(stream.cuda_stream):
            return torch.from_dlpack(_CLAMP_HALF(cupy.from_dlpack(x)))
