// The naive port of prefix_sum(): one block of 1024 threads; each thread sums a contiguous
// chunk, the chunks' totals are scanned in shared memory, then each thread writes its chunk's
// running sums. N, the length, comes after the function's own arguments.
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
            totals[k] = running;  // what comes before chunk k
            running += here;
        }
    }
    __syncthreads();
    long long running = totals[t];
    for (long long i = begin; i < end; ++i) {
        running += x[i];
        out[i] = running;
    }
}
