// Wrong: an exclusive scan (each output leaves out its own element), not the inclusive one.
extern "C" __global__ void prefix_sum(const int* x, long long* out, long long N)
{
    __shared__ long long totals[1024];
    const long long t = threadIdx.x;
    const long long chunk = (N + blockDim.x - 1) / blockDim.x;
    const long long begin = min(N, t * chunk), end = min(N, begin + chunk);
    long long sum = 0;
    for (long long i = begin; i < end; ++i) {
        sum += x[i];
    }
    totals[t] = sum;
    __syncthreads();
    if (t == 0) {
        long long running = 0;
        for (int k = 0; k < (int)blockDim.x; ++k) {
            const long long here = totals[k];
            totals[k] = running;
            running += here;
        }
    }
    __syncthreads();
    long long running = totals[t];
    for (long long i = begin; i < end; ++i) {
        out[i] = running;
        running += x[i];
    }
}
