// One 2D 5-point Jacobi step on a row-major float32 grid x[H, W]:
//   y[i, j] = 0.2 * (x[i, j] + x[i-1, j] + x[i+1, j] + x[i, j-1] + x[i, j+1])  (interior)
//   y[i, j] = x[i, j]                                                          (border)
// Naive: one thread per output element, 16x16 blocks, all five loads from global memory.
extern "C" __global__ void stencil(const float* x, float* y, int h, int w)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;   // column
    int i = blockIdx.y * blockDim.y + threadIdx.y;   // row
    if (i < h && j < w) {
        size_t idx = (size_t)i * w + j;
        if (i == 0 || j == 0 || i == h - 1 || j == w - 1) {
            y[idx] = x[idx];
        } else {
            y[idx] = 0.2f * (x[idx] + x[idx - w] + x[idx + w] + x[idx - 1] + x[idx + 1]);
        }
    }
}
