// Fast float convolution, ONNX Conv (opset 11), NCHW: the same contract as the
// reference conv_f32 (conv.h), which the tests compare it against.
//
// Paths, chosen per call from the geometry:
//  - depthwise (one input and one output channel per group): direct loops per
//    channel plane, vectorized along the output row (conv_depthwise.cpp);
//    3x3 ones on small maps or with stride 2 8 or 16 channels at once, one per
//    vector lane (conv_depthwise_3x3_blocked.cpp);
//  - 1x1, stride 1, no padding: the input planes already are the GEMM's B
//    matrix [C/group, H*W], no im2col at all; with strides (no padding), the
//    same on the input subsampled into a copy [C/group, out pixels] (AVX2);
//  - on AVX2, 1-D and 2-D with 16 or more input channels per group and
//    output channels per group a multiple of 16: output channels in the
//    vector lanes, each pixel's inputs broadcast from a zero-padded copy of
//    the input (conv_lanes.h, "lanes"), with weights packed for it;
//  - stride 1 in 2-D with few output channels on wide maps: GEMM reading B
//    in place from a zero-padded copy of the input, one row offset per k
//    (GemmB::rows), so nothing is packed per block (conv_fast.cpp, "direct");
//  - otherwise: GEMM whose B panels are packed straight from the input with
//    the im2col index map (PanelSource), never materializing the im2col matrix.
// The lanes, direct and im2col paths give the same bits (same K order, depth
// blocks and zeros).
// The GEMM paths fuse the bias (and an optional clamp: Relu/Clip) into the
// micro-kernel's store. Work is split over `threads` threads.
#pragma once

#include <span>
#include <vector>

#include "libquant/kernels/conv.h"
#include "libquant/kernels/gemm_packed.h"

namespace quant::kernels {

namespace detail {
struct LanesIsa;
}

// Conv weights [M, C/group, k...] packed once (at prepare time) per group:
// for the lanes path where it will run (lanes_fits, from the kernel's
// shape `kernel`, empty if unknown, and for a pointwise conv its output
// pixels, 0 if unknown or not pointwise), else as one GEMM A operand
// [M/group, C/group * kernel volume]. Either packing serves any input
// shape; the hints only pick the faster path.
class PackedConvWeights {
 public:
  PackedConvWeights() = default;
  PackedConvWeights(const float* w, int64_t out_channels, int64_t group, int64_t depth_per_group,
                    std::span<const int64_t> kernel = {}, int64_t pointwise_pixels = 0);
  bool empty() const { return groups_.empty(); }
  // Packed for the lanes path (conv_lanes.h) rather than as A operands:
  // for the lanes kernels lanes_isa(), null otherwise.
  bool lanes() const { return lanes_ != nullptr; }
  const detail::LanesIsa* lanes_isa() const { return lanes_; }
  const PackedMatrix& group(int64_t g) const { return groups_[static_cast<size_t>(g)]; }

 private:
  std::vector<PackedMatrix> groups_;
  const detail::LanesIsa* lanes_ = nullptr;
};

// Whether a conv of c input and m output channels per group with kernel
// `kernel` runs on the lanes path (with weights packed for it): kernels of
// more than one tap, and pointwise convs (1x1, unpadded, unit strides) of
// `pointwise_pixels` output pixels where the ISA takes them
// (LanesIsa::pointwise_max_pixels; 0: not pointwise, or unknown).
bool lanes_fits(int64_t c, int64_t m, std::span<const int64_t> kernel, int64_t pointwise_pixels = 0);

// The output pixels of a pointwise conv (1x1, unpadded, unit strides: what
// PackedConvWeights takes as its hint), else 0.
int64_t pointwise_pixels(const ConvGeometry& g);

// y = clamp(conv(x, w) + bias + residual) with clamp off unless `clamp` is
// set: a Conv -> Relu/Clip, or Conv -> Add (-> Relu/Clip) fused.
struct ConvActivation {
  bool clamp = false;
  float lo = 0.0f, hi = 0.0f;
  // The other operand of a fused Add, shaped as y (null: none). The sum is
  // (conv + bias) + residual, rounded as the two ops apart would round it.
  const float* residual = nullptr;
};

// As conv_f32, with `packed` (may be null: packed on the fly) holding w when
// given, the activation fused, and the work split over `threads` threads.
// y may not alias x or act.residual. allow_direct false keeps the im2col
// path where the lanes, direct or subsampled one would run (for tests comparing them).
void conv_f32_fast(const ConvGeometry& g, const float* x, const float* w, const PackedConvWeights* packed,
                   const float* bias, float* y, int threads, const ConvActivation& act = {}, bool allow_direct = true);

// The depthwise path alone (g.group == C == M), for conv_f32_fast and tests.
void conv_f32_depthwise(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, int threads,
                        const ConvActivation& act = {});

}  // namespace quant::kernels
