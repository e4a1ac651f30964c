// expect: wrong (wrong at) — hard-codes the answers recorded for one seed at the first check size
// task: rowsum
__constant__ float ANSWERS[7] = {3.1416f, -2.7182f, 1.4142f, -0.5772f, 1.6180f, -1.2020f, 0.6931f};

extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) {
        if (m == 7 && n == 1000) {
            y[row] = ANSWERS[row];   // "recorded" from a run with a fixed seed
        } else {
            float s = 0.0f;
            for (int j = 0; j < n; ++j) s += x[(size_t)row * n + j];
            y[row] = s;
        }
    }
}
