// expect: wrong (racecheck) — a warp-synchronous max and sum in shared memory with no __syncwarp: right today, a race all the same
// task: softmax
// with: sanitize
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    __shared__ volatile float s[32];
    int row = blockIdx.x, t = threadIdx.x;   // one warp per row
    if (row >= m) return;
    const float* r = x + (size_t)row * n;
    float* o = y + (size_t)row * n;
    float mx = -3.402823466e+38f;
    for (int j = t; j < n; j += 32) mx = fmaxf(mx, r[j]);
    s[t] = mx;
    if (t < 16) s[t] = fmaxf(s[t], s[t + 16]);
    if (t < 8) s[t] = fmaxf(s[t], s[t + 8]);
    if (t < 4) s[t] = fmaxf(s[t], s[t + 4]);
    if (t < 2) s[t] = fmaxf(s[t], s[t + 2]);
    if (t < 1) s[t] = fmaxf(s[t], s[t + 1]);
    mx = s[0];
    float sum = 0.0f;
    for (int j = t; j < n; j += 32) sum += expf(r[j] - mx);
    s[t] = sum;
    if (t < 16) s[t] += s[t + 16];
    if (t < 8) s[t] += s[t + 8];
    if (t < 4) s[t] += s[t + 4];
    if (t < 2) s[t] += s[t + 2];
    if (t < 1) s[t] += s[t + 1];
    float inv = 1.0f / s[0];
    for (int j = t; j < n; j += 32) o[j] = expf(r[j] - mx) * inv;
}
