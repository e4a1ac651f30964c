"""KernelBench level 1, problem 48 (mean over one dimension): a hand-written CUDA kernel, a
thread for each output element, summing (in double) along the reduced dimension at its stride (neighbouring
threads read neighbouring elements). CuPy (NVRTC), DLPack."""
import cupy
import torch
import torch.nn as nn

_SRC = r"""
extern "C" __global__ void mean_dim(const float* __restrict__ x, float* __restrict__ y,
                                    long long outer, long long reduce, long long inner) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= outer * inner) return;
    long long o = t / inner, i = t - o * inner;
    const float* in = x + o * reduce * inner + i;
    double sum = 0.0;
    for (long long r = 0; r < reduce; ++r) sum += in[r * inner];
    y[t] = (float)(sum / (double)reduce);
}
"""
_KERNEL = cupy.RawKernel(_SRC, "mean_dim")


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    @torch.no_grad()
    def forward(self, x):
        x = x.contiguous()
        dim = self.dim % x.dim()
        shape = list(x.shape)
        reduce = shape[dim]
        outer = 1
        for s in shape[:dim]:
            outer *= s
        inner = 1
        for s in shape[dim + 1:]:
            inner *= s
        y = torch.empty(shape[:dim] + shape[dim + 1:], dtype=x.dtype, device=x.device)
        total = outer * inner
        if total == 0:
            return y
        stream = torch.cuda.current_stream(x.device)
        with cupy.cuda.Device(x.device.index), cupy.cuda.ExternalStream(stream.cuda_stream):
            _KERNEL(
                ((total + 255) // 256,), (256,),
                (cupy.from_dlpack(x), cupy.from_dlpack(y), cupy.int64(outer),
                 cupy.int64(reduce), cupy.int64(inner)),
            )
        return y
