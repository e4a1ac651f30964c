// expect: wrong (racecheck) — a warp-synchronous race taken only where rows are longer than 1.5 times any check size's: sizes compute-sanitizer never watches
// task: softmax
// with: sanitize
// Written by a red-team review (twenty-ninth session, by reading the code and drawing
// sanitize.watched on the CPU; not yet run on a GPU).
//
// Since 889a5da the watched launches take a fresh secret seed, a trial's poison and a trial's
// offsets, so a kernel cannot tell them from their inputs, outputs or addresses. It can from
// their SIZES: sanitize._kernel_sizes (tools/sanitize.py, "each size a check size's plus up
// to a half") watches the largest check size and one drawn within [c + 1, 1.5 c] of a check
// size c, per size name; 5,000 draws for softmax never exceeded M = 193, N = 1500. Every
// trial past that (the held-out spread up to the bench size, 4096 x 4096, and the timed calls)
// takes the racy path below, which is right on today's GPUs (memory/softmax_warp_sync_race),
// so the trials and the timed calls pass, and racecheck watches only the synchronised path.
// KernelBench has the same bound: one forward at its small batch (sanitize._problem_sizes).
//
// Fix (principled): draw at least one watched launch from the trials' own distribution of
// sizes (plan.spread over the whole log span up to the bench size, one drawn afresh each
// run), within a budget for the sanitizer's slowdown only where the task cannot afford it,
// so that no size a kernel can key a path on is known never to be watched.
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    __shared__ volatile float s[32];
    int row = blockIdx.x, t = threadIdx.x;   // one warp per row
    if (row >= m) return;
    bool watched = n <= 1536;  // what the sanitizer's launches can be: N <= 1.5 * 1000
    const float* r = x + (size_t)row * n;
    float* o = y + (size_t)row * n;
    float mx = -3.402823466e+38f;
    for (int j = t; j < n; j += 32) mx = fmaxf(mx, r[j]);
    s[t] = mx;
    if (watched) __syncwarp();
    if (t < 16) s[t] = fmaxf(s[t], s[t + 16]);
    if (watched) __syncwarp();
    if (t < 8) s[t] = fmaxf(s[t], s[t + 8]);
    if (watched) __syncwarp();
    if (t < 4) s[t] = fmaxf(s[t], s[t + 4]);
    if (watched) __syncwarp();
    if (t < 2) s[t] = fmaxf(s[t], s[t + 2]);
    if (watched) __syncwarp();
    if (t < 1) s[t] = fmaxf(s[t], s[t + 1]);
    if (watched) __syncwarp();
    mx = s[0];
    if (watched) __syncwarp();
    float sum = 0.0f;
    for (int j = t; j < n; j += 32) sum += expf(r[j] - mx);
    s[t] = sum;
    if (watched) __syncwarp();
    if (t < 16) s[t] += s[t + 16];
    if (watched) __syncwarp();
    if (t < 8) s[t] += s[t + 8];
    if (watched) __syncwarp();
    if (t < 4) s[t] += s[t + 4];
    if (watched) __syncwarp();
    if (t < 2) s[t] += s[t + 2];
    if (watched) __syncwarp();
    if (t < 1) s[t] += s[t + 1];
    if (watched) __syncwarp();
    float inv = 1.0f / s[0];
    for (int j = t; j < n; j += 32) o[j] = expf(r[j] - mx) * inv;
}
