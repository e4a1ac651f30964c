"""relu_mlp with the bias and the ReLU fused into one CUDA kernel: torch.mm computes x @ W.T
without the bias, then one pass over the result adds the bias and applies ReLU, where eager
PyTorch wrote the biased result out and read it back for torch.relu."""
import cupy
import torch
import torch.nn as nn

_SRC = r"""
template <typename T>
__device__ void bias_relu(const T* h, const T* bias, T* y, long long n, long long cols) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        T v = h[i] + bias[i % cols];
        y[i] = v > T(0) ? v : T(0);
    }
}
extern "C" __global__ void bias_relu_f32(const float* h, const float* b, float* y, long long n,
                                         long long cols) { bias_relu(h, b, y, n, cols); }
extern "C" __global__ void bias_relu_f64(const double* h, const double* b, double* y, long long n,
                                         long long cols) { bias_relu(h, b, y, n, cols); }
"""
_KERNELS = {
    torch.float32: cupy.RawKernel(_SRC, "bias_relu_f32"),
    torch.float64: cupy.RawKernel(_SRC, "bias_relu_f64"),
}


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)   # same init as Model

    @torch.no_grad()   # DLPack cannot export tensors that require grad; inference only
    def forward(self, x):
        h = torch.mm(x, self.linear.weight.t()).contiguous()   # no bias: the kernel adds it
        bias = self.linear.bias.detach().contiguous()   # a Parameter: DLPack needs no grad
        n, cols = h.numel(), h.shape[1]
        stream = torch.cuda.current_stream(h.device)
        with cupy.cuda.Device(h.device.index), cupy.cuda.ExternalStream(stream.cuda_stream):
            h_cp, b_cp = cupy.from_dlpack(h), cupy.from_dlpack(bias)
            y_cp = cupy.empty_like(h_cp)
            _KERNELS[h.dtype](
                ((n + 255) // 256,), (256,), (h_cp, b_cp, y_cp, cupy.int64(n), cupy.int64(cols))
            )
            return torch.from_dlpack(y_cp)
