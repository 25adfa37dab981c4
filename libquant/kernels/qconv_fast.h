// Fast integer convolution (QLinearConv, ConvInteger): the same contract as
// the reference qlinear_conv / qconv_s32 (qconv.h), which the tests compare
// it against bit for bit.
//
// Paths, chosen per call from the geometry:
//  - depthwise (one input and one output channel per group): direct loops per
//    channel, vectorised along the output line (qconv_depthwise.cpp);
//    With the AVX-512 VNNI ISA, 3x3 / 5x5 planes of stride 1 or 2 use
//    VPDPBUSD on byte windows (VPERMB) when the centered weights fit int8;
//  - otherwise the integer GEMM of qgemm_packed.h with the weights as the
//    row operand (packed once, output channels as rows, so the output comes
//    out in NCHW order) and the input patches packed as the column operand:
//    for 1x1 stride-1 unpadded convolutions the input planes themselves, for
//    other stride-1 convolutions slices of zero-point-padded planes (the
//    "wide" path, no gather), else rows gathered per block of output pixels
//    (im2col). Where the ISA has one, the micro-kernel applies the output
//    stage itself (QRequantTile) on its registers; then, for weights packed
//    tap major (or one tap) with input channels in fours and no weight zero
//    point, the "direct" form of the wide path: the padded planes hold four
//    channels interleaved per pixel, which is a B panel's layout already,
//    and the kernel reads them at each tap's offset (QDirectB): nothing is
//    packed per block.
// Zero points: the weights are taken as int8 (uint8 weights flipped), the
// input as uint8 (int8 input flipped); see qgemm_packed.h for the algebra.
#pragma once

#include <cstdint>
#include <vector>

#include "libquant/kernels/qconv.h"
#include "libquant/kernels/qgemm_packed.h"

namespace quant::kernels {

// Conv weights [M, C/group, k...] with their zero points (0, 1 or M values),
// packed once (at prepare time) for one ISA.
class PackedQConvWeights {
 public:
  PackedQConvWeights() = default;
  template <class TW>
  // taps: kernel positions per input channel (depth_per_group = channels x
  // taps); with more than one, K is packed tap major (k_tap_major()) for
  // qconv_fast's direct path when channels come in fours (on an ISA without
  // a pairs kernel; with one, when the weights' own order does not bound
  // every pair), and for an ISA with a pairs kernel when only that order
  // (ONNX Runtime's, targets' pair_bound) bounds them; qconv_fast gathers
  // the patches alike. An ISA with amx_tiles (best_conv_qgemm_isa) is
  // taken for every conv but a depthwise one, whose weights go to
  // best_qgemm_isa() (isa() says which).
  PackedQConvWeights(const TW* w, int64_t out_channels, int64_t group, int64_t depth_per_group, const TW* zero_points,
                     int64_t zero_point_count, const detail::QGemmIsa& isa = detail::best_conv_qgemm_isa(),
                     int64_t taps = 1);
  bool empty() const { return out_channels_ == 0; }
  const detail::QGemmIsa& isa() const { return *isa_; }
  int64_t out_channels() const { return out_channels_; }
  int64_t depth() const { return depth_; }
  // Row panels of group g (rows = its output channels): int8 bytes, or where
  // widened() the same values as int16 (detail::widen_q_panels), or for an
  // ISA with amx_tiles AMX tiles (detail::pack_q_tiles); panel_bytes()
  // apart.
  const uint8_t* panels(int64_t g) const { return data_.data() + g * group_bytes_; }
  int64_t panel_bytes() const { return panel_bytes_; }
  // For an ISA with an a_signed_wide kernel, weights the pairs kernel cannot
  // take are kept widened for it (twice the bytes, none kept as int8)...
  bool widened() const { return widened_; }
  // ... or, where the ISA has widen_panel and widened they would not fit the
  // L2 (streamed from L3 or memory on every use anyway), kept as int8 and
  // widened panel by panel as they are used: half the bytes to stream.
  // panels() and panel_bytes() then address the int8 panels.
  bool widen_on_use() const { return widen_on_use_; }
  const int32_t* row_sum() const { return row_sum_.data(); }  // per output channel, int8 domain
  const int32_t* row_zp() const { return row_zp_.data(); }    // per output channel, int8 domain
  bool has_zero_points() const { return has_zp_; }
  // Every pair of the packed bytes passes detail::s8_pairs_fit_int16: the
  // ISA's a_signed_pairs kernel is exact on these weights.
  bool pairs_bounded() const { return pairs_bounded_; }
  // K runs tap major, channel minor (else channel major, the weights' order).
  bool k_tap_major() const { return tap_major_; }
  // w - zero point per output channel and tap, for the depthwise path.
  const int32_t* centered() const { return centered_.data(); }

 private:
  AlignedBytes data_;
  const detail::QGemmIsa* isa_ = nullptr;
  int64_t out_channels_ = 0, depth_ = 0, group_bytes_ = 0, panel_bytes_ = 0;
  std::vector<int32_t> row_sum_, row_zp_, centered_;
  bool has_zp_ = false;
  bool pairs_bounded_ = false;
  bool tap_major_ = false;
  bool widened_ = false;
  bool widen_on_use_ = false;
};

// y = int32 accumulators (requant null: ConvInteger, TY = int32_t) or
// requantize(acc + bias[m]) (QLinearConv, TY = uint8_t / int8_t). `packed`
// holds args.w packed (it must have been packed from the same weights and
// zero points). Work split over `threads` threads.
template <class TX, class TY>
void qconv_fast(const ConvGeometry& g, const TX* x, TX x_zero_point, const PackedQConvWeights& packed,
                const int32_t* bias, const Requantizer* requant, TY* y, int threads);

namespace detail {
// The depthwise path alone (g.group == C == M), for qconv_fast and tests.
template <class TX, class TY>
void qconv_depthwise(const ConvGeometry& g, const TX* x, TX x_zero_point, const PackedQConvWeights& packed,
                     const int32_t* bias, const Requantizer* requant, TY* y, int threads);
}  // namespace detail

}  // namespace quant::kernels
