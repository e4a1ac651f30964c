// Technique: one warp per row with a warp-shuffle reduction. The 32 lanes of a warp stride
// through one row together (coalesced loads), each keeps a partial sum in a register, and
// __shfl_down_sync folds the 32 partials in 5 steps without shared memory or __syncthreads.
// Computes y[r] = sum_j x[r, j] for a row-major x[m, n].
// Launch: block [256] (a multiple of 32), grid ["ceil_div(M * 32, 256)"]: 8 rows per block.
extern "C" __global__ void rowsum(const float* __restrict__ x, float* __restrict__ y, int m, int n)
{
    const int lane = threadIdx.x & 31;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (warp >= m) {
        return;  // warp-uniform: the whole warp leaves together, so the full mask below is valid
    }
    const float* row = x + (size_t)warp * n;

    float s = 0.0f;
    for (int j = lane; j < n; j += 32) {
        s += row[j];
    }
    // Tree reduction across the warp: after the loop lane 0 holds the row's sum.
    for (int offset = 16; offset > 0; offset >>= 1) {
        s += __shfl_down_sync(0xffffffffu, s, offset);
    }
    if (lane == 0) {
        y[warp] = s;
    }
}
