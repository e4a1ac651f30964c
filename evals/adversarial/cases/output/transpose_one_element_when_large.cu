// expect: wrong (wrong at 1 of) — one element off by one only above 10M elements: caught by the comparison on the GPU, as on the host
// task: transpose
extern "C" __global__ void transpose(const float* x, float* y, int m, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        float v = x[(size_t)row * n + col];
        if ((size_t)m * n > 10000000 && row == m / 2 && col == n / 3) v += 1.0f;
        y[(size_t)col * m + row] = v;
    }
}
