// The float convolution with output channels in the vector lanes (conv_fast.h's
// "lanes" path): the GEMM C^T = B^T A^T of the im2col path, computed tile by
// tile as P output pixels x W output channels (AVX2: up to 6 x 16, AVX-512: up
// to 14 x 32). The weights, packed once as W-channel panels, are the vectors;
// each output pixel's input value for tap k is a broadcast read in place from
// the zero-padded input planes (no im2col, no phase planes: a pixel's taps
// start at its own offset, whatever the strides), so every tile is whole but
// for the last few pixels of a map (AVX2) or of a row (AVX-512). Each sum runs
// over k in the im2col order, in the same depth blocks (kGemmKc), each block's
// fused multiply-adds from zero and added to the blocks before it, then the
// bias, the residual and the clamp: the im2col path's bits.
#pragma once

#include <cstdint>

#include "libquant/kernels/gemm_packed.h"
#include "libquant/kernels/gemm_ukernel.h"

namespace quant::kernels::detail {

// One convolution (one image, one group) as the lanes kernels see it.
struct LanesConv {
  int64_t m = 0;                  // output channels, a multiple of the ISA's width
  int64_t depth = 0;              // K: input channels x taps
  int64_t taps_per_channel = 0;   // the kernel's taps (K / input channels)
  int64_t pixels = 0;             // N: output pixels
  int64_t row = 0;                // output pixels per row (the last spatial extent)
  int64_t stride = 1;             // input columns between neighbouring output pixels of a row
  int64_t in_pixels = 0;          // pixels of one padded input plane
  const float* x = nullptr;       // the zero-padded input planes
  const int64_t* taps = nullptr;  // depth entries: tap k's offset in bytes from a pixel's first tap
  const int64_t* pixel = nullptr; // pixels entries: pixel p's first tap, in floats from x
  const PackedMatrix* w = nullptr;  // W^T [K, m] in panels of the ISA's width (pack_conv_lanes)
  const float* bias = nullptr;      // m values or null
  const float* residual = nullptr;  // shaped as y or null
  bool clamp = false;
  float lo = 0.0f, hi = 0.0f;
  float* y = nullptr;  // [m, pixels]
};

// One tile's operands and destinations, already moved to its pixels and
// channels (the driver, conv_lanes.cpp, fills it; an ISA's kernels read it).
struct LanesTile {
  const float* w;         // the panel of this depth block: kc x width
  uintptr_t prefetch;     // the next panel the task reads (into L2, its lines spread over the k), or 0
  const float* x;         // padded input planes
  const int64_t* taps;    // this depth block's tap offsets (bytes)
  const int64_t* pixel;   // this tile's pixels' first taps (floats from x)
  float* partial;         // the sums of the depth blocks so far, pixel by pixel (width floats each)
  float* y;               // y at (first channel, first pixel)
  int64_t ldy;            // floats between channels in y (and in residual)
  const float* bias;      // width values or null
  const float* residual;  // shaped as y or null
  bool clamp;
  float lo, hi;
};

// The sums of one depth block of kc rows for a tile; with `accumulate` the
// earlier blocks' sums (partial) added after, with `last` the epilogue and
// the store into y, else the store into partial.
using LanesTileFn = void (*)(int64_t kc, const LanesTile& t);

// The most pixels of a tile on any ISA.
inline constexpr int kMaxTilePixels = 14;

// One ISA's lanes kernels.
struct LanesIsa {
  int64_t width;                // output channels per panel: the nr of its GEMM ISA, which packs the weights
  int max_pixels;               // per tile, at most kMaxTilePixels
  // Tiles within one output row, their pixels `stride` input columns apart
  // (the kernel reads the first pixel's offset only); else any pixels.
  bool row_tiles;
  int64_t max_stride;  // the largest LanesConv::stride the kernels take (0: any)
  // The kernel for a tile of `pixels` (1 to max_pixels) pixels.
  LanesTileFn (*tile)(int pixels, int64_t stride, bool accumulate, bool last);
  // Pointwise convs (1x1, unpadded, unit strides) of at most this many
  // output pixels run here too, their input read in place (no padded copy),
  // the map one row: where the GEMM path's column panels of the ISA's width
  // are worst filled (7 x 7 = 49 columns in panels of 32 on AVX-512: 64
  // computed). Measured per ISA (conv_lanes_<isa>.cpp).
  int64_t pointwise_max_pixels;
};

// The lanes kernels for GEMM ISA `isa` where this build and CPU have them
// (AVX2 + FMA, AVX-512F), else null.
const LanesIsa* lanes_isa(const GemmIsa& isa);

// W [m, depth] (row-major, as a Conv's weights lie) packed for conv_lanes_f32
// on lanes_isa(gemm).
PackedMatrix pack_conv_lanes(const float* w, int64_t m, int64_t depth, const GemmIsa& gemm);

// Whether conv_lanes_f32 splits c's pixels over the threads (else its
// panels of channels, all of the input read by every thread).
bool lanes_by_pixels(const LanesConv& c, int threads);

// y = clamp(conv + bias + residual) on `isa`'s kernels, split over `threads`
// threads (panels of output channels, then runs of pixels; never the depth).
// c.stride must be one isa takes (max_stride).
void conv_lanes_f32(const LanesConv& c, const LanesIsa& isa, int threads);

// The ISAs' descriptors, null when not compiled in.
extern const LanesIsa* const kLanesAvx2;
extern const LanesIsa* const kLanesAvx512;

}  // namespace quant::kernels::detail
