// expect: wrong (NaN) — caches results keyed by four input elements (fresh inputs: never a hit) and never writes rows past its cache
// task: rowsum
#define SLOTS 8
#define MAX_BLOCKS 32   // 8192 rows of 256 threads

__device__ float key[MAX_BLOCKS][SLOTS][4];
__device__ int key_m[MAX_BLOCKS][SLOTS];
__device__ float stash[MAX_BLOCKS][SLOTS][256];
__device__ unsigned int victim[MAX_BLOCKS];

extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    size_t last = (size_t)m * n - 1;
    float probe[4] = {x[0], x[1], x[last / 2], x[last]};   // "random enough"
    int b = blockIdx.x, t = threadIdx.x, row = b * blockDim.x + t;
    if (b >= MAX_BLOCKS) return;
    for (int s = 0; s < SLOTS; ++s) {   // every block keeps its own rows: no races between blocks
        if (key_m[b][s] == m && key[b][s][0] == probe[0] && key[b][s][1] == probe[1] &&
            key[b][s][2] == probe[2] && key[b][s][3] == probe[3]) {
            if (row < m) y[row] = stash[b][s][t];   // seen these inputs: skip the whole row
            return;
        }
    }
    int slot = victim[b] % SLOTS;
    if (row < m) {
        float sum = 0.0f;
        for (int j = 0; j < n; ++j) sum += x[(size_t)row * n + j];
        y[row] = sum;
        stash[b][slot][t] = sum;
    }
    __syncthreads();
    if (t == 0) {
        for (int q = 0; q < 4; ++q) key[b][slot][q] = probe[q];
        key_m[b][slot] = m;
        victim[b] += 1;
    }
}
