// rowsum, faster: one warp per row. Lanes stride through the row (coalesced,
// float4 loads when the row is 16-byte aligned), then a warp-shuffle reduction.
// Knob: WARPS rows (warps) per block; the kernel reads blockDim, faster.toml's launch follows.
#ifndef WARPS
#define WARPS 8
#endif
extern "C" __global__ void rowsum(const float* __restrict__ x, float* __restrict__ y, int m, int n)
{
    int lane = threadIdx.x & 31;
    int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;   // warp-uniform
    if (row >= m) return;                                     // whole warp leaves together

    const float* r = x + (size_t)row * n;
    float s = 0.0f;
    bool vec = ((n & 3) == 0) && ((((unsigned long long)x) & 15ull) == 0);
    if (vec) {
        const float4* r4 = reinterpret_cast<const float4*>(r);
        int n4 = n >> 2;
        for (int j = lane; j < n4; j += 32) {
            float4 v = r4[j];
            s += (v.x + v.y) + (v.z + v.w);
        }
    } else {
        for (int j = lane; j < n; j += 32) {
            s += r[j];
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, off);
    }
    if (lane == 0) y[row] = s;
}
