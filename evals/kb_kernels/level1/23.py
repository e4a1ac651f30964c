"""KernelBench level 1, problem 23 (softmax over dim 1 of a 2-D tensor): a hand-written CUDA
kernel, one block a row: an online max and sum in one pass, then the outputs. CuPy (NVRTC),
through DLPack."""
import cupy
import torch
import torch.nn as nn

_SRC = r"""
#define NEG_INF __int_as_float(0xff800000)
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    float mx = fmaxf(m, m2);
    if (mx == NEG_INF) { m = mx; s = 0.0f; return; }
    s = s * expf(m - mx) + s2 * expf(m2 - mx);
    m = mx;
}
extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y,
                                        long long cols) {
    const float* row = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    float m = NEG_INF, s = 0.0f;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = row[j];
        if (v > m) { s = s * expf(m - v) + 1.0f; m = v; } else { s += expf(v - m); }
    }
    for (int off = 16; off > 0; off >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffff, m, off);
        float s2 = __shfl_xor_sync(0xffffffff, s, off);
        merge(m, s, m2, s2);
    }
    __shared__ float ms[32], ss[32];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) { ms[warp] = m; ss[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        int nw = blockDim.x >> 5;
        m = lane < nw ? ms[lane] : NEG_INF;
        s = lane < nw ? ss[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) {
            float m2 = __shfl_xor_sync(0xffffffff, m, off);
            float s2 = __shfl_xor_sync(0xffffffff, s, off);
            merge(m, s, m2, s2);
        }
        if (lane == 0) { ms[0] = m; ss[0] = s; }
    }
    __syncthreads();
    m = ms[0];
    float inv = 1.0f / ss[0];
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) out[j] = expf(row[j] - m) * inv;
}
"""
_KERNEL = cupy.RawKernel(_SRC, "softmax_rows")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    @torch.no_grad()
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        if x.numel() == 0:
            return y
        stream = torch.cuda.current_stream(x.device)
        with cupy.cuda.Device(x.device.index), cupy.cuda.ExternalStream(stream.cuda_stream):
            _KERNEL((rows,), (1024,), (cupy.from_dlpack(x), cupy.from_dlpack(y), cupy.int64(cols)))
        return y
