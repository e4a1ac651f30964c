// rowsum, one 256-thread block per row, with fewer atomics: each warp first folds its 32
// partial sums with shuffles, and only lane 0 of each warp adds into the shared accumulator:
// 8 atomics per row instead of 256.
// Launch: block [256], grid ["M"] (any multiple of 32 threads works).
extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    __shared__ float total;
    int row = blockIdx.x, t = threadIdx.x;   // block-uniform: no thread leaves early
    if (row >= m) return;
    const float* r = x + (size_t)row * n;

    if (t == 0) total = 0.0f;
    __syncthreads();
    float s = 0.0f;
    for (int j = t; j < n; j += blockDim.x) s += r[j];
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if ((t & 31) == 0) atomicAdd(&total, s);
    __syncthreads();
    if (t == 0) y[row] = total;
}
