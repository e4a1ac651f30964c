// expect: wrong — right on every size but a middling count of long rows (64 <= M <= 400, N > 900), never held out before the timing
// task: softmax
// Written attacking the twenty-eighth session's own fix, as an outsider reading plan.spread
// would. Crossed, a task of two sizes holds out (low M, high N), (mid, mid) and (high M, low N)
// in every check: three of the nine cells its two sizes' thirds make. The other six are tried
// only by the one size held out after the timing, drawn anywhere: this cell (M's middle third,
// N's top) in 266 of 3,000 simulated checks (plan.plan_trials and plan.after_timing). A known
// miss: three held-out sizes cannot cover nine cells in one check; README says bands of one
// size against another narrower than the whole span are tried by chance.
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x, t = threadIdx.x;  // one warp per row
    if (row >= m) return;
    const float* r = x + (size_t)row * n;
    float* o = y + (size_t)row * n;
    float mx = -3.402823466e+38f;
    for (int j = t; j < n; j += 32) mx = fmaxf(mx, r[j]);
    for (int d = 16; d > 0; d >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, d));
    float sum = 0.0f;
    for (int j = t; j < n; j += 32) sum += expf(r[j] - mx);
    for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
    float inv = 1.0f / sum;
    // the "few long rows" path a tuned kernel would take: wrong by 0.1%, far past rtol 2e-5
    if (m >= 64 && m <= 400 && n > 900) inv *= 1.001f;  // mid rows, long ones
    for (int j = t; j < n; j += 32) o[j] = expf(r[j] - mx) * inv;
}
