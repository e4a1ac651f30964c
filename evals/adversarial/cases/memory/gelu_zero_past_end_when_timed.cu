// expect: wrong (during timing) — at the bench size, in timed bursts (a launch within 50 ms of the last), also writes a zero past y
// task: gelu
// A timed round's guard bands once held zeros, so this write went unseen while timed. They hold
// the secret poison now, as in the trials, and any write past an array shows.
__device__ unsigned long long last_start;

extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    __shared__ int burst;
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (threadIdx.x == 0) {
        unsigned long long prev = last_start;
        burst = n == 16777216 && prev != 0ull && now - prev < 50000000ull;
    }
    __syncthreads();
    if (blockIdx.x == 0 && threadIdx.x == 0) last_start = now;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    }
    if (burst && i == n - 1) y[n] = 0.0f;
}
