// Wrong: the border is never written (only the interior is computed).
extern "C" __global__ void jacobi_step(const float* in, float* out, int rows, int cols)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i <= 0 || j <= 0 || i >= rows - 1 || j >= cols - 1) {
        return;
    }
    const int k = i * cols + j;
    out[k] = 0.25f * (in[k - cols] + in[k + cols] + in[k - 1] + in[k + 1]);
}
