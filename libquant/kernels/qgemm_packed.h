// Fast integer GEMM: 8-bit operands packed for the dot-product micro-kernels
// of qgemm_ukernel.h, zero points applied through precomputed row / column
// sums, a fused output stage (bias + requantization) and the work split over
// threads. qgemm.h keeps the reference kernels the tests compare this against
// bit for bit.
//
// Signedness: the micro-kernels multiply u8 by s8. An operand of the other
// type has its sign bit flipped while packing (x ^ 0x80 = x + 128 for int8,
// x - 128 for uint8) and its zero point moved the same way, so
//   (a - za) = (a' - za'),  (b - zb) = (b' - zb')
// and the product is unchanged:
//   sum_k (a' - za')(b' - zb') = D - za' colsum(b') - zb' rowsum(a') + K za' zb'
// with D = sum_k a' b' from the micro-kernel, everything modulo 2^32 exactly
// like the int32 accumulation of the reference.
//
// Results do not depend on the thread count (integer arithmetic, each output
// computed by one thread).
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "libquant/kernels/qgemm.h"
#include "libquant/kernels/qgemm_ukernel.h"

namespace quant::kernels {

// Storage aligned for the widest vector loads (64 bytes), grow-only.
class AlignedBytes {
 public:
  AlignedBytes() = default;
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;
  AlignedBytes(AlignedBytes&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr, o.size_ = 0; }
  AlignedBytes& operator=(AlignedBytes&& o) noexcept;
  ~AlignedBytes();
  // At least `bytes` bytes; the contents are lost when it grows.
  uint8_t* reserve(size_t bytes);
  uint8_t* data() const { return data_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// The B operand (weights of MatMul / Gemm, N columns of K) packed once: int8
// panels of detail::kQNr columns, column sums and zero points in the int8
// domain (uint8 weights are flipped).
class PackedQB {
 public:
  PackedQB() = default;
  template <class TB>
  static PackedQB pack(const TB* b, int64_t ldb, BLayout layout, int64_t k, int64_t n, const TB* zero_points,
                       int64_t zero_point_count);
  bool empty() const { return n_ == 0 && k_ == 0 && col_sum_.empty(); }
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  const uint8_t* panel(int64_t q) const { return data_.data() + q * detail::q_padded_k(k_) * detail::kQNr; }
  const int32_t* col_sum() const { return col_sum_.data(); }
  const int32_t* col_zp() const { return col_zp_.data(); }
  bool has_zero_points() const { return has_zp_; }
  // Every pair of the packed bytes passes detail::s8_pairs_fit_int16: the
  // ISA's a_unsigned_pairs kernel is exact on these weights.
  bool pairs_bounded() const { return pairs_bounded_; }

 private:
  AlignedBytes data_;
  int64_t n_ = 0, k_ = 0;
  std::vector<int32_t> col_sum_, col_zp_;
  bool has_zp_ = false;
  bool pairs_bounded_ = false;
};

// Where the output stage writes: int32 (requant null) or requantized uint8 /
// int8; element (m, n) at y[m * ldy + n].
struct QGemmOutput {
  const Requantizer* requant = nullptr;
  detail::QOutType type = detail::QOutType::S32;
  void* y = nullptr;
  int64_t ldy = 0;
};

// y = output(sum_k (A - za)(B - zb) + bias[n]) for A [M, K] (row stride lda)
// and a packed B; bias may be null (per column n). `threads` threads.
template <class TA>
void qgemm_packed(int64_t m, const TA* a, int64_t lda, TA a_zero_point, const PackedQB& b, const int32_t* bias,
                  const QGemmOutput& out, int threads, const detail::QGemmIsa& isa = detail::best_qgemm_isa());

// Convenience for callers whose B is not constant: packs B and runs, the
// QGemmArgs contract (int32 C) with the fast kernel.
template <class TA, class TB>
void qgemm_fast(const QGemmArgs<TA, TB>& args, int threads, const detail::QGemmIsa& isa = detail::best_qgemm_isa());

namespace detail {
// The value a packed byte stands for: the source value, moved by 128 into
// the other 8-bit type when flipped (x ^ 0x80).
template <class T>
int32_t stored_value(T x, bool flip) {
  return flip ? static_cast<int32_t>(x) + (std::is_signed_v<T> ? 128 : -128) : static_cast<int32_t>(x);
}

// Row panels of the A operand: rows [r0, r0 + count) (count <= mr) of
// element(r, k) = src[r * row_stride + k], flipped when `flip`, zero padded to
// mr rows and q_padded_k(k) depth. Writes each row's sum (of the stored
// values) to sums[r] when sums is not null.
template <class T>
void pack_q_rows(const T* src, int64_t row_stride, int64_t count, int64_t k, int mr, bool flip, uint8_t* dst,
                 int32_t* sums);
}  // namespace detail

}  // namespace quant::kernels
