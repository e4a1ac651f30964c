// expect: wrong (racecheck) — a warp race taken only where x holds more than 2^21 floats (8 MB), past every launch the sanitizer watches
// task: softmax
// with: sanitize
// A KNOWN MISS (twenty-ninth session), written attacking the sanitizer's watched launches as an
// outsider would (CPU reasoning; not run on a GPU). Every launch compute-sanitizer watches keeps
// its arrays within sanitize.WATCHED_BYTES (16 MB: x and y, 8 MB each), because a kernel runs
// 10 to 100 times slower under its tools; the joint and long launches reach that cap, never
// past it. The trials above it (the large sizes, the bench trial after the timing) and every
// timed call (4,096 x 4,096: 64 MB) take the race; it gives the right answer on today's GPUs
// (memory/softmax_warp_sync_race), so nothing but the sanitizer could see it. Closing it
// needs one watched launch at a size past the cap (a slow one: racecheck only, on few blocks
// of a large grid, `--launch-count` and a grid-stride kernel's own sizes), or a launch of the
// bench size with the sanitizer instrumenting only a sample of its blocks.
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    __shared__ volatile float s[32];
    int row = blockIdx.x, t = threadIdx.x;   // one warp per row
    if (row >= m) return;
    bool watched = (long long)m * n <= (1LL << 21);  // no watched launch is larger
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
