#include "libquant/kernels/qconv.h"

#include <algorithm>
#include <cassert>

#include "libquant/kernels/qconv_shape.h"
#include "libquant/kernels/qgemm.h"
#include "libquant/kernels/spatial.h"

namespace quant::kernels {
namespace {

// Output pixels per tile: big enough for qgemm to amortise its per-row work,
// small enough that patches and accumulators stay in cache; fewer when one
// patch row is so long that the tile would pass kTileBytes (the workspace then
// stays bounded by the size of one weight row, whatever the kernel size).
constexpr int64_t kTilePixels = 256;
constexpr int64_t kTileBytes = int64_t{1} << 20;

struct ConvShape : detail::QConvShape {
  int64_t tile = 0;  // output pixels gathered per qgemm call
};

ConvShape conv_shape(const ConvGeometry& g) {
  ConvShape c{detail::qconv_shape(g)};
  c.tile = std::min({kTilePixels, c.out_plane, std::max<int64_t>(1, kTileBytes / std::max<int64_t>(c.reduction, 1))});
  return c;
}

size_t patch_bytes(const ConvShape& c) {
  const size_t bytes = static_cast<size_t>(c.tile * c.reduction);
  return (bytes + alignof(int32_t) - 1) / alignof(int32_t) * alignof(int32_t);
}

// Runs the convolution tile by tile and hands each tile's accumulators to
// sink(image, group, first_pixel, pixel_count, acc), acc being
// [pixel_count x group_out] with row stride group_out.
template <class TX, class TW, class Sink>
void run_tiles(const ConvGeometry& g, const QConvArgs<TX, TW>& a, void* workspace, Sink&& sink) {
  static_assert(sizeof(TX) == 1, "patches are sized for 8-bit inputs");
  const ConvShape c = conv_shape(g);
  TX* patches = static_cast<TX*>(workspace);
  int32_t* acc = reinterpret_cast<int32_t*>(static_cast<unsigned char*>(workspace) + patch_bytes(c));
  const bool per_channel = a.w_zero_point_count > 1;
  assert(!per_channel || a.w_zero_point_count == g.out_channels);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const TX* x = a.x + (n * g.in_channels + grp * c.group_in) * c.in_plane;
      QGemmArgs<TX, TW> q;
      q.n = c.group_out, q.k = c.reduction;
      q.a = patches, q.lda = c.reduction, q.a_zero_point = a.x_zero_point;
      q.b = a.w + grp * c.group_out * c.reduction, q.ldb = c.reduction, q.b_layout = BLayout::NxK;
      q.b_zero_point = per_channel ? a.w_zero_point + grp * c.group_out : a.w_zero_point;
      q.b_zero_point_count = per_channel ? c.group_out : a.w_zero_point_count;
      q.c = acc, q.ldc = c.group_out;
      for (int64_t p0 = 0; p0 < c.out_plane; p0 += c.tile) {
        const int64_t count = std::min(c.tile, c.out_plane - p0);
        detail::gather_patches(c, x, a.x_zero_point, p0, count, patches);
        q.m = count;
        qgemm(q);
        sink(n, grp, p0, count, static_cast<const int32_t*>(acc));
      }
    }
  }
}

}  // namespace

size_t qconv_workspace_bytes(const ConvGeometry& g) {
  const ConvShape c = conv_shape(g);
  return patch_bytes(c) + static_cast<size_t>(c.tile * c.group_out) * sizeof(int32_t);
}

template <class TX, class TW>
void qconv_s32(const ConvGeometry& g, const QConvArgs<TX, TW>& args, int32_t* y, void* workspace) {
  const ConvShape c = conv_shape(g);
  run_tiles(g, args, workspace, [&](int64_t n, int64_t grp, int64_t p0, int64_t count, const int32_t* acc) {
    int32_t* out = y + (n * g.out_channels + grp * c.group_out) * c.out_plane + p0;
    for (int64_t j = 0; j < c.group_out; ++j)
      for (int64_t i = 0; i < count; ++i) out[j * c.out_plane + i] = acc[i * c.group_out + j];
  });
}

template <class TX, class TW, class TY>
void qlinear_conv(const ConvGeometry& g, const QConvArgs<TX, TW>& args, const int32_t* bias, const Requantizer& r,
                  TY* y, void* workspace) {
  const ConvShape c = conv_shape(g);
  assert(r.count() == 1 || static_cast<int64_t>(r.count()) == g.out_channels);
  run_tiles(g, args, workspace, [&](int64_t n, int64_t grp, int64_t p0, int64_t count, const int32_t* acc) {
    const int64_t first = grp * c.group_out;
    TY* out = y + (n * g.out_channels + first) * c.out_plane + p0;
    requantize<TY>(acc, count, c.group_out, c.group_out, bias ? bias + first : nullptr, r, first, out, 1, c.out_plane);
  });
}

#define QT_INSTANTIATE_QCONV(TX, TW)                                                                              \
  template void qconv_s32<TX, TW>(const ConvGeometry&, const QConvArgs<TX, TW>&, int32_t*, void*);               \
  template void qlinear_conv<TX, TW, uint8_t>(const ConvGeometry&, const QConvArgs<TX, TW>&, const int32_t*,      \
                                              const Requantizer&, uint8_t*, void*);                               \
  template void qlinear_conv<TX, TW, int8_t>(const ConvGeometry&, const QConvArgs<TX, TW>&, const int32_t*,       \
                                             const Requantizer&, int8_t*, void*);
QT_INSTANTIATE_QCONV(uint8_t, int8_t)
QT_INSTANTIATE_QCONV(uint8_t, uint8_t)
QT_INSTANTIATE_QCONV(int8_t, int8_t)
QT_INSTANTIATE_QCONV(int8_t, uint8_t)
#undef QT_INSTANTIATE_QCONV

}  // namespace quant::kernels
