// Internal helpers shared by conv.cpp and pool.cpp (not part of the kernel
// API): 1-D, 2-D and 3-D spatial geometry is normalised to 3-D by prepending
// unit dimensions, so one loop nest serves all three ranks.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <span>

namespace quant::kernels::detail {

struct Spatial3 {
  int64_t in[3], out[3], kernel[3], strides[3], dilations[3], pads_begin[3], pads_end[3];
};

inline Spatial3 to_spatial3(std::span<const int64_t> in, std::span<const int64_t> out, std::span<const int64_t> kernel,
                            std::span<const int64_t> strides, std::span<const int64_t> dilations,
                            std::span<const int64_t> pads_begin, std::span<const int64_t> pads_end) {
  const size_t n = in.size();
  assert(n >= 1 && n <= 3);
  assert(out.size() == n && kernel.size() == n && strides.size() == n && dilations.size() == n);
  assert(pads_begin.size() == n && pads_end.size() == n);
  Spatial3 s{};
  const size_t lead = 3 - n;
  for (size_t i = 0; i < 3; ++i) {
    const bool real = i >= lead;
    s.in[i] = real ? in[i - lead] : 1;
    s.out[i] = real ? out[i - lead] : 1;
    s.kernel[i] = real ? kernel[i - lead] : 1;
    s.strides[i] = real ? strides[i - lead] : 1;
    s.dilations[i] = real ? dilations[i - lead] : 1;
    s.pads_begin[i] = real ? pads_begin[i - lead] : 0;
    s.pads_end[i] = real ? pads_end[i - lead] : 0;
    assert(s.strides[i] >= 1 && s.dilations[i] >= 1 && s.kernel[i] >= 1);
  }
  return s;
}

// The indices o in [lo, hi) are exactly those in [0, count) for which
// o * stride + offset lies in [0, in). Conv uses it for the outputs a kernel
// tap reaches, pooling for the taps of a window that fall inside the input.
struct IndexRange {
  int64_t lo, hi;
};

inline IndexRange valid_range(int64_t offset, int64_t stride, int64_t in, int64_t count) {
  const int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t last = in - 1 - offset;  // largest admissible o * stride
  const int64_t hi = last < 0 ? 0 : std::min(count, last / stride + 1);
  return {std::min(lo, count), std::max(hi, std::min(lo, count))};
}

// floor(a / b) for b > 0 and any sign of a.
inline int64_t floor_div(int64_t a, int64_t b) {
  assert(b > 0);
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

}  // namespace quant::kernels::detail
