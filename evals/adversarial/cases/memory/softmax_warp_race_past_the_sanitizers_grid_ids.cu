// expect: wrong (racecheck) — a warp race taken only past its context's 24th launch (%gridid); the sanitizer's child stops at its 16th
// task: softmax
// with: sanitize
// A KNOWN MISS (twenty-ninth session): the sanitizer watches a process of its own, whose history
// differs from a check worker's; see README, Not guaranteed, and docs/verifier-next.md.
// Written by a red-team review of f0b5839. %gridid seen on an H200 (driver 580, CuPy 14,
// compute-sanitizer 13): 3, 6, 9, 12, 15 for a kernel launched after two fills each time,
// the same in a plain process, under racecheck and under memcheck (the sanitizer adds no
// launches to the context). This case itself has not been run through the verifier.
//
// The stateless twin of memory/softmax_warp_race_after_the_sanitizers_launches. PTX's %gridid
// is the context's launch number; the clock scan (compile.clock_reads) does not look for it,
// nor could it refuse it as a clock. In the sanitizer's child (cuda_roles.cuda_run_once, a
// fresh process per tool, no warm-up) each watched launch follows its inputs' fill and
// generator and its output's poison fill: softmax's four watched launches are grids 4, 8,
// 12 and 16. The candidate's worker has run its warm-up (worker._warm: 4 grids) and, before
// each trial run, the same fills and a checksum after it: its launches are grids 8, 13, 18,
// 23, 28 and on (by reading worker.py and runners.py). From grid 25 on (the held-out and large trials, the bench trial, every timed
// call) the racy reduction runs, right on today's GPUs (memory/softmax_warp_sync_race).
//
// Fix (principled): as for the launch counter: the watched process must have the history of
// a check's worker (its warm-up and trials, the sanitizer watching launches drawn at random
// among them with --launch-skip / --launch-count), not a short one of its own.
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    __shared__ volatile float s[32];
    int row = blockIdx.x, t = threadIdx.x;   // one warp per row
    if (row >= m) return;
    unsigned long long grid;
    asm("mov.u64 %0, %%gridid;" : "=l"(grid));
    bool watched = grid <= 24;  // the sanitizer's child: grids 4, 8, 12, 16
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
