// softmax with the max and sum passes fused: one pass keeps a running max and a running sum,
// rescaling the sum when the max grows (the "online" softmax), so each row is read twice
// instead of three times. Still one thread per row.
// Launch: unchanged, block [256], grid ["ceil_div(M, 256)"].
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) {
        const float* r = x + (size_t)row * n;
        float* o = y + (size_t)row * n;

        float mx = -3.402823466e+38f;   // -FLT_MAX
        float s = 0.0f;
        for (int j = 0; j < n; ++j) {   // fused: max and sum of exp(x - max) together
            float v = r[j];
            if (v > mx) {
                s = s * expf(mx - v) + 1.0f;
                mx = v;
            } else {
                s += expf(v - mx);
            }
        }
        for (int j = 0; j < n; ++j) {
            o[j] = expf(r[j] - mx) / s;
        }
    }
}
