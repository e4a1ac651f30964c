// gelu, faster: float4-vectorized grid-stride loop (16-byte loads/stores),
// scalar tail for n % 4 and a scalar fallback if x or y is not 16-byte aligned.
// Knobs (kernelwright tune sets them with -D; the launch in faster.toml follows them):
// BLOCK threads per block, ITEMS float4s in flight per thread per step (loads first).
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif

__device__ __forceinline__ float gelu_f(float v)
{
    float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + tanhf(inner));
}

extern "C" __global__ void gelu(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    bool aligned = ((((unsigned long long)x) | ((unsigned long long)y)) & 15ull) == 0;
    int n4 = aligned ? (n >> 2) : 0;

    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int base = tid; base < n4; base += stride * ITEMS) {
        float4 v[ITEMS];
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            int i = base + j * stride;
            if (i < n4) v[j] = x4[i];
        }
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            int i = base + j * stride;
            if (i < n4) {
                v[j].x = gelu_f(v[j].x);
                v[j].y = gelu_f(v[j].y);
                v[j].z = gelu_f(v[j].z);
                v[j].w = gelu_f(v[j].w);
                y4[i] = v[j];
            }
        }
    }
    for (int i = 4 * n4 + tid; i < n; i += stride) {
        y[i] = gelu_f(x[i]);
    }
}
