// y[r] = sum_j x[r, j] for a row-major float32 matrix x[M, N].
// Naive: one thread per row, each thread loops over its row (neighbouring
// threads read addresses N floats apart, so loads are uncoalesced).
extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) {
        const float* r = x + (size_t)row * n;
        float s = 0.0f;
        for (int j = 0; j < n; ++j) {
            s += r[j];
        }
        y[row] = s;
    }
}
