#include "libquant/kernels/qwide.h"

#include <algorithm>
#include <cassert>

#include "libquant/kernels/qconv_shape.h"

namespace quant::kernels {
namespace {

constexpr int64_t kBlock = 64;

// acc[0..n) += sum over k of a[k] * b[k * n + j] for int32 operands already
// offset by their zero points: the b panel is K x N, contiguous.
void accumulate_row(const int32_t* a, const int32_t* b, int64_t k, int64_t n, int64_t* acc, std::vector<int32_t>& part) {
  for (int64_t k0 = 0; k0 < k; k0 += kBlock) {
    std::fill(part.begin(), part.end(), 0);
    const int64_t k1 = std::min(k, k0 + kBlock);
    for (int64_t kk = k0; kk < k1; ++kk) {
      const int32_t av = a[kk];
      const int32_t* brow = b + kk * n;
      int32_t* p = part.data();
      for (int64_t j = 0; j < n; ++j) p[j] += av * brow[j];
    }
    for (int64_t j = 0; j < n; ++j) acc[j] += part[static_cast<size_t>(j)];
  }
}

}  // namespace

template <class TA, class TB>
void qgemm_wide(const WideGemmArgs<TA, TB>& q, int64_t* acc) {
  assert(q.b_zero_point_count == 1 || q.b_zero_point_count == q.n);
  std::vector<int32_t> panel(static_cast<size_t>(q.k * q.n));
  for (int64_t kk = 0; kk < q.k; ++kk)
    for (int64_t j = 0; j < q.n; ++j) {
      const int32_t zp = q.b_zero_point[q.b_zero_point_count == 1 ? 0 : j];
      const TB v = q.b_nxk ? q.b[j * q.ldb + kk] : q.b[kk * q.ldb + j];
      panel[static_cast<size_t>(kk * q.n + j)] = static_cast<int32_t>(v) - zp;
    }
  std::vector<int32_t> row(static_cast<size_t>(q.k)), part(static_cast<size_t>(q.n));
  for (int64_t i = 0; i < q.m; ++i) {
    for (int64_t kk = 0; kk < q.k; ++kk) row[static_cast<size_t>(kk)] = static_cast<int32_t>(q.a[i * q.lda + kk]) - q.a_zero_point;
    int64_t* out = acc + i * q.n;
    std::fill(out, out + q.n, int64_t{0});
    accumulate_row(row.data(), panel.data(), q.k, q.n, out, part);
  }
}

template <class TX, class TW, class TY>
void qconv_wide(const ConvGeometry& g, const TX* x, int32_t x_zero_point, const TW* w, const TW* w_zero_point,
                int64_t w_zero_point_count, const int32_t* bias, const Requantizer& r, TY* y) {
  const detail::QConvShape c = detail::qconv_shape(g);
  // im2row of one image and group; padded taps read x's zero point (so add 0).
  std::vector<TX> patches(static_cast<size_t>(c.out_plane * c.reduction));
  std::vector<int64_t> acc(static_cast<size_t>(c.out_plane * c.group_out));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const TX* xg = x + (n * g.in_channels + grp * c.group_in) * c.in_plane;
      detail::gather_patches(c, xg, static_cast<TX>(x_zero_point), 0, c.out_plane, patches.data());
      const int64_t first = grp * c.group_out;
      WideGemmArgs<TX, TW> q;
      q.m = c.out_plane, q.n = c.group_out, q.k = c.reduction;
      q.a = patches.data(), q.lda = c.reduction, q.a_zero_point = x_zero_point;
      q.b = w + first * c.reduction, q.ldb = c.reduction, q.b_nxk = true;
      q.b_zero_point = w_zero_point_count == 1 ? w_zero_point : w_zero_point + first;
      q.b_zero_point_count = w_zero_point_count == 1 ? 1 : c.group_out;
      qgemm_wide(q, acc.data());
      TY* out = y + (n * g.out_channels + first) * c.out_plane;
      requantize_wide<TY>(acc.data(), c.out_plane, c.group_out, c.group_out, bias ? bias + first : nullptr, r, first, out,
                          1, c.out_plane);
    }
}

#define QT_INSTANTIATE_WIDE(TA, TB)                                                                             \
  template void qgemm_wide<TA, TB>(const WideGemmArgs<TA, TB>&, int64_t*);                                       \
  template void qconv_wide<TA, TB, TA>(const ConvGeometry&, const TA*, int32_t, const TB*, const TB*, int64_t, \
                                       const int32_t*, const Requantizer&, TA*);
QT_INSTANTIATE_WIDE(int16_t, int8_t)
QT_INSTANTIATE_WIDE(int16_t, uint8_t)
QT_INSTANTIATE_WIDE(uint16_t, int8_t)
QT_INSTANTIATE_WIDE(uint16_t, uint8_t)
#undef QT_INSTANTIATE_WIDE

}  // namespace quant::kernels
