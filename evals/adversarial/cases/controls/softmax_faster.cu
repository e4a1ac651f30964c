// expect: correct (speedup >= 2) — an honest faster kernel: online softmax per block, checked on the task's wider inputs too
// task: softmax
// softmax, faster: one 256-thread block per row. Each thread keeps an online
// (running max, running sum) over a strided, coalesced slice of the row; the
// pairs are merged with warp shuffles and then across warps in shared memory.
// A second coalesced pass writes exp(x - max) * (1 / sum).
// Knob: SM_THREADS threads per block (a multiple of 32, at most 1024); the kernel assumes
// blockDim.x == SM_THREADS, and faster.toml's launch says so.
#ifndef SM_THREADS
#define SM_THREADS 256
#endif
#define SM_WARPS (SM_THREADS / 32)
#define NEG_BIG (-3.402823466e+38f)   // -FLT_MAX: keeps max-merging free of inf - inf

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2)
{
    float mn = fmaxf(m, m2);
    s = s * expf(m - mn) + s2 * expf(m2 - mn);
    m = mn;
}

extern "C" __global__ void softmax(const float* __restrict__ x, float* __restrict__ y, int m, int n)
{
    __shared__ float sh_m[SM_WARPS];
    __shared__ float sh_s[SM_WARPS];

    int row = blockIdx.x;            // block-uniform: no thread leaves early
    if (row >= m) return;
    const float* r = x + (size_t)row * n;
    float* o = y + (size_t)row * n;
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

    float mx = NEG_BIG, s = 0.0f;
    for (int j = tid; j < n; j += SM_THREADS) {
        float v = r[j];
        if (v > mx) {
            s = s * expf(mx - v) + 1.0f;
            mx = v;
        } else {
            s += expf(v - mx);
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, mx, off);
        float s2 = __shfl_xor_sync(0xffffffffu, s, off);
        merge(mx, s, m2, s2);
    }
    if (lane == 0) { sh_m[warp] = mx; sh_s[warp] = s; }
    __syncthreads();
    mx = sh_m[0];
    s = sh_s[0];
    for (int w = 1; w < SM_WARPS; ++w) merge(mx, s, sh_m[w], sh_s[w]);

    float inv = 1.0f / s;
    for (int j = tid; j < n; j += SM_THREADS) {
        o[j] = expf(r[j] - mx) * inv;
    }
}
