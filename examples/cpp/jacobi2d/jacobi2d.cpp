// One Jacobi step of the 2-D Laplace equation on a rows x cols grid (row-major):
// every interior point becomes the mean of its four neighbours; the border is copied.
// Naive: a double loop, one point at a time.
void jacobi_step(const float* in, float* out, int rows, int cols)
{
    for (int i = 0; i < rows; ++i) {
        for (int j = 0; j < cols; ++j) {
            const int k = i * cols + j;
            if (i == 0 || j == 0 || i == rows - 1 || j == cols - 1) {
                out[k] = in[k];
            } else {
                out[k] = 0.25f * (in[k - cols] + in[k + cols] + in[k - 1] + in[k + 1]);
            }
        }
    }
}
