#include <cstddef>
#include <vector>

// y = A x for a row-major M x N matrix A, with std::vector in and out.
// Naive: one dot product per row, one row after another.
void gemv(const std::vector<double>& A, const std::vector<double>& x, std::vector<double>& y,
          std::size_t M, std::size_t N)
{
    for (std::size_t i = 0; i < M; ++i) {
        double sum = 0.0;
        for (std::size_t j = 0; j < N; ++j) {
            sum += A[i * N + j] * x[j];
        }
        y[i] = sum;
    }
}
