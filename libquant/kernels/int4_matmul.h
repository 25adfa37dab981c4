// Y = A x dequant(B)^T with B in 4-bit blocks along the reduction axis, as ONNX
// Runtime's com.microsoft MatMulNBits (bits = 4) stores it, and the int8 x int4
// product of torchao's Int8DynActInt4Weight scheme.
#pragma once

#include <cstdint>

namespace quant::kernels {

// B holds N rows (output columns) of K weights, cut into n_blocks =
// ceil(K / block_size) blocks along K. Row n, block b is a blob of
// block_size / 2 bytes at packed + (n * n_blocks + b) * block_size / 2; weight
// k of the block is its low nibble when k is even, its high nibble when odd
// (MatMulNBits packs low-first). The last block of a K that block_size does
// not divide is padded; the padding is never read.
// weight(n, k) = (code(n, k) - zero_point(n, b)) * scale[n * n_blocks + b] with
// zero points 4-bit too, packed low-first per row: row n uses bytes
// zero_points + n * ceil(n_blocks / 2); without zero points every block's is 8
// (so codes 0..15 stand for -8..7: symmetric int4).
struct Int4Blocks {
  int64_t n = 0, k = 0, block_size = 0;
  const uint8_t* packed = nullptr;
  const float* scales = nullptr;
  const uint8_t* zero_points = nullptr;  // may be null
  // ceil(k / block_size), without the overflow of k + block_size - 1 for
  // hostile attribute values.
  int64_t n_blocks() const { return k / block_size + (k % block_size != 0); }
  int64_t blob_bytes() const { return block_size / 2; }
};

// Integer path: A already quantized per row (quantize_rows_s8): qa is M x K,
// real a(m, k) = a_scales[m] * (qa(m, k) - a_zero_points[m]). For each block the
// products (qa - za) * (code - zw) are summed in int32 (|term| <= 255 * 15, so
// no overflow for any block_size up to 2^19), the block sum is scaled by the
// block's weight scale in float and added up over blocks, and the row total is
// multiplied by a_scales[m]:
//   y(m, n) = a_scales[m] * sum_b scale(n, b) * int32 sum_{k in b} (qa - za)(code - zw)
// then bias[n] is added (bias may be null). y is M x N. Allocates nothing.
void matmul_s8_int4(const int8_t* qa, const float* a_scales, const int32_t* a_zero_points, int64_t m,
                    const Int4Blocks& b, const float* bias, float* y);

// Float path (MatMulNBits with accuracy_level < 4: A stays float): per block,
// sum_k a(m, k) * (code - zw) in float, times the block scale, summed over
// blocks; bias added. The weights are never expanded to a float matrix.
void matmul_f32_int4(const float* a, int64_t m, const Int4Blocks& b, const float* bias, float* y);

// Packs int4 values (-8..7, one per int8, N rows of K) into MatMulNBits blobs
// with implicit zero point 8: code = value + 8; padding codes are 8 (value 0).
// `packed` must hold n * n_blocks * block_size / 2 bytes.
void pack_int4_blocks(const int8_t* values, int64_t n, int64_t k, int64_t block_size, uint8_t* packed);

}  // namespace quant::kernels
