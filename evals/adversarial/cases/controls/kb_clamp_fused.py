# expect: correct (speedup >= 1.05) — honest: clamp and halving fused in one CuPy RawKernel (four floats a thread, half the memory traffic), right on any input
# task: kernelbench/clamp_rows.py
"""KernelBench-style candidate for clamp_rows.py: one CUDA kernel (CuPy, NVRTC) that clamps
and halves as it goes, four floats a thread where the buffers allow it, into an output torch
allocates. Every timed call's inputs are partly scaled where the clamp bites: an honest kernel
keeps its speed there. (A CuPy ElementwiseKernel doing the same read 0.80x of PyTorch's two
passes outside the harness on an H200, 0.637 against 0.509 ms: it is not a fast kernel.)
This one read 1.160x, 1.314x and 1.099x in three suite runs on an H200 (twenty-eighth
session): faster, by less than its halved traffic suggests (1.3x, the expectation first
written before it had run). It is held to what it shows, faster than PyTorch's two passes."""
import cupy
import torch
import torch.nn as nn

_SRC = r"""
extern "C" __global__ void clamp_half4(const float4* x, float4* y, long long n4) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = x[i];
        v.x = fminf(fmaxf(v.x, -8.0f), 8.0f) * 0.5f;
        v.y = fminf(fmaxf(v.y, -8.0f), 8.0f) * 0.5f;
        v.z = fminf(fmaxf(v.z, -8.0f), 8.0f) * 0.5f;
        v.w = fminf(fmaxf(v.w, -8.0f), 8.0f) * 0.5f;
        y[i] = v;
    }
}
extern "C" __global__ void clamp_half(const float* x, float* y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fminf(fmaxf(x[i], -8.0f), 8.0f) * 0.5f;
}
"""
_VEC = cupy.RawKernel(_SRC, "clamp_half4")
_ONE = cupy.RawKernel(_SRC, "clamp_half")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    @torch.no_grad()
    def forward(self, x):
        if x.dtype != torch.float32 or not x.is_cuda:  # not this kernel's: PyTorch's own
            return torch.clamp(x, -8.0, 8.0) * 0.5
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n == 0:
            return y
        vec = n % 4 == 0 and x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0
        count, kernel = (n // 4, _VEC) if vec else (n, _ONE)
        stream = torch.cuda.current_stream(x.device)
        with cupy.cuda.Device(x.device.index), cupy.cuda.ExternalStream(stream.cuda_stream):
            args = (cupy.from_dlpack(x), cupy.from_dlpack(y), cupy.int64(count))
            kernel(((count + 255) // 256,), (256,), args)
        return y
