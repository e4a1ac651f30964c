// rowsum, one 256-thread block per row: threads stride through the row, then a tree reduction
// in shared memory halves the number of partial sums each step, with a __syncthreads() per step.
// Launch: block [256], grid ["M"] (the kernel assumes blockDim.x == 256).
#define THREADS 256

extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    __shared__ float partial[THREADS];
    int row = blockIdx.x, t = threadIdx.x;   // block-uniform: no thread leaves early
    if (row >= m) return;
    const float* r = x + (size_t)row * n;

    float s = 0.0f;
    for (int j = t; j < n; j += THREADS) s += r[j];
    partial[t] = s;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half >>= 1) {
        if (t < half) partial[t] += partial[t + half];
        __syncthreads();
    }
    if (t == 0) y[row] = partial[0];
}
