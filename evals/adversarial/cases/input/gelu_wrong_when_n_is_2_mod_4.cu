// expect: wrong (not fully written) — a float4 gelu tail that leaves y[n-1] unwritten where n % 4 == 2, a size no trial drew
// task: gelu
// Fixed (twenty-ninth session): every size's classes mod 4 are tried before the timing in every
// check (plan._even_residues: of the two held-out sizes one round, one 2 mod 4; the large ones
// odd; plan._missing_classes adds a trial where a tiny target left a class out), and the size
// after the timing takes a residue mod 32 drawn uniformly. CPU-tested; not yet run on a GPU.
// Written by a red-team review of f0b5839 (by reading plan.py and drawing its plans on the CPU;
// not run on a GPU).
//
// Every size a check tries is a check size, a "round" one or an "awkward" one. plan._near's
// round sizes are multiples of 2^j with j >= 2 (`reach[2:]`): multiples of 4. plan.awkward
// scores a size +1 for an odd multiple of its step, +1 for v % 32 in (1, 31), +1 for v % 16
// != 0, +1 for v % 4 != 0: an odd size always outscores an even one, so awkward sizes are odd
// (and 1 or 31 mod 32 where they can be; large_sizes forces 1 below the bench, 31 above).
// gelu's check sizes are 1000 and 65537. So no size with n % 4 == 2 is ever tried: over
// 3,000 simulated checks (trials, the bench trial after timing, the held-out size after it)
// gelu's N mod 32 was only 0, 1, 4, 8, ..., 28 or 31; the same holds for softmax's N, rowsum's
// N and transpose's N (matmul's K: 69 checks in 3,000). A kernel wrong on every size
// 2 mod 4 (25% of the sizes the task allows) reads correct, and is timed at 2^24.
//
// The bug is an honest one: the tail takes the odd element first, then a pair it addresses as
// if the tail were 3 long. Where n % 4 == 2 it writes y[n-3] twice and y[n-1] never.
//
// Fix (principled): a check must try every residue class a kernel can branch on, not two
// fixed ones: draw each held-out size's 2-adic valuation (v = 2^j * odd, j drawn over 0..5
// or up to the bench size's), and its residue mod 32 uniformly among those of that valuation,
// so that every class mod 2^k (k <= 5) has a chance bounded below in every check (with
// four held-out sizes per check, several classes per check; one class, 2 mod 4, would have
// been drawn in about 1 check in 4 per size).
__device__ __forceinline__ float g(float v)
{
    return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = n >> 2;
    if (i < n4) {  // four at a time
        float4 v = reinterpret_cast<const float4*>(x)[i];
        reinterpret_cast<float4*>(y)[i] = make_float4(g(v.x), g(v.y), g(v.z), g(v.w));
    }
    if (i == 0) {  // the tail: n % 4 elements
        int r = n & 3;
        if (r & 1) y[n - 1] = g(x[n - 1]);  // an odd tail: its last element alone
        if ((r & 2) && n >= 3) {            // then a pair before it
            int k = n - 3;                  // (right for r == 3; r == 2 needs n - 2)
            y[k] = g(x[k]);
            y[k + 1] = g(x[k + 1]);
        }
    }
}
