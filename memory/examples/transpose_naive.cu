// y[N, M] = transpose of x[M, N], float32, row-major: y[c, r] = x[r, c].
// Naive: one thread per element, 32x8 blocks; reads of x are coalesced, but
// neighbouring threads write y with a stride of M floats.
extern "C" __global__ void transpose(const float* x, float* y, int m, int n)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;   // column of x, row of y
    int r = blockIdx.y * blockDim.y + threadIdx.y;   // row of x, column of y
    if (r < m && c < n) {
        y[(size_t)c * m + r] = x[(size_t)r * n + c];
    }
}
