// expect: wrong — subtracts a constant (100, the usual inputs' bound) instead of the row max: wrong where the task says its op is defined
// task: softmax
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m) return;
    const float* r = x + (size_t)row * n;
    float* o = y + (size_t)row * n;
    float s = 0.0f;
    for (int j = 0; j < n; ++j) s += expf(r[j] - 100.0f);   // one pass saved
    for (int j = 0; j < n; ++j) o[j] = expf(r[j] - 100.0f) / s;
}
