// expect: timeout (no progress) — never returns: spins on a condition that stays true
// task: gelu
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    while (((volatile const float*)x)[0] < 1e30f) {
    }
}
