// The naive port of jacobi_step(): one thread per point, 16 x 16 blocks, as the C++ code does
// each point (interior: the mean of four neighbours; border: copied).
extern "C" __global__ void jacobi_step(const float* in, float* out, int rows, int cols)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= rows || j >= cols) {
        return;
    }
    const int k = i * cols + j;
    if (i == 0 || j == 0 || i == rows - 1 || j == cols - 1) {
        out[k] = in[k];
    } else {
        out[k] = 0.25f * (in[k - cols] + in[k + cols] + in[k - 1] + in[k + 1]);
    }
}
