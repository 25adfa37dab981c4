#include "libquant/kernels/conv_fast.h"

#include <cassert>

#include "libquant/kernels/im2col.h"
#include "libquant/kernels/spatial.h"

namespace quant::kernels {
namespace {

int64_t kernel_volume(const ConvGeometry& g) {
  int64_t v = 1;
  for (int64_t k : g.kernel) v *= k;
  return v;
}

}  // namespace

PackedConvWeights::PackedConvWeights(const float* w, int64_t out_channels, int64_t group, int64_t depth_per_group) {
  const int64_t m_per_group = out_channels / group;
  for (int64_t gi = 0; gi < group; ++gi)
    groups_.push_back(PackedMatrix::pack_a(MatrixView{w + gi * m_per_group * depth_per_group, depth_per_group, 1},
                                           m_per_group, depth_per_group, detail::best_gemm_isa()));
}

void conv_f32_fast(const ConvGeometry& g, const float* x, const float* w, const PackedConvWeights* packed,
                   const float* bias, float* y, int threads, const ConvActivation& act) {
  assert(g.group >= 1 && g.in_channels % g.group == 0 && g.out_channels % g.group == 0);
  const int64_t C = g.in_channels, M = g.out_channels;
  const int64_t c_per_group = C / g.group, m_per_group = M / g.group;
  if (c_per_group == 1 && m_per_group == 1) return conv_f32_depthwise(g, x, w, bias, y, threads, act);

  const detail::Spatial3 s =
      detail::to_spatial3(g.in_spatial, g.out_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end);
  const int64_t in_plane = s.in[0] * s.in[1] * s.in[2];
  const int64_t out_plane = s.out[0] * s.out[1] * s.out[2];
  const int64_t K = c_per_group * kernel_volume(g);
  bool pointwise = kernel_volume(g) == 1;
  for (int i = 0; i < 3; ++i) pointwise = pointwise && s.strides[i] == 1 && s.pads_begin[i] == 0 && s.pads_end[i] == 0;

  GemmEpilogue ep;
  ep.clamp = act.clamp;
  ep.lo = act.lo;
  ep.hi = act.hi;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t gi = 0; gi < g.group; ++gi) {
      const float* xg = x + (n * C + gi * c_per_group) * in_plane;
      GemmA a;
      if (packed && !packed->empty())
        a.packed = &packed->group(gi);
      else
        a.view = MatrixView{w + gi * m_per_group * K, K, 1};
      const Im2colSource im2col(s, xg);
      GemmB b;
      if (pointwise)
        b.view = MatrixView{xg, in_plane, 1};  // [C/group, H*W] as it lies in memory
      else
        b.source = &im2col;
      ep.row_bias = bias ? bias + gi * m_per_group : nullptr;
      ep.residual = act.residual ? act.residual + (n * M + gi * m_per_group) * out_plane : nullptr;
      ep.ldr = out_plane;
      // A widening 1x1 conv (mobilenet_v2's expand) splits its output
      // channels over the threads, as the depthwise conv after it does.
      const GemmSplit split = pointwise && m_per_group > K ? GemmSplit::Rows : GemmSplit::Auto;
      gemm_f32_packed(m_per_group, out_plane, K, a, b, y + (n * M + gi * m_per_group) * out_plane, out_plane, ep, threads,
                      detail::best_gemm_isa(), split);
    }
  }
}

}  // namespace quant::kernels
