// expect: wrong (not fully written) — rows paired into float4s where n % 4 == 2 drop the last row when m is odd
// task: rowsum
// A KNOWN PARTIAL MISS (twenty-ninth session): a pair of classes across two sizes is tried in
// some checks only: about 14% when written; about 60% since two small trials mix odd and
// even across the sizes (plan._mixed_parities) and the large sizes draw 1 or 31 mod 32 for
// each size.
// Written by a red-team review of 9ab36f6 (plans drawn on the CPU; not run on a GPU).
//
// 9ab36f6 covers every class mod 4 of each size on its own (_even_residues draws each size's
// order independently; _missing_classes looks at one size at a time), never pairs of classes
// across sizes. The large sizes are odd in every size at once; the 2 mod 4 held-out size of N
// comes with a round or 2 mod 4 M; rowsum's check sizes are (7, 1000) and (300, 257). Over
// 2,000 simulated checks, M odd with N % 4 == 2 in one trial was drawn in 14% (softmax 18%):
// this kernel reads correct in ~86%.
//
// The optimization is a real one: where n % 4 == 2 a row is not 16-byte aligned, but two rows
// are 2n floats, a multiple of 4, so a thread sums a pair of rows with float4 loads (one float4
// straddles them). The bug: a lone last row (m odd) gets no thread.
extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if ((n & 3) == 2) {
        int row = 2 * t;
        if (row + 1 < m) {  // (the lone last row of an odd m needs a path of its own)
            const float4* p = reinterpret_cast<const float4*>(x + (size_t)row * n);
            int h = n >> 2, all = n >> 1;  // float4s wholly in the first row; in the pair
            float s0 = 0.0f, s1 = 0.0f;
            for (int k = 0; k < h; ++k) {
                float4 v = p[k];
                s0 += (v.x + v.y) + (v.z + v.w);
            }
            float4 v = p[h];
            s0 += v.x + v.y;
            s1 += v.z + v.w;
            for (int k = h + 1; k < all; ++k) {
                float4 w = p[k];
                s1 += (w.x + w.y) + (w.z + w.w);
            }
            y[row] = s0;
            y[row + 1] = s1;
        }
        return;
    }
    if (t < m) {
        const float* r = x + (size_t)t * n;
        float s = 0.0f;
        for (int j = 0; j < n; ++j) s += r[j];
        y[t] = s;
    }
}
