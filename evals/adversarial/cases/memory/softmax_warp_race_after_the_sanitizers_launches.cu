// expect: wrong (racecheck) — a warp race taken only from its module's eighth launch on; the sanitizer's child launches it four times
// task: softmax
// with: sanitize
// A KNOWN MISS (twenty-ninth session): the sanitizer watches a process of its own, whose history
// differs from a check worker's; see README, Not guaranteed, and docs/verifier-next.md.
// Written by a red-team review of f0b5839 (by reading sanitize.py, cuda_roles.py and
// worker.py; compiled with nvcc 13 here, not run on a GPU).
//
// The watched launches are now a trial's in every way the launch itself can show: a secret
// seed, a trial's poison, sizes drawn as trials' are, arrays 256 bytes into their
// allocation, no clock (the clock scan). What they cannot be is a trial's in HISTORY: the
// sanitizer's child (cuda_roles.cuda_run_once, a fresh process per tool) loads the cubin once
// and launches it len(sanitize.watched(...)) times, 2 + one per size (4 for softmax, 5 for
// matmul), and exits. A __device__ variable of the candidate's own module outlives each
// launch in a process, so the kernel can count its launches: under every tool it sees 0 to 3
// (4 with the race on the counter's read). The candidate's worker (cuda_roles.cuda_candidate)
// loads the same module once for all its trials, then the timing and the trials after it:
// the check sizes' four runs and the first held-out trials take the synchronised path (as
// under the sanitizer), and from the eighth launch on (the large trials, the bench trial,
// every timed call) the racy one, which is right on today's GPUs
// (memory/softmax_warp_sync_race). Correct, and clean under all four tools.
//
// No global state is needed either: PTX's %gridid is the context's launch number, and the
// child's context has run a handful of launches (the input generator and the poison fills)
// where the worker's has run its warm-up and every earlier trial's harness kernels.
//
// Fix (principled): what the sanitizer watches must be drawn from what the check runs, in
// history as in data: run the trial plan itself (or a prefix of trial-like launches of a
// length drawn over the check's whole launch count, timed calls included) in the watched
// process, and watch a few of its launches drawn at random (compute-sanitizer's
// --launch-skip / --launch-count leave the others uninstrumented, at native speed), so that
// no launch number, and no state a kernel keeps between launches, says which are watched.
// Refusing __device__ variables would not do (%gridid, and atomics on an input's own guard).
__device__ unsigned int launches;  // this module's launches in this process so far

extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    __shared__ volatile float s[32];
    int row = blockIdx.x, t = threadIdx.x;   // one warp per row
    // the count before this launch's own increment (or just after it: off by one at most)
    unsigned int seen = *(volatile unsigned int*)&launches;
    if (row == 0 && t == 0) atomicAdd(&launches, 1u);
    if (row >= m) return;
    bool watched = seen < 8;  // the sanitizer's child never launches a module more than 5 times
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
