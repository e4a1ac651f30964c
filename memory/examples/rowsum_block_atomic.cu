// rowsum, one 256-thread block per row, each thread adding its partial sum into one shared
// accumulator with atomicAdd: 256 atomics on one address per row, serialised.
// Launch: block [256], grid ["M"].
extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    __shared__ float total;
    int row = blockIdx.x, t = threadIdx.x;   // block-uniform: no thread leaves early
    if (row >= m) return;
    const float* r = x + (size_t)row * n;

    if (t == 0) total = 0.0f;
    __syncthreads();
    float s = 0.0f;
    for (int j = t; j < n; j += blockDim.x) s += r[j];
    atomicAdd(&total, s);
    __syncthreads();
    if (t == 0) y[row] = total;
}
