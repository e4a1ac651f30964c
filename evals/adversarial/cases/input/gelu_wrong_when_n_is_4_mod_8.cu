// expect: wrong (not fully written) — an 8-wide gelu whose tail leaves 4 elements unwritten where n % 8 == 4
// task: gelu
// Partly closed (twenty-ninth session): up to two small trials take classes mod 8 none has
// tried (plan._missing_classes): 4 mod 8 is now tried in about 57% of checks (was ~6%). A
// KNOWN PARTIAL MISS: a check of some eight sizes cannot try every class mod 8 every time.
// Written by a red-team review of 9ab36f6 (plans drawn on the CPU; not run on a GPU).
//
// 9ab36f6 tries every class mod 4 before the timing, not every class mod 8. Round sizes are
// multiples of 2^j, j drawn from 2 up to ~22: 4 mod 8 only where j = 2 and the multiple is odd.
// Awkward ones are odd (1/31 mod 32), the 2 mod 4 one is 2 or 6 mod 8. After the timing,
// `_any_residue` maps every residue that is 0 mod 4 (4, 12, 20, 28 included) to "round", so
// the "uniform residue mod 32" lands on 4 mod 8 in 0.6% of checks, not 12.5%. Over 2,000
// simulated gelu checks (trials, bench trial, after-timing trial) n % 8 == 4 was drawn in 5.5%:
// this kernel reads correct in ~94% of checks. Same for rowsum's and softmax's N (~91%).
//
// The bug is an honest off-by-one: the float4 of the tail is taken when more than 4 remain,
// while the scalar loop skips 4 whenever bit 2 of the remainder is set.
__device__ __forceinline__ float g(float v)
{
    return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n8 = n >> 3;
    if (i < n8) {  // eight at a time: two float4
        const float4* p = reinterpret_cast<const float4*>(x) + 2 * i;
        float4* q = reinterpret_cast<float4*>(y) + 2 * i;
        float4 a = p[0], b = p[1];
        q[0] = make_float4(g(a.x), g(a.y), g(a.z), g(a.w));
        q[1] = make_float4(g(b.x), g(b.y), g(b.z), g(b.w));
    }
    if (i == 0) {  // the tail: n % 8 elements
        int base = n8 << 3, r = n & 7;
        if (r > 4) {  // (should be r >= 4)
            float4 a = reinterpret_cast<const float4*>(x + base)[0];
            reinterpret_cast<float4*>(y + base)[0] = make_float4(g(a.x), g(a.y), g(a.z), g(a.w));
        }
        for (int k = base + (r & 4); k < n; ++k) y[k] = g(x[k]);
    }
}
