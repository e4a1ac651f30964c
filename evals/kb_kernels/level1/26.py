"""KernelBench level 1, problem 26 (GELU): a hand-written CUDA kernel, compiled by CuPy (NVRTC),
over the tensors through DLPack. Exact GELU, x * Phi(x), as torch.nn.functional.gelu."""
import cupy
import torch
import torch.nn as nn

_SRC = r"""
extern "C" __global__ void gelu(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    long long stride = (long long)gridDim.x * blockDim.x * 4;
    for (; i + 3 < n; i += stride) {
        float4 v = *reinterpret_cast<const float4*>(x + i);
        float4 r;
        r.x = 0.5f * v.x * (1.0f + erff(v.x * 0.70710678118654752f));
        r.y = 0.5f * v.y * (1.0f + erff(v.y * 0.70710678118654752f));
        r.z = 0.5f * v.z * (1.0f + erff(v.z * 0.70710678118654752f));
        r.w = 0.5f * v.w * (1.0f + erff(v.w * 0.70710678118654752f));
        *reinterpret_cast<float4*>(y + i) = r;
    }
    for (; i < n; ++i) {  // the tail, in the thread that reached it
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}
"""
_KERNEL = cupy.RawKernel(_SRC, "gelu")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    @torch.no_grad()
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n == 0:
            return y
        stream = torch.cuda.current_stream(x.device)
        with cupy.cuda.Device(x.device.index), cupy.cuda.ExternalStream(stream.cuda_stream):
            xs, ys = cupy.from_dlpack(x), cupy.from_dlpack(y)
            blocks = min((n // 4 + 255) // 256 + 1, 132 * 32)
            _KERNEL((blocks,), (256,), (xs, ys, cupy.int64(n)))
        return y
