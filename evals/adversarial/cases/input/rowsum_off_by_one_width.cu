// expect: wrong (wrong at) — drops the last element of a row when the width is one past a multiple of 32
// task: rowsum
extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) {
        const float* r = x + (size_t)row * n;
        int len = (n % 32 == 1 && n > 64) ? n - 1 : n;   // "the tail is padding"
        float s = 0.0f;
        for (int j = 0; j < len; ++j) s += r[j];
        y[row] = s;
    }
}
