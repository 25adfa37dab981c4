// Depthwise convolution of one 2-D channel plane, any kernel size, row
// strides any, column stride 1 or 2: the path of the kernels other than
// conv_depthwise_3x3.h's (efficientnet's 5x5) on AVX2 + FMA, and on
// AVX-512 (conv_depthwise.cpp). Internal to conv_depthwise.cpp and its tests.
//
// Every output is the bias, then one fused multiply-add per tap in (kh, kw)
// order; a kernel row that falls in the top or bottom padding is skipped, a
// tap in the left or right padding adds w * 0. So the AVX2 and AVX-512 paths
// give the same bits (tests), and they differ from the reference conv_f32
// (which skips every padding tap) only where w * 0 turns a -0 sum into +0 or
// an infinite weight gives NaN. The clamp lets NaN through, as clamp_f32.
#pragma once

#include <cstdint>

#include "libquant/kernels/cpu.h"

namespace quant::kernels::detail {

struct DepthwisePlane {
  const float* x;  // in_h x in_w
  float* y;        // out_h x out_w
  const float* w;  // kernel_h x kernel_w, row-major
  int64_t in_h, in_w, out_h, out_w, kernel_h, kernel_w;
  int64_t stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
  float bias;
  bool clamp;
  float lo, hi;
};

// Whether depthwise_plane serves p's geometry (column stride 1 or 2, a
// kernel row at most 16 rows, padding smaller than the kernel's span).
bool depthwise_plane_fits(const DepthwisePlane& p);

// The widest level of depthwise_plane this host runs under the cap (Avx512
// with AVX-512F, Avx2 with AVX2 + FMA), or Portable where neither runs.
IsaCap depthwise_plane_level();

// p's plane on `level`'s kernel (Avx2 or Avx512); false, y untouched, where
// that level cannot run here or p does not fit.
bool depthwise_plane(IsaCap level, const DepthwisePlane& p);

}  // namespace quant::kernels::detail
