// expect: wrong (racecheck) — a warp race taken only where M > 193 and N > 1500 together, past every launch the sanitizer watched
// task: softmax
// with: sanitize
// Fixed (twenty-ninth session): sanitize.joint_sizes watches one launch with every size past
// the held-out draws at once, as far toward the bench size as 16 MB allows (softmax: about
// 600-850 x 2,200-2,450). CPU-tested; not yet run on a GPU.
// Written by a red-team review of f0b5839 (by reading sanitize.py and drawing
// sanitize.watched on the CPU; compiled with nvcc 13 here, not run on a GPU).
//
// sanitize._kernel_sizes watches the largest check size (5 x 1000), one held out near the
// check sizes (each size c + 1 to 1.5 c of a check size's: M <= 193, N <= 1500) and
// long_sizes: each size long "and the others at their smallest check size" (M in 3,072 to
// 4,096 by N = 33; M = 5 by N in 3,072 to 4,096). No watched launch has two sizes past the
// check sizes at once: in 5,000 draws (20,000 launches) none had M > 193 and N > 1,500, nor
// N > 33 where M > 193. The trials' above-bench size, the bench trial after the timing and
// every timed call (4,096 x 4,096) do, so the racy path (right on today's GPUs:
// memory/softmax_warp_sync_race) is all that is timed and none of what is watched. Each size
// alone reaching far (the fix of memory/softmax_warp_race_only_past_the_sanitizer_sizes)
// does not reach the corner where both are long; a matmul's (M, K) plane has the same gap.
//
// Fix (principled): draw the watched sizes jointly, as the trials draw theirs: at least one
// watched launch at a target drawn from plan.spread over the whole box (every size at once,
// crossed thirds), scaled down as a whole into WATCHED_BYTES (for softmax, up to about
// 1,400 x 1,400), so that no region of sizes a trial or a timed call reaches is known never
// to be watched.
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    __shared__ volatile float s[32];
    int row = blockIdx.x, t = threadIdx.x;   // one warp per row
    if (row >= m) return;
    bool watched = m <= 193 || n <= 1536;  // no watched launch has both long
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
