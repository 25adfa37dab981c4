// Weight quantization loops of qconvert that read every float weight of a
// model once: the per-column absmax of MatMul weights [K, N] and the int4
// MatMulNBits blobs made straight from [K, N]. A large model's conversion
// time is these loops and reading the weights (DESIGN "Large models"), so
// each has an SSE2 path (x86-64's baseline: no dispatch needed) that equals
// its scalar definition bit for bit; the scalar ones are kept for other
// hosts and for the tests.
#pragma once

#include <cstdint>

namespace quant::kernels {

// m[c] = max(m[c], |row[c]|) over the finite row[c] (NaN and Inf skipped),
// c in [0, n); m[c] >= 0 on entry.
void absmax_update(const float* row, float* m, int64_t n);
void absmax_update_scalar(const float* row, float* m, int64_t n);

// torchao's symmetric int4 (Int8DynActInt4Weight) of W^T for a MatMul
// weight W [k, n], written as pack_int4_blocks (int4_matmul.h) writes it,
// without forming W^T: column c of W is output row c, cut into
// n_blocks = ceil(k / block_size) groups along k.
//   scale(c, b) = max(absmax of the finite W[k, c], k in group b) / 7.5, FLT_EPSILON)
//   code = clamp(nearbyint(W / scale), -8, 7), NaN -> 0, stored + 8 (padding 8)
// scales gets n * n_blocks floats (row c, block b at c * n_blocks + b),
// packed n * n_blocks * block_size / 2 bytes. block_size is even.
void quantize_int4_blocks_kn(const float* w, int64_t k, int64_t n, int64_t block_size, uint8_t* packed,
                             float* scales);
void quantize_int4_blocks_kn_scalar(const float* w, int64_t k, int64_t n, int64_t block_size, uint8_t* packed,
                                    float* scales);

}  // namespace quant::kernels
