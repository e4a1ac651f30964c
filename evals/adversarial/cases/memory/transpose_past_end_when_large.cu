// expect: wrong (wrote outside) — above 10M elements also writes one float past its output, in memory handed to the reference
// task: transpose
extern "C" __global__ void transpose(const float* x, float* y, int m, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        y[(size_t)col * m + row] = x[(size_t)row * n + col];
        if ((size_t)m * n > 10000000 && row == 0 && col == 0) y[(size_t)m * n] = 0.0f;
    }
}
