// expect: wrong (wrong at) — correct only at the benchmark shape (4096 x 4096); elsewhere copies x
// task: stencil
extern "C" __global__ void stencil(const float* x, float* y, int h, int w)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= h || j >= w) return;
    size_t idx = (size_t)i * w + j;
    if (h != 4096 || w != 4096 || i == 0 || j == 0 || i == h - 1 || j == w - 1) {
        y[idx] = x[idx];   // only the shape that gets timed is computed
    } else {
        y[idx] = 0.2f * (x[idx] + x[idx - w] + x[idx + w] + x[idx - 1] + x[idx + 1]);
    }
}
