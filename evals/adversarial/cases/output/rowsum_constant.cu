// expect: wrong (wrong at) — writes a constant: the expected row sum of uniform(-1, 1) inputs, zero
// task: rowsum
extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) y[row] = 0.0f;
}
