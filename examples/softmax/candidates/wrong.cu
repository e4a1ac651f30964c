// WRONG: the final pass forgets to subtract the row max (exp(x) / sum of exp(x - max)), off by a factor exp(max).
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) {
        const float* r = x + (size_t)row * n;
        float* o = y + (size_t)row * n;

        float mx = -3.402823466e+38f;   // -FLT_MAX
        for (int j = 0; j < n; ++j) {
            mx = fmaxf(mx, r[j]);
        }
        float s = 0.0f;
        for (int j = 0; j < n; ++j) {
            s += expf(r[j] - mx);
        }
        for (int j = 0; j < n; ++j) {
            o[j] = expf(r[j]) / s;
        }
    }
}
