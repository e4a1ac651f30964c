#include <algorithm>
#include <vector>

// The smallest and the largest value of x, folded into lo and hi: the caller passes the
// starting values (init = "fill:inf" and "fill:-inf"), so partial results can be combined.
// Naive: one sequential pass.
void minmax(const std::vector<float>& x, float& lo, float& hi)
{
    for (float v : x) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
}
