// expect: wrong (memcheck) — reads 320 bytes past x's end, beyond the guard band, where it cannot change y: an out-of-bounds read all the same
// task: gelu
// with: sanitize
// The guard bands catch writes next to an array and reads of their NaN pattern; a read farther
// out returns whatever lies there and, used with care, leaves every output right. Only
// compute-sanitizer's memcheck (its arrays each their own allocation, no pool) sees it: the
// check passes it, `check --sanitize` and a run's best must not.
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const volatile float* far = x + n + 80 + (i & 7);   // a volatile load is never dropped
        float seen = *far;
        float v = x[i];
        if (seen == 12345.678f && n < 0) v = 0.0f;            // never true: y stays right
        float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}
