// jacobi_step() with 32-wide blocks (a warp reads whole 128-byte rows) and each thread doing
// four points down a column, reusing the rows it has loaded.
extern "C" __global__ void jacobi_step(const float* in, float* out, int rows, int cols)
{
    const int j = blockIdx.x * 32 + threadIdx.x;
    const int i0 = (blockIdx.y * blockDim.y + threadIdx.y) * 4;
    if (j >= cols || i0 >= rows) {  // past the grid: nothing to read, nothing to write
        return;
    }
    const bool edge_col = j == 0 || j == cols - 1;
    float above = i0 > 0 ? in[(i0 - 1) * cols + j] : 0.0f;
    float here = in[i0 * cols + j];
    for (int d = 0; d < 4; ++d) {
        const int i = i0 + d;
        if (i >= rows) {
            return;
        }
        const int k = i * cols + j;
        const float below = i + 1 < rows ? in[k + cols] : 0.0f;
        if (edge_col || i == 0 || i == rows - 1) {
            out[k] = here;
        } else {
            out[k] = 0.25f * (above + below + in[k - 1] + in[k + 1]);
        }
        above = here;
        here = below;
    }
}
