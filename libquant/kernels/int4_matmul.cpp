#include "libquant/kernels/int4_matmul.h"

#include <algorithm>

namespace quant::kernels {
namespace {

int32_t zero_point_of(const Int4Blocks& b, int64_t n, int64_t block) {
  if (!b.zero_points) return 8;
  const int64_t row_bytes = (b.n_blocks() + 1) / 2;
  const uint8_t byte = b.zero_points[n * row_bytes + block / 2];
  return block % 2 == 0 ? (byte & 0xF) : (byte >> 4);
}

// Calls f(k0, k_end, blob, zero_point, scale) for every block of row n.
template <class F>
void for_each_block(const Int4Blocks& b, int64_t n, F&& f) {
  const int64_t nb = b.n_blocks();
  for (int64_t blk = 0; blk < nb; ++blk) {
    const int64_t k0 = blk * b.block_size;
    const int64_t k1 = std::min(b.k, k0 + b.block_size);
    const uint8_t* blob = b.packed + (n * nb + blk) * b.blob_bytes();
    f(k0, k1, blob, zero_point_of(b, n, blk), b.scales[n * nb + blk]);
  }
}

inline int32_t code_at(const uint8_t* blob, int64_t i) {
  const uint8_t byte = blob[i / 2];
  return i % 2 == 0 ? (byte & 0xF) : (byte >> 4);
}

}  // namespace

void matmul_s8_int4(const int8_t* qa, const float* a_scales, const int32_t* a_zero_points, int64_t m,
                    const Int4Blocks& b, const float* bias, float* y) {
  for (int64_t r = 0; r < m; ++r) {
    const int8_t* row = qa + r * b.k;
    const int32_t za = a_zero_points[r];
    for (int64_t n = 0; n < b.n; ++n) {
      float total = 0;
      for_each_block(b, n, [&](int64_t k0, int64_t k1, const uint8_t* blob, int32_t zw, float scale) {
        int32_t acc = 0;
        for (int64_t k = k0; k < k1; ++k) acc += (int32_t{row[k]} - za) * (code_at(blob, k - k0) - zw);
        total += static_cast<float>(acc) * scale;
      });
      y[r * b.n + n] = total * a_scales[r] + (bias ? bias[n] : 0.0f);
    }
  }
}

void matmul_f32_int4(const float* a, int64_t m, const Int4Blocks& b, const float* bias, float* y) {
  for (int64_t r = 0; r < m; ++r) {
    const float* row = a + r * b.k;
    for (int64_t n = 0; n < b.n; ++n) {
      float total = 0;
      for_each_block(b, n, [&](int64_t k0, int64_t k1, const uint8_t* blob, int32_t zw, float scale) {
        float acc = 0;
        for (int64_t k = k0; k < k1; ++k) acc += row[k] * static_cast<float>(code_at(blob, k - k0) - zw);
        total += acc * scale;
      });
      y[r * b.n + n] = total + (bias ? bias[n] : 0.0f);
    }
  }
}

void pack_int4_blocks(const int8_t* values, int64_t n, int64_t k, int64_t block_size, uint8_t* packed) {
  const int64_t nb = (k + block_size - 1) / block_size;
  const int64_t blob = block_size / 2;
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t blk = 0; blk < nb; ++blk) {
      uint8_t* out = packed + (r * nb + blk) * blob;
      for (int64_t i = 0; i < block_size; ++i) {
        const int64_t kk = blk * block_size + i;
        const auto code = static_cast<uint8_t>((kk < k ? values[r * k + kk] : 0) + 8);
        if (i % 2 == 0) out[i / 2] = code;
        else out[i / 2] = static_cast<uint8_t>(out[i / 2] | (code << 4));
      }
    }
  }
}

}  // namespace quant::kernels
