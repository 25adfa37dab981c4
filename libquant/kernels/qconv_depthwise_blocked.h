// Depthwise 3x3 and 5x5 integer convolution, eight channels at once (internal to
// qconv_depthwise.cpp and its tests): the int8 counterpart of the float
// block kernel (conv_depthwise_3x3_blocked.cpp), for AVX2 with the output
// stage fused.
#pragma once

#include <cstdint>

namespace quant::kernels::detail {

// Eight channels of one 2-D depthwise geometry with a square kernel of 3 or
// 5 (strides 1 or 2 along the row, no dilation): channel i reads
// x + i * in_plane (TX elements), writes y + i * out_plane (bytes: uint8 or
// int8 output) and has the centered weights w + kernel^2 i (w - weight zero
// point, as PackedQConvWeights::centered gives them). Output (oh, ow) is, per lane,
//   v = sum over taps of (x - zx) * w' (int32, wrapping) + add[i]
//   y = int(clamp(float(v) * scale[i], lo, hi)) + zero_point
// the operations and order of the padded plane kernels' fused output stage
// (padded_plane_avx2), so the same bytes.
struct QDepthwiseBlock {
  int64_t kernel;  // 3 or 5
  int64_t in_h, in_w, out_h, out_w, stride_h, stride_w, pad_top, pad_left;
  const void* x;
  int64_t in_plane;
  uint8_t* y;
  int64_t out_plane;
  const int32_t* w;
  int32_t zx;
  const int32_t* add;   // 8 (null: 0)
  const float* scale;   // 8, or 1 for every channel (per_channel false)
  bool per_channel;
  int32_t zero_point;
  float lo, hi;         // clamp bounds less the zero point
};

// Channels per call.
inline constexpr int64_t kQDepthwiseBlock = 8;

// Whether the block kernel runs this geometry (kernel 3 or 5) faster than
// the plane kernels (small maps and stride 2; measured, see the definition).
bool qdepthwise_block_fits(int64_t kernel, int64_t in_h, int64_t in_w, int64_t stride_w);

// The kernel, TX uint8_t or int8_t, for a CPU with AVX2 (the caller checks,
// as for the other AVX2 planes).
template <class TX>
void qdepthwise_block_avx2(const QDepthwiseBlock& b);

}  // namespace quant::kernels::detail
