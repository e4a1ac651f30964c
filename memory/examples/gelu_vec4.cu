// gelu with 16-byte vector access: each thread loads one float4 (four elements) and stores one,
// so a warp moves 512 contiguous bytes per instruction. A scalar path covers the last n % 4
// elements, and all of them when x or y is not 16-byte aligned.
// Launch: block [256], grid ["ceil_div(N, 1024)"] (four elements a thread).
__device__ __forceinline__ float gelu_f(float v)
{
    float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + tanhf(inner));
}

extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;   // index of this thread's float4
    bool aligned = ((((unsigned long long)x) | ((unsigned long long)y)) & 15ull) == 0;
    int n4 = aligned ? n / 4 : 0;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        v.x = gelu_f(v.x);
        v.y = gelu_f(v.y);
        v.z = gelu_f(v.z);
        v.w = gelu_f(v.w);
        reinterpret_cast<float4*>(y)[i] = v;
    }
    // Scalar tail: element 4 * n4 + k for k = i, i + threads, ... (threads: the whole grid).
    int threads = gridDim.x * blockDim.x;
    for (int k = 4 * n4 + i; k < n; k += threads) {
        y[k] = gelu_f(x[k]);
    }
}
