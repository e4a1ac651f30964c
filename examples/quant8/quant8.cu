// y[i] = int8(clamp(rint(x[i] * 127), -127, 127)). Naive: one thread per element.
extern "C" __global__ void quant8(const float* x, signed char* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float q = rintf(x[i] * 127.0f);
        q = fminf(fmaxf(q, -127.0f), 127.0f);
        y[i] = (signed char)q;
    }
}
