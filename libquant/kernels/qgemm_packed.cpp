#include "libquant/kernels/qgemm_packed.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "libquant/core/aligned_memory.h"
#include "libquant/kernels/threadpool.h"

namespace quant::kernels {

using detail::kQKGroup;
using detail::kQNr;
using detail::q_padded_k;

AlignedBytes& AlignedBytes::operator=(AlignedBytes&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = o.data_, size_ = o.size_;
    o.data_ = nullptr, o.size_ = 0;
  }
  return *this;
}

AlignedBytes::~AlignedBytes() { std::free(data_); }

uint8_t* AlignedBytes::reserve(size_t bytes) {
  if (bytes <= size_ && data_) return data_;
  std::free(data_);
  data_ = nullptr, size_ = 0;  // no dangling pointer should the allocation throw
  data_ = static_cast<uint8_t*>(allocate_aligned(bytes));
  size_ = aligned_size(bytes);
  return data_;
}

namespace detail {

template <class T>
void pack_q_rows(const T* src, int64_t row_stride, int64_t count, int64_t k, int mr, bool flip, uint8_t* dst,
                 int32_t* sums) {
  const int64_t kp = q_padded_k(k);
  const uint8_t x = flip ? 0x80 : 0;
  std::memset(dst, 0, static_cast<size_t>(kp * mr));
  for (int64_t r = 0; r < count; ++r) {
    const T* row = src + r * row_stride;
    uint8_t* d = dst + r * kQKGroup;
    int64_t g = 0;
    for (; g + kQKGroup <= k; g += kQKGroup) {
      uint32_t word;
      std::memcpy(&word, row + g, 4);
      word ^= x * 0x01010101u;
      std::memcpy(d + g * mr, &word, 4);
    }
    for (int64_t t = g; t < k; ++t) d[g * mr + (t - g)] = static_cast<uint8_t>(row[t]) ^ x;
    if (sums) {
      uint32_t s = 0;  // wraps (defined) for K past 2^31 / 255, as the accumulators do
      for (int64_t t = 0; t < k; ++t) s += static_cast<uint32_t>(stored_value(row[t], flip));
      sums[r] = static_cast<int32_t>(s);
    }
  }
}

template void pack_q_rows<uint8_t>(const uint8_t*, int64_t, int64_t, int64_t, int, bool, uint8_t*, int32_t*);
template void pack_q_rows<int8_t>(const int8_t*, int64_t, int64_t, int64_t, int, bool, uint8_t*, int32_t*);

}  // namespace detail

template <class TB>
PackedQB PackedQB::pack(const TB* b, int64_t ldb, BLayout layout, int64_t k, int64_t n, const TB* zero_points,
                        int64_t zero_point_count) {
  PackedQB p;
  p.n_ = n, p.k_ = k;
  const int64_t kp = q_padded_k(k), panels = (n + kQNr - 1) / kQNr;
  const bool flip = std::is_unsigned_v<TB>;  // the kernels take B as int8
  uint8_t* d = p.data_.reserve(static_cast<size_t>(std::max<int64_t>(panels * kp * kQNr, 1)));
  std::memset(d, 0, static_cast<size_t>(panels * kp * kQNr));
  p.col_sum_.assign(static_cast<size_t>(n), 0);
  p.col_zp_.assign(static_cast<size_t>(n), 0);
  for (int64_t j = 0; j < n; ++j) {
    uint8_t* col = d + (j / kQNr) * kp * kQNr + (j % kQNr) * kQKGroup;
    uint32_t s = 0;  // wraps (defined) for K past 2^31 / 255, as the accumulators do
    for (int64_t t = 0; t < k; ++t) {
      const TB v = layout == BLayout::KxN ? b[t * ldb + j] : b[j * ldb + t];
      col[(t / kQKGroup) * kQNr * kQKGroup + t % kQKGroup] = static_cast<uint8_t>(v) ^ (flip ? 0x80 : 0);
      s += static_cast<uint32_t>(detail::stored_value(v, flip));
    }
    p.col_sum_[static_cast<size_t>(j)] = static_cast<int32_t>(s);
    const TB z = zero_point_count == 0 ? TB{0} : zero_points[zero_point_count == 1 ? 0 : j];
    p.col_zp_[static_cast<size_t>(j)] = detail::stored_value(z, flip);
    p.has_zp_ = p.has_zp_ || p.col_zp_[static_cast<size_t>(j)] != 0;
  }
  // The zero points move no packed byte (they act through the sums above), so
  // the bytes the kernel pairs are exactly these, K padding included.
  p.pairs_bounded_ = detail::s8_pairs_fit_int16(d, panels * kp * kQNr);
  return p;
}

template <class TA>
void qgemm_packed(int64_t m, const TA* a, int64_t lda, TA a_zero_point, const PackedQB& b, const int32_t* bias,
                  const QGemmOutput& out, int threads, const detail::QGemmIsa& isa) {
  const int64_t n = b.n(), k = b.k(), groups = q_padded_k(k) / kQKGroup;
  if (m == 0 || n == 0) return;
  const bool flip = std::is_signed_v<TA>;  // the kernels take A as uint8
  const uint32_t za = static_cast<uint32_t>(detail::stored_value(a_zero_point, flip));
  // The column terms of the product, - za' colsum(b') + K za' zb', plus the bias.
  thread_local std::vector<int32_t> col_add;
  col_add.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    uint32_t v = static_cast<uint32_t>(k) * za * static_cast<uint32_t>(b.col_zp()[j]) -
                 za * static_cast<uint32_t>(b.col_sum()[j]);
    if (bias) v += static_cast<uint32_t>(bias[j]);
    col_add[static_cast<size_t>(j)] = static_cast<int32_t>(v);
  }
  detail::QOutput o;
  o.col_add = col_add.data();
  o.col_zp = b.has_zero_points() ? b.col_zp() : nullptr;
  o.requant = out.requant;
  o.channel_is_row = false;
  o.vector_ok = detail::requant_vector_ok(out.requant);
  o.type = out.type;
  o.ldy = out.ldy;
  const int64_t col_panels = (n + kQNr - 1) / kQNr;
  // One row (a classifier at batch 1, a decoder's token): the micro-kernel
  // would compute MR rows to keep one; the row kernel takes the row alone
  // against each B panel. mobilenet_v2's 1280 -> 1000 QGemm alone (1 thread,
  // weights in L2, unbounded pairs, medians of 1000 calls, three runs
  // alternating, stop 45): AVX2 105-221 -> 62-66 us, AVX-512 VNNI 71-72 ->
  // 27-29 us; in the model (per-step minima) AVX2 350-388 -> 213-246 us.
  if (m == 1 && isa.a_unsigned_row) {
    thread_local AlignedBytes row_buf;
    const int64_t kp = q_padded_k(k);
    // The row as bytes, then widened after them (kp is a multiple of 4).
    uint8_t* row = row_buf.reserve(static_cast<size_t>(3 * kp));
    int32_t row_sum[1];
    detail::pack_q_rows(a, lda, 1, k, 1, flip, row, o.col_zp ? row_sum : nullptr);
    int16_t* const wide = reinterpret_cast<int16_t*>(row + kp);
    detail::widen_q_panels(row, kp, wide, false);
    const uint8_t* const a8 = row;  // this thread's buffers, read by every worker
    const int16_t* const a16 = wide;
    detail::QOutput ot = o;
    ot.row_sum = o.col_zp ? row_sum : nullptr;
    ot.y = out.y;
    parallel_for(threads, col_panels, [&](int64_t q) {
      alignas(64) int32_t tile[kQNr];
      isa.a_unsigned_row(groups, a8, a16, b.panel(q), tile);
      isa.finish(tile, kQNr, 1, std::min<int64_t>(kQNr, n - q * kQNr), 0, q * kQNr, ot);
    });
    return;
  }
  const int mr = isa.mr;
  const int64_t row_panels = (m + mr - 1) / mr;
  // Few row panels (a matrix-vector product): split the columns too.
  int64_t chunks = 1;
  if (threads > 1 && row_panels < 2 * threads)
    chunks = std::min<int64_t>(col_panels, (2 * threads + row_panels - 1) / row_panels);
  const int64_t per_chunk = (col_panels + chunks - 1) / chunks;
  const int64_t elem = out.type == detail::QOutType::S32 ? 4 : 1;
  // The pairs kernel where B's pairs are bounded; else, where the ISA has
  // one, the kernel on A widened as it is packed (once per row panel, read by
  // every column panel); else the byte kernel. The same bits.
  const bool pairs = b.pairs_bounded() && isa.a_unsigned_pairs;
  const bool wide_a = !pairs && isa.a_unsigned_wide;
  const detail::QMicroKernel kernel = pairs ? isa.a_unsigned_pairs : wide_a ? isa.a_unsigned_wide : isa.a_unsigned;
  parallel_for(threads, row_panels * chunks, [&](int64_t task) {
    thread_local AlignedBytes a_buf;
    const int64_t p = task / chunks, q0 = (task % chunks) * per_chunk, q1 = std::min(col_panels, q0 + per_chunk);
    const int64_t i0 = p * mr;
    const int mv = static_cast<int>(std::min<int64_t>(mr, m - i0));
    int32_t sums[detail::kQMaxMr];
    uint8_t* ap = a_buf.reserve(static_cast<size_t>(q_padded_k(k) * mr * (wide_a ? 2 : 1)));
    detail::pack_q_rows(a + i0 * lda, lda, mv, k, mr, flip, ap, o.col_zp ? sums : nullptr);
    if (wide_a) detail::widen_q_panels(ap, q_padded_k(k) * mr, reinterpret_cast<int16_t*>(ap), false);
    detail::QOutput ot = o;
    ot.row_sum = o.col_zp ? sums : nullptr;
    ot.y = static_cast<uint8_t*>(out.y) + i0 * out.ldy * elem;
    alignas(64) int32_t tile[detail::kQMaxMr * kQNr];
    for (int64_t q = q0; q < q1; ++q) {
      kernel(groups, ap, b.panel(q), tile);
      const int64_t j0 = q * kQNr;
      isa.finish(tile, kQNr, mv, std::min<int64_t>(kQNr, n - j0), 0, j0, ot);
    }
  });
}

template <class TA, class TB>
void qgemm_fast(const QGemmArgs<TA, TB>& args, int threads, const detail::QGemmIsa& isa) {
  const PackedQB b = PackedQB::pack(args.b, args.ldb, args.b_layout, args.k, args.n, args.b_zero_point,
                                    args.b_zero_point_count);
  QGemmOutput out;
  out.y = args.c, out.ldy = args.ldc;
  qgemm_packed(args.m, args.a, args.lda, args.a_zero_point, b, nullptr, out, threads, isa);
}

template PackedQB PackedQB::pack<uint8_t>(const uint8_t*, int64_t, BLayout, int64_t, int64_t, const uint8_t*, int64_t);
template PackedQB PackedQB::pack<int8_t>(const int8_t*, int64_t, BLayout, int64_t, int64_t, const int8_t*, int64_t);
template void qgemm_packed<uint8_t>(int64_t, const uint8_t*, int64_t, uint8_t, const PackedQB&, const int32_t*,
                                    const QGemmOutput&, int, const detail::QGemmIsa&);
template void qgemm_packed<int8_t>(int64_t, const int8_t*, int64_t, int8_t, const PackedQB&, const int32_t*,
                                   const QGemmOutput&, int, const detail::QGemmIsa&);
template void qgemm_fast<uint8_t, int8_t>(const QGemmArgs<uint8_t, int8_t>&, int, const detail::QGemmIsa&);
template void qgemm_fast<uint8_t, uint8_t>(const QGemmArgs<uint8_t, uint8_t>&, int, const detail::QGemmIsa&);
template void qgemm_fast<int8_t, int8_t>(const QGemmArgs<int8_t, int8_t>&, int, const detail::QGemmIsa&);
template void qgemm_fast<int8_t, uint8_t>(const QGemmArgs<int8_t, uint8_t>&, int, const detail::QGemmIsa&);

}  // namespace quant::kernels
