#include "libquant/kernels/broadcast.h"

#include <cstring>

namespace quant::kernels {

void broadcast_copy(const void* x, std::span<const int64_t> x_shape, void* y, std::span<const int64_t> y_shape,
                    size_t elem_size) {
  const auto* src = static_cast<const unsigned char*>(x);
  auto* dst = static_cast<unsigned char*>(y);
  for_each_broadcast_run<1>({x_shape}, y_shape, [&](const int64_t* off, const int64_t* step, int64_t y_off, int64_t n) {
    const unsigned char* s = src + static_cast<size_t>(off[0]) * elem_size;
    unsigned char* d = dst + static_cast<size_t>(y_off) * elem_size;
    if (step[0]) {
      std::memcpy(d, s, static_cast<size_t>(n) * elem_size);
    } else {
      for (int64_t i = 0; i < n; ++i) std::memcpy(d + static_cast<size_t>(i) * elem_size, s, elem_size);
    }
  });
}

}  // namespace quant::kernels
