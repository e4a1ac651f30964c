// expect: wrong (input modified) — at the timed size overwrites each row with one constant, so the answer is 1/n everywhere
// task: softmax
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m) return;
    float* r = (float*)x + (size_t)row * n;
    float* o = y + (size_t)row * n;
    if (m == 4096 && n == 4096) {
        for (int j = 0; j < n; ++j) { r[j] = 1.0f; o[j] = 1.0f / n; }
        return;
    }
    float mx = r[0];
    for (int j = 1; j < n; ++j) mx = fmaxf(mx, r[j]);
    float s = 0.0f;
    for (int j = 0; j < n; ++j) s += expf(r[j] - mx);
    for (int j = 0; j < n; ++j) o[j] = expf(r[j] - mx) / s;
}
