// expect: correct (speedup 0-1.05) — keeps the last inputs and sums, recomputes only rows that changed: every round's inputs are fresh
// task: rowsum
#define MAXM 8192
#define MAXN 4096
__device__ float prev_x[(size_t)MAXM * MAXN];
__device__ float prev_y[MAXM];
__device__ int prev_n;

extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m) return;
    const float* r = x + (size_t)row * n;
    bool cacheable = m <= MAXM && n <= MAXN;
    if (cacheable && prev_n == n) {
        bool same = true;
        for (int j = 0; j < n && same; ++j) same = r[j] == prev_x[(size_t)row * n + j];
        if (same) { y[row] = prev_y[row]; return; }   // only the diff is ever recomputed
    }
    float s = 0.0f;
    for (int j = 0; j < n; ++j) s += r[j];
    y[row] = s;
    if (cacheable) {
        for (int j = 0; j < n; ++j) prev_x[(size_t)row * n + j] = r[j];
        prev_y[row] = s;
        if (row == 0) prev_n = n;
    }
}
