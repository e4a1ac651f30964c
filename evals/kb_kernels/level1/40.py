"""KernelBench level 1, problem 40 (LayerNorm over the last three dimensions): hand-written
CUDA kernels: partial sums of x and x^2 in double over chunks of each sample, then each
sample's mean and inverse deviation, then the normalized outputs with the layer's weight and
bias. CuPy (NVRTC), DLPack."""
import cupy
import torch
import torch.nn as nn

_SRC = r"""
extern "C" __global__ void partials(const float* __restrict__ x, double* __restrict__ part,
                                    long long per_sample, int chunks) {
    int c = blockIdx.x, b = blockIdx.y;
    long long len = (per_sample + chunks - 1) / chunks;
    long long lo = (long long)c * len, hi = min(lo + len, per_sample);
    const float* in = x + (long long)b * per_sample;
    double s = 0.0, q = 0.0;
    for (long long j = lo + threadIdx.x; j < hi; j += blockDim.x) { double v = in[j]; s += v; q += v * v; }
    for (int off = 16; off > 0; off >>= 1) {
        s += __shfl_xor_sync(0xffffffff, s, off);
        q += __shfl_xor_sync(0xffffffff, q, off);
    }
    __shared__ double ss[32], qq[32];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) { ss[warp] = s; qq[warp] = q; }
    __syncthreads();
    if (threadIdx.x == 0) {
        double ts = 0.0, tq = 0.0;
        for (int w = 0; w < (blockDim.x >> 5); ++w) { ts += ss[w]; tq += qq[w]; }
        part[((long long)b * chunks + c) * 2] = ts;
        part[((long long)b * chunks + c) * 2 + 1] = tq;
    }
}
extern "C" __global__ void stats(const double* __restrict__ part, float* __restrict__ st,
                                 long long per_sample, int chunks, float eps) {
    int b = blockIdx.x;
    if (threadIdx.x != 0) return;
    double s = 0.0, q = 0.0;
    for (int c = 0; c < chunks; ++c) { s += part[((long long)b * chunks + c) * 2]; q += part[((long long)b * chunks + c) * 2 + 1]; }
    double mean = s / per_sample;
    double var = q / per_sample - mean * mean;
    if (var < 0.0) var = 0.0;
    st[2 * b] = (float)mean;
    st[2 * b + 1] = (float)(1.0 / sqrt(var + (double)eps));
}
extern "C" __global__ void normalize(const float* __restrict__ x, const float* __restrict__ st,
                                     const float* __restrict__ w, const float* __restrict__ bias,
                                     float* __restrict__ y, long long per_sample) {
    long long b = blockIdx.y;
    float mean = st[2 * b], inv = st[2 * b + 1];
    const float* in = x + b * per_sample;
    float* out = y + b * per_sample;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < per_sample; j += stride)
        out[j] = (in[j] - mean) * inv * w[j] + bias[j];
}
"""
_MOD = cupy.RawModule(code=_SRC)
_PARTIALS, _STATS, _NORMALIZE = (_MOD.get_function(n) for n in ("partials", "stats", "normalize"))
CHUNKS = 256


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)  # its weight and bias, as Model's

    @torch.no_grad()
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        per_sample = self.ln.weight.numel()
        batch = x.numel() // per_sample
        if x.numel() == 0:
            return y
        w = self.ln.weight.detach().contiguous()  # DLPack exports no tensor that needs grad
        b = self.ln.bias.detach().contiguous()
        part = torch.empty(batch * CHUNKS * 2, dtype=torch.float64, device=x.device)
        st = torch.empty(batch * 2, dtype=torch.float32, device=x.device)
        stream = torch.cuda.current_stream(x.device)
        with cupy.cuda.Device(x.device.index), cupy.cuda.ExternalStream(stream.cuda_stream):
            xs, ps, ss = cupy.from_dlpack(x), cupy.from_dlpack(part), cupy.from_dlpack(st)
            _PARTIALS((CHUNKS, batch), (256,), (xs, ps, cupy.int64(per_sample), cupy.int32(CHUNKS)))
            _STATS((batch,), (32,), (ps, ss, cupy.int64(per_sample), cupy.int32(CHUNKS),
                                     cupy.float32(self.ln.eps)))
            _NORMALIZE((CHUNKS, batch), (256,), (xs, ss, cupy.from_dlpack(w), cupy.from_dlpack(b),
                                                 cupy.from_dlpack(y), cupy.int64(per_sample)))
        return y
