// expect: wrong (wrong at) — wrong layout: copies x row-major into y instead of transposing it
// task: transpose
extern "C" __global__ void transpose(const float* x, float* y, int m, int n)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < m && c < n) {
        y[(size_t)r * n + c] = x[(size_t)r * n + c];   // same bytes, the wrong shape
    }
}
