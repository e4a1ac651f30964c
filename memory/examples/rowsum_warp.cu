// rowsum with coalesced loads: one warp per row instead of one thread. The 32 lanes stride
// through the row together, so each step of a warp reads 128 contiguous bytes (one thread
// per row read addresses N floats apart); __shfl_down_sync then folds the 32 partial sums.
// Launch: block [256] (a multiple of 32), grid ["ceil_div(M, 8)"]: 8 rows per block.
extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    int lane = threadIdx.x & 31;
    int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (row >= m) {
        return;   // warp-uniform: the whole warp leaves, so the full mask below is valid
    }
    const float* r = x + (size_t)row * n;

    float s = 0.0f;
    for (int j = lane; j < n; j += 32) {
        s += r[j];
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        s += __shfl_down_sync(0xffffffffu, s, offset);
    }
    if (lane == 0) {
        y[row] = s;
    }
}
