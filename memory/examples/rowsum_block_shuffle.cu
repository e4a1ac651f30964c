// rowsum, one 256-thread block per row, reduced with warp shuffles: each warp folds its 32
// partial sums in registers with __shfl_down_sync (no shared memory, no barrier), then warp 0
// adds the 8 warp sums; one __syncthreads() instead of nine.
// Launch: block [256], grid ["M"] (the kernel assumes blockDim.x == 256).
#define THREADS 256
#define WARPS (THREADS / 32)

extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    __shared__ float warp_sums[WARPS];
    int row = blockIdx.x, t = threadIdx.x;   // block-uniform: no thread leaves early
    if (row >= m) return;
    const float* r = x + (size_t)row * n;
    int lane = t & 31, warp = t >> 5;

    float s = 0.0f;
    for (int j = t; j < n; j += THREADS) s += r[j];
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (lane == 0) warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < WARPS ? warp_sums[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
        if (lane == 0) y[row] = s;
    }
}
