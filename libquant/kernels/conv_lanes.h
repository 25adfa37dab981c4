// The AVX2 float convolution with output channels in the vector lanes
// (conv_fast.h's "lanes" path): the GEMM C^T = B^T A^T of the im2col path,
// computed tile by tile as 6 output pixels x 16 output channels. The weights,
// packed once as 16-channel panels, are the vectors; each output pixel's
// input value for tap k is a broadcast read in place from the zero-padded
// input planes (no im2col, no phase planes: a pixel's taps start at its own
// offset, whatever the strides), so every tile is whole but for the last
// few pixels of the map, and a row's end costs nothing. Each sum runs over
// k in the im2col order, in the same depth blocks (kGemmKc), each block's
// fused multiply-adds from zero and added to the blocks before it, then the
// bias, the residual and the clamp: the im2col path's bits.
#pragma once

#include <cstdint>

#include "libquant/kernels/gemm_packed.h"

namespace quant::kernels::detail {

// Output channels per panel (two AVX2 vectors).
inline constexpr int64_t kLanesWidth = 16;

// One convolution (one image, one group) as the lanes kernels see it.
struct LanesConv {
  int64_t m = 0;                  // output channels, a multiple of kLanesWidth
  int64_t depth = 0;              // K: input channels x taps
  int64_t taps_per_channel = 0;   // the kernel's taps (K / input channels)
  int64_t pixels = 0;             // N: output pixels
  const float* x = nullptr;       // the zero-padded input planes
  const int64_t* taps = nullptr;  // depth entries: tap k's offset in bytes from a pixel's first tap
  const int64_t* pixel = nullptr; // pixels entries: pixel p's first tap, in floats from x
  const PackedMatrix* w = nullptr;  // W^T [K, m] in kLanesWidth-wide panels (pack_conv_lanes)
  const float* bias = nullptr;      // m values or null
  const float* residual = nullptr;  // shaped as y or null
  bool clamp = false;
  float lo = 0.0f, hi = 0.0f;
  float* y = nullptr;  // [m, pixels]
};

// Whether this build and CPU run the lanes kernels (AVX2 and FMA compiled in).
bool conv_lanes_available();

// W [m, depth] (row-major, as a Conv's weights lie) packed for conv_lanes_f32.
PackedMatrix pack_conv_lanes(const float* w, int64_t m, int64_t depth);

// y = clamp(conv + bias + residual), split over `threads` threads (panels of
// output channels, then runs of pixels; never the depth).
void conv_lanes_f32(const LanesConv& c, int threads);

}  // namespace quant::kernels::detail
