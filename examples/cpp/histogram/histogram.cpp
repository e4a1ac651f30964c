#include <array>
#include <cstdint>
#include <vector>

// Count how often each byte value 0..255 occurs in `pixels`.
// The counts are added to, not set: the caller hands them in zeroed (init = "fill:0").
// Naive: one increment per pixel, in order.
void histogram(const std::vector<int>& pixels, std::array<std::uint32_t, 256>& counts)
{
    for (std::size_t i = 0; i < pixels.size(); ++i) {
        counts[pixels[i]] += 1;
    }
}
