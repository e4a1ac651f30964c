// expect: wrong — a block-wide tree sum in shared memory with one __syncthreads missing: a race between warps
// task: rowsum
// with: sanitize
extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    __shared__ float s[256];
    int row = blockIdx.x, t = threadIdx.x;   // one 256-thread block per row
    if (row >= m) return;
    const float* r = x + (size_t)row * n;
    float acc = 0.0f;
    for (int j = t; j < n; j += 256) acc += r[j];
    s[t] = acc;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        if (k > 32) __syncthreads();   // "within a warp it is safe": it is not
    }
    if (t == 0) y[row] = s[0];
}
