// expect: wrong (wrong at) — computes in half precision where the task requires float32
// task: gelu
#include <cuda_fp16.h>

extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half v = __float2half(x[i]);
        __half c = __float2half(0.7978845608028654f), k = __float2half(0.044715f);
        __half inner = __hmul(c, __hadd(v, __hmul(k, __hmul(v, __hmul(v, v)))));
        __half t = __float2half(tanhf(__half2float(inner)));
        y[i] = __half2float(__hmul(__hmul(__float2half(0.5f), v), __hadd(__float2half(1.0f), t)));
    }
}
