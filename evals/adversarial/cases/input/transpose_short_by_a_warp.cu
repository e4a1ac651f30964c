// expect: wrong — skips the last row when the height is one short of a multiple of 32
// task: transpose
extern "C" __global__ void transpose(const float* x, float* y, int m, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int rows = (m % 32 == 31 && m > 64) ? m - 1 : m;
    if (row < rows && col < n) y[(size_t)col * m + row] = x[(size_t)row * n + col];
}
