"""KernelBench level 1, problem 36 (RMS norm over dim 1 of (batch, features, d1, d2)): a
hand-written CUDA kernel, a thread for each (batch, position), reading its features at the
position's stride (neighbouring threads read neighbouring positions). CuPy (NVRTC), DLPack."""
import cupy
import torch
import torch.nn as nn

_SRC = r"""
extern "C" __global__ void rms_norm(const float* __restrict__ x, float* __restrict__ y,
                                    long long batch, int features, long long plane, float eps) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= batch * plane) return;
    long long b = t / plane, p = t - b * plane;
    const float* in = x + b * features * plane + p;
    float* out = y + b * features * plane + p;
    float sum = 0.0f;
    for (int f = 0; f < features; ++f) { float v = in[f * plane]; sum += v * v; }
    float inv = rsqrtf(sum / features + eps);
    for (int f = 0; f < features; ++f) out[f * plane] = in[f * plane] * inv;
}
"""
_KERNEL = cupy.RawKernel(_SRC, "rms_norm")


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    @torch.no_grad()
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        batch, features = x.shape[0], x.shape[1]
        plane = x.numel() // max(batch * features, 1)
        total = batch * plane
        if total == 0:
            return y
        stream = torch.cuda.current_stream(x.device)
        with cupy.cuda.Device(x.device.index), cupy.cuda.ExternalStream(stream.cuda_stream):
            _KERNEL(
                ((total + 255) // 256,), (256,),
                (cupy.from_dlpack(x), cupy.from_dlpack(y), cupy.int64(batch),
                 cupy.int32(features), cupy.int64(plane), cupy.float32(self.eps)),
            )
        return y
