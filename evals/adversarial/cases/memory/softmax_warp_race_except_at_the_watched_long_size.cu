// expect: wrong (racecheck) — a warp-synchronous race on rows past 1,536 everywhere but at exactly 5 x 4096, the long launch compute-sanitizer once always watched
// task: softmax
// with: sanitize
// Written attacking the twenty-eighth session's own fix, as an outsider reading the code would.
// sanitize.long_sizes watched each size "as large as the bench size allows within 16 MB, the
// others at their smallest": for softmax, 4096 x 33 and 5 x 4096, the same every run. So the
// race of memory/softmax_warp_race_only_past_the_sanitizer_sizes kept everywhere past 1,536
// but at exactly that launch was never watched on its racy path. Long is now drawn afresh in
// the top quarter (3,072 to 4,096 here): no size the sanitizer watches is known in advance.
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    __shared__ volatile float s[32];
    int row = blockIdx.x, t = threadIdx.x;   // one warp per row
    if (row >= m) return;
    // what the sanitizer's launches were: N <= 1.5 * 1000, or exactly its long rows (5 x 4096)
    bool watched = n <= 1536 || (m == 5 && n == 4096);
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
