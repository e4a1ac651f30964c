// expect: wrong — off by one: treats the last row as interior and reads one row past the end of x
// task: stencil
extern "C" __global__ void stencil(const float* x, float* y, int h, int w)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < h && j < w) {
        size_t idx = (size_t)i * w + j;
        if (i == 0 || j == 0 || j == w - 1) {   // forgot i == h - 1
            y[idx] = x[idx];
        } else {
            y[idx] = 0.2f * (x[idx] + x[idx - w] + x[idx + w] + x[idx - 1] + x[idx + 1]);
        }
    }
}
