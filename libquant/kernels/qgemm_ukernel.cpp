#include "libquant/kernels/qgemm_ukernel.h"
#include "libquant/kernels/cpu.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <type_traits>

namespace quant::kernels::detail {
namespace {

constexpr int kPortableMr = 4;

// The definition of every micro-kernel: plain loops over the packed layout.
template <bool kAUnsigned>
void q8_gemm_portable_4x16(int64_t groups, const uint8_t* a, const uint8_t* b, int32_t* tile) {
  using TA = std::conditional_t<kAUnsigned, uint8_t, int8_t>;
  using TB = std::conditional_t<kAUnsigned, int8_t, uint8_t>;
  uint32_t acc[kPortableMr * kQNr] = {};
  for (int64_t g = 0; g < groups; ++g) {
    for (int r = 0; r < kPortableMr; ++r)
      for (int c = 0; c < kQNr; ++c)
        for (int q = 0; q < kQKGroup; ++q)
          acc[r * kQNr + c] += static_cast<uint32_t>(static_cast<int32_t>(static_cast<TA>(a[r * 4 + q])) *
                                                     static_cast<int32_t>(static_cast<TB>(b[c * 4 + q])));
    a += kPortableMr * kQKGroup;
    b += kQNr * kQKGroup;
  }
  for (int i = 0; i < kPortableMr * kQNr; ++i) tile[i] = static_cast<int32_t>(acc[i]);
}

const QGemmIsa kPortable{"portable", kPortableMr, q8_gemm_portable_4x16<true>, q8_gemm_portable_4x16<false>,
                         q_finish_scalar, nullptr};

}  // namespace

bool s8_pairs_fit_int16(const uint8_t* bytes, int64_t count) {
  for (int64_t i = 0; i + 1 < count; i += 2) {
    const int32_t w0 = static_cast<int8_t>(bytes[i]), w1 = static_cast<int8_t>(bytes[i + 1]);
    const int32_t pos = std::max(w0, 0) + std::max(w1, 0), neg = std::max(-w0, 0) + std::max(-w1, 0);
    if (pos > 128 || neg > 128) return false;
  }
  return true;
}

void widen_q_panels(const uint8_t* bytes, int64_t count, int16_t* out, bool is_signed) {
  // Back to front: in place, out[i] (bytes 2i and 2i + 1) overwrites no byte j < i still to be read.
  for (int64_t i = count - 1; i >= 0; --i)
    out[i] = is_signed ? static_cast<int16_t>(static_cast<int8_t>(bytes[i])) : static_cast<int16_t>(bytes[i]);
}

bool requant_vector_ok(const Requantizer* r) {
  if (!r || r->mode != RequantMode::Float) return false;
  for (float s : r->scale)
    if (!std::isfinite(s)) return false;
  return true;
}

QFinishParams finish_params(const QOutput& o) {
  QFinishParams f;
  f.requant = o.type != QOutType::S32;
  if (!f.requant) return f;
  int32_t qlo = 0, qhi = 0;
  if (o.type == QOutType::U8) std::tie(qlo, qhi) = output_range<uint8_t>(*o.requant);
  if (o.type == QOutType::S8) std::tie(qlo, qhi) = output_range<int8_t>(*o.requant);
  f.zero_point = o.requant->zero_point;
  f.lo = qlo - f.zero_point, f.hi = qhi - f.zero_point;
  f.per_channel = o.requant->count() > 1;
  return f;
}

void q_finish_one(uint32_t v, int64_t i, int64_t j, const QOutput& o) {
  if (o.row_add) v += static_cast<uint32_t>(o.row_add[i]);
  if (o.col_add) v += static_cast<uint32_t>(o.col_add[j]);
  if (o.row_zp) v -= static_cast<uint32_t>(o.row_zp[i]) * static_cast<uint32_t>(o.col_sum[j]);
  if (o.row_sum) v -= static_cast<uint32_t>(o.row_sum[i]) * static_cast<uint32_t>(o.col_zp[j]);
  const int64_t at = i * o.ldy + j;
  const int64_t channel = o.channel_is_row ? i : j;
  switch (o.type) {
    case QOutType::S32: static_cast<int32_t*>(o.y)[at] = static_cast<int32_t>(v); break;
    case QOutType::U8: static_cast<uint8_t*>(o.y)[at] = requantize_one<uint8_t>(static_cast<int32_t>(v), *o.requant, channel); break;
    case QOutType::S8: static_cast<int8_t*>(o.y)[at] = requantize_one<int8_t>(static_cast<int32_t>(v), *o.requant, channel); break;
  }
}

void q_finish_scalar(const int32_t* acc, int64_t acc_stride, int64_t rows, int64_t cols, int64_t i0, int64_t j0,
                     const QOutput& o) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) q_finish_one(static_cast<uint32_t>(acc[i * acc_stride + j]), i0 + i, j0 + j, o);
}

std::vector<const QGemmIsa*> supported_qgemm_isas() {
  std::vector<const QGemmIsa*> isas{&kPortable};
#if defined(__x86_64__)
  if (kQGemmIsaAvx2 && cpu_supports("avx2")) isas.push_back(kQGemmIsaAvx2);
  if (kQGemmIsaAvxVnni && cpu_supports("avxvnni")) isas.push_back(kQGemmIsaAvxVnni);
  if (kQGemmIsaAvx512Vnni && cpu_supports("avx512f") && cpu_supports("avx512bw") &&
      cpu_supports("avx512vl") && cpu_supports("avx512vnni"))
    isas.push_back(kQGemmIsaAvx512Vnni);
#endif
  return isas;
}

const QGemmIsa& best_qgemm_isa() {
  static const QGemmIsa* best = supported_qgemm_isas().back();
  return *best;
}

std::vector<const QGemmIsa*> supported_conv_qgemm_isas() {
  std::vector<const QGemmIsa*> isas = supported_qgemm_isas();
  if (kQGemmIsaAmx && cpu_supports("amx")) isas.push_back(kQGemmIsaAmx);
  return isas;
}

const QGemmIsa& best_conv_qgemm_isa() {
  static const QGemmIsa* best = supported_conv_qgemm_isas().back();
  return *best;
}

void pack_q_tiles(const uint8_t* src, int64_t panels, int64_t groups, uint8_t* dst) {
  constexpr int kRows = kQAmxMr, kHalf = kQAmxMr / 2;
  const int64_t chunks = (groups + kQAmxGroups - 1) / kQAmxGroups;
  for (int64_t p = 0; p < panels; ++p, src += kRows * groups * kQKGroup)
    for (int64_t c = 0; c < chunks; ++c)
      for (int h = 0; h < 2; ++h)
        for (int r = 0; r < kHalf; ++r, dst += kQAmxGroups * kQKGroup)
          for (int64_t i = 0; i < kQAmxGroups; ++i) {
            const int64_t g = c * kQAmxGroups + i;
            // Group g of row h * 16 + r in the source layout, zeros past K.
            for (int q = 0; q < kQKGroup; ++q)
              dst[i * kQKGroup + q] = g < groups ? src[(g * kRows + h * kHalf + r) * kQKGroup + q] : 0;
          }
}

}  // namespace quant::kernels::detail
