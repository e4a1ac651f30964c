# expect: correct — an honest candidate: torch.addmm, then a CuPy (NVRTC) relu kernel shared through DLPack
# task: kernelbench/relu_mlp.py
"""KernelBench-style candidate for relu_mlp.py: torch.addmm for the linear layer,
then a small CUDA relu kernel compiled by CuPy (NVRTC), shared through DLPack."""
import cupy
import torch
import torch.nn as nn

_SRC = r"""
extern "C" __global__ void relu(const float* x, float* y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
extern "C" __global__ void relu_f64(const double* x, double* y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmax(x[i], 0.0);
}
"""
_KERNELS = {
    torch.float32: cupy.RawKernel(_SRC, "relu"),
    torch.float64: cupy.RawKernel(_SRC, "relu_f64"),
}


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)   # same init as Model

    @torch.no_grad()   # DLPack cannot export tensors that require grad; inference only
    def forward(self, x):
        h = torch.addmm(self.linear.bias, x, self.linear.weight.t()).contiguous()
        n = h.numel()
        stream = torch.cuda.current_stream(h.device)
        with cupy.cuda.Device(h.device.index), cupy.cuda.ExternalStream(stream.cuda_stream):
            h_cp = cupy.from_dlpack(h)
            y_cp = cupy.empty_like(h_cp)
            _KERNELS[h.dtype](((n + 255) // 256,), (256,), (h_cp, y_cp, cupy.int64(n)))
            return torch.from_dlpack(y_cp)
