#include <vector>

// Inclusive prefix sum: out[i] = x[0] + ... + x[i], in 64-bit integers (exact).
// Naive: one running sum, strictly sequential.
void prefix_sum(const std::vector<int>& x, std::vector<long long>& out)
{
    long long running = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        running += x[i];
        out[i] = running;
    }
}
