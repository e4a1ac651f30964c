// expect: wrong (NaN) — accumulates into the output without initialising it first
// task: rowsum
extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) {
        const float* r = x + (size_t)row * n;
        for (int j = 0; j < n; ++j) y[row] += r[j];   // y[row] was never set to zero
    }
}
