// WRONG: column index uses blockDim.y instead of blockDim.x, so blocks overlap and columns past ~N/4 are never written.
extern "C" __global__ void transpose(const float* x, float* y, int m, int n)
{
    int c = blockIdx.x * blockDim.y + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < m && c < n) {
        y[(size_t)c * m + r] = x[(size_t)r * n + c];
    }
}
