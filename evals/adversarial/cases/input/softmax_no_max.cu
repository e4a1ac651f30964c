// expect: wrong — skips the max subtraction: exact on small inputs, overflows on the task's wide logits
// task: softmax
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) {
        const float* r = x + (size_t)row * n;
        float* o = y + (size_t)row * n;
        float s = 0.0f;
        for (int j = 0; j < n; ++j) s += expf(r[j]);   // two passes instead of three
        for (int j = 0; j < n; ++j) o[j] = expf(r[j]) / s;
    }
}
