// y = a * x + y over n floats (BLAS saxpy), the plain C way: raw pointers and a count.
// Naive: one pass, one element at a time, on one CPU core.
void axpy(int n, float a, const float* x, float* y)
{
    for (int i = 0; i < n; ++i) {
        y[i] = a * x[i] + y[i];
    }
}
