// Row softmax of a row-major float32 matrix x[M, N], numerically stable:
//   y[r, j] = exp(x[r, j] - max_k x[r, k]) / sum_k exp(x[r, k] - max_k x[r, k])
// Naive: one thread per row, three passes over the row (max, sum, write).
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
            o[j] = expf(r[j] - mx) / s;
        }
    }
}
