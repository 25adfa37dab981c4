// Depthwise 3x3 convolution of one channel plane (MobileNet's depthwise
// layers), internal to conv_depthwise.cpp and its tests.
//
// Both kernels (AVX-512, AVX2 + FMA) take bands of output rows, whose input
// rows are first copied into scratch rows with the padding written out as
// zeros (stride 2: split into even and odd columns), then whole rows in
// vectors, several rows and vectors at once so that the FMA latency is
// hidden; a tap in the padding adds w * 0 (as ONNX Runtime's im2col-based
// Conv does). Stride-1 planes up to 32 columns wide whose rows keep their
// width are computed flat instead: the plane as one array, eight or sixteen
// consecutive outputs per vector across row ends, a column mask zeroing the
// taps that fall off a row (conv_depthwise_3x3_flat.inc; AVX-512 with masked
// loads from the input, conv_depthwise_3x3_flat_avx512.inc). Small maps and
// stride 2 go to the block kernels instead, 8 or 16 channels at once
// (conv_depthwise_3x3_blocked.cpp), which its ISA's block_fits picks per
// geometry and the caller (conv_depthwise.cpp) calls. Every output is
// bias, then the nine taps in (kh, kw) order, each a fused multiply-add, so
// the paths and the two ISAs give the same bits, and they differ from the
// reference (which skips padding taps) only where w * 0
// turns an exact -0 sum into +0, or an infinite weight gives NaN on a
// padding tap; thread count does not matter (one plane, or one block of
// channels, is one task).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace quant::kernels::detail {

struct Depthwise3x3Plane {
  const float* x;  // in_h x in_w
  float* y;        // out_h x out_w
  const float* w;  // 9 weights, row-major 3x3
  int64_t in_h, in_w, out_h, out_w;
  int64_t stride_h, stride_w;  // stride_w is 1 or 2
  int64_t pad_top, pad_left;   // >= 0
  float bias;
  bool clamp;  // y = min(max(y, lo), hi), NaN passing through (as clamp_f32)
  float lo, hi;
};

using Depthwise3x3Kernel = void (*)(const Depthwise3x3Plane& p);

// Several channels of one geometry at once (the block kernels): channel i
// reads plane.x + i * in_stride, writes plane.y + i * out_stride, with the
// weights plane.w + 9 * i and the bias bias[i] (bias null: zero);
// plane.bias is not read.
struct Depthwise3x3Channels {
  Depthwise3x3Plane plane;
  int64_t in_stride, out_stride;
  const float* bias;
};

using Depthwise3x3BlockKernel = void (*)(const Depthwise3x3Channels& c);

struct Depthwise3x3Isa {
  const char* name;
  Depthwise3x3Kernel kernel;
  // `block` consecutive channels per call of block_kernel
  // (conv_depthwise_3x3_blocked.cpp), for the geometries block_fits takes:
  // small maps and stride 2, where the plane kernels spend more on packing
  // rows (and, with stride 2, splitting them) than on the multiply-adds.
  int64_t block;
  Depthwise3x3BlockKernel block_kernel;
  bool (*block_fits)(const Depthwise3x3Plane& p);
};

// This thread's scratch of at least `floats`, aligned to `align` floats: one
// buffer per thread for the band, flat and block walks (a thread runs one
// plane or block at a time), grown as needed, never shrunk.
float* depthwise_scratch(size_t floats, size_t align);

// The block kernels for AVX2 + FMA (8 channels) and AVX-512 (16), declared
// for the ISA table.
void dwconv3x3_block_avx2(const Depthwise3x3Channels& c);
void dwconv3x3_block_avx512(const Depthwise3x3Channels& c);

// Every 3x3 kernel this CPU runs, fastest last (empty without AVX2 + FMA:
// the generic depthwise loops serve then).
std::vector<const Depthwise3x3Isa*> supported_depthwise_3x3_isas();

}  // namespace quant::kernels::detail
