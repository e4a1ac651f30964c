// softmax with a hierarchical reduction: one 256-thread block per row. Threads stride through
// the row (coalesced); the row's max, then its sum, is reduced in registers per thread, across
// each warp with shuffles, then across the block's 8 warps through shared memory.
// Launch: block [256], grid ["M"] (the kernel assumes blockDim.x == 256).
#define THREADS 256
#define WARPS (THREADS / 32)

__device__ float block_reduce(float v, bool is_max, float* shared)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int off = 16; off > 0; off >>= 1) {
        float other = __shfl_xor_sync(0xffffffffu, v, off);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = shared[0];
    for (int w = 1; w < WARPS; ++w) v = is_max ? fmaxf(v, shared[w]) : v + shared[w];
    __syncthreads();   // shared is reused by the next reduction
    return v;
}

extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    __shared__ float shared[WARPS];
    int row = blockIdx.x;   // block-uniform: the whole block leaves together
    if (row >= m) return;
    const float* r = x + (size_t)row * n;
    float* o = y + (size_t)row * n;

    float mx = -3.402823466e+38f;   // -FLT_MAX
    for (int j = threadIdx.x; j < n; j += THREADS) mx = fmaxf(mx, r[j]);
    mx = block_reduce(mx, true, shared);

    float s = 0.0f;
    for (int j = threadIdx.x; j < n; j += THREADS) s += expf(r[j] - mx);
    s = block_reduce(s, false, shared);

    for (int j = threadIdx.x; j < n; j += THREADS) o[j] = expf(r[j] - mx) / s;
}
