// axpy() with 16-byte loads and stores: four elements a thread (x and y start 16-byte aligned,
// as every array the verifier and best_host.cu allocate does), the tail one at a time.
extern "C" __global__ void axpy(int n, float a, const float* x, float* y)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int quads = n / 4;
    if (i < quads) {
        const float4 xv = reinterpret_cast<const float4*>(x)[i];
        float4 yv = reinterpret_cast<float4*>(y)[i];
        yv.x = a * xv.x + yv.x;
        yv.y = a * xv.y + yv.y;
        yv.z = a * xv.z + yv.z;
        yv.w = a * xv.w + yv.w;
        reinterpret_cast<float4*>(y)[i] = yv;
    }
    const int tail = 4 * quads + i;
    if (i < n - 4 * quads) {
        y[tail] = a * x[tail] + y[tail];
    }
}
