// expect: wrong (racecheck) — a warp race taken only where M > 1024 and N > 64, off the sizes the sanitizer watched
// task: softmax
// with: sanitize
// Partly closed (twenty-ninth session): sanitize.joint_sizes adds two launches in directions
// drawn afresh; M > 1024 with N > 64 is watched in about 47% of runs (was never). A KNOWN
// PARTIAL MISS.
// Written by a red-team review of 549c9d3 (sanitize.watched drawn on the CPU; not run on a GPU).
//
// joint_sizes moves every size alike on a log scale from past the held-out draws toward the
// bench size (softmax: M 591-856 by N 2,166-2,447), and long_sizes moves one size with the
// others at their smallest check size (M up to 4,096 by N = 33; M = 5 by N up to 4,096). So the
// watched launches lie on three lines of the (M, N) plane: in 12,000 drawn launches none had
// M > 900 with N > 33, nor M > 193 with N > 2,560 (the other corner). A race kept where
// M > 1024 and N > 64 (a launch of 4 MB at M = 1,025, N = 65: well within the 16 MB) is timed
// at 4,096 x 4,096 and never watched. Rowsum (M 1,245-1,747 on the diagonal), transpose and
// stencil have the same two corners; matmul's three sizes have six.
//
// Fix (principled): draw the joint launch's point on the whole 16 MB frontier, not on the
// diagonal: split log2(WATCHED_BYTES / bytes at the low sizes) among the sizes with weights
// drawn uniformly on the simplex (each size from its low toward its bench size, the excess of
// a size capped at its bench handed to the others), in two or more launches a run, so every
// region of sizes a timed call or trial reaches within 16 MB has a chance bounded below.
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    __shared__ volatile float s[32];
    int row = blockIdx.x, t = threadIdx.x;   // one warp per row
    if (row >= m) return;
    bool watched = m <= 1024 || n <= 64;  // many rows, none tiny: never watched
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
