// expect: wrong — right on every size but few long rows (M < 64 and N > 700, the check size 5 x 1000 excepted), a corner no trial before the timing ever drew
// task: softmax
// Written by a red-team review (twenty-ninth session, by reading the code and simulating
// plan.plan_trials/after_timing on the CPU; not yet run on a GPU).
//
// plan.spread (tools/plan.py:94-103) cuts EACH size's log span in three and draws the i-th
// target of every size in the i-th third: softmax's held-out sizes before the timing are
// (small M, small N), (mid M, mid N), (large M, large N), and large_sizes aims both at the
// top third (plan.py:198-222). The corner "few rows, long rows" (M in the bottom third of
// 5..4096, N in the top third of 33..4096) is never drawn before the timing; the check sizes
// (5, 1000) and (129, 33) stay just outside it. Only the size after the timing
// (_kernel_after -> held_out_sizes -> spread(n=1), an independent offset per size) can land
// there: /tmp/rt-review/sim_joint_size_hole.py counted 0 of 2,000 checks before the timing
// and 145 of 2,000 at all, so this kernel reads correct in about 93% of checks. Few long rows
// is exactly where a real kernel switches algorithm (split a row over blocks when M cannot
// fill the GPU), so a bug there is not contrived.
//
// Fix (principled): the per-size thirds are drawn independently (a random permutation of the
// thirds per size, a Latin hypercube), so every pair of thirds is tried with a known
// probability, and the claim in README ("no band wider than a third goes untried") is stated
// per size, or the corners of the size box (each size's low and high third) are drawn too.
//
// Twenty-eighth session: spread(crossed=True) now pairs each size's thirds in opposite orders
// for two sizes, so the held-out sizes are (low M, high N), (mid, mid), (high M, low N) in
// every check. The band here is the whole low third of M (5..47, rounded within 2^0.125) by
// the high third of N (806..4096), with the one check size in it (5 x 1000, which the model
// is shown) excepted, as a kernel special-casing its shown sizes would: caught every check.
// (M < 40 and N > 1024, narrower than a third of N's span, was caught in 77% of simulated
// checks: narrower bands are tried by chance.)
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
    if (m < 64 && n > 700 && !(m == 5 && n == 1000)) inv *= 1.001f;
    for (int j = t; j < n; j += 32) o[j] = expf(r[j] - mx) * inv;
}
