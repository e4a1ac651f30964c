// Technique: vectorized memory access. 16-byte float4 loads and stores move four floats per
// instruction; a scalar tail handles the last n % 4 elements (and everything when a pointer is
// not 16-byte aligned); a grid-stride loop lets any grid cover any n.
// Computes y[i] = alpha * x[i] for i < n.
// Launch: block [256], grid ["min(ceil_div(N, 4 * 256), 4096)"].
extern "C" __global__ void copy_scale(const float* __restrict__ x, float* __restrict__ y,
                                      float alpha, int n)
{
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t count = n > 0 ? (size_t)n : 0;

    // float4 needs 16-byte aligned addresses: take the vector path only when both pointers are.
    const bool aligned =
        (((unsigned long long)x | (unsigned long long)y) & 15ull) == 0;
    size_t done = 0;  // elements the vector path wrote
    if (aligned) {
        const size_t count4 = count / 4;
        const float4* x4 = reinterpret_cast<const float4*>(x);
        float4* y4 = reinterpret_cast<float4*>(y);
        for (size_t i = tid; i < count4; i += stride) {
            float4 v = x4[i];
            v.x *= alpha;
            v.y *= alpha;
            v.z *= alpha;
            v.w *= alpha;
            y4[i] = v;
        }
        done = count4 * 4;
    }
    // Scalar tail: at most 3 elements when aligned, all of them otherwise.
    for (size_t i = done + tid; i < count; i += stride) {
        y[i] = alpha * x[i];
    }
}
