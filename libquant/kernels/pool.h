// N-d pooling (1 to 3 spatial dims), NCHW layout: ONNX MaxPool (opset 12,
// with its Indices output), AveragePool (opset 11, plus the dilations of
// opset 19), LpPool (opset 18), GlobalAveragePool, GlobalMaxPool,
// GlobalLpPool (opset 2) and MaxUnpool (opset 11).
#pragma once

#include <cstdint>
#include <span>

#include "libquant/kernels/shape_util.h"

namespace quant::kernels {

// Fully resolved pooling geometry; every Dims has one entry per spatial dim
// (1 to 3). strides and dilations >= 1 (dilations all 1 for AveragePool
// before opset 19), pads >= 0, out_spatial as produced by pool_output_shape.
struct PoolGeometry {
  int64_t batch = 1, channels = 0;
  Dims in_spatial, kernel, strides, dilations, pads_begin, pads_end, out_spatial;
};

// Resolves padding and the output spatial shape of MaxPool/AveragePool.
// With k_eff = (k-1)*dilation + 1:
//  - NotSet (pads are inputs) and Valid (pads become 0):
//      out = floor((in + pad_begin + pad_end - k_eff) / stride) + 1, or with
//      ceil_mode the ceiling instead of the floor, and then, as in the ONNX
//      reference implementation (onnx/reference/ops/op_pool_common.py, the
//      rule PyTorch also uses), one window fewer when the last one would start
//      in the end padding, i.e. when (out-1)*stride >= in + pad_begin: every
//      window starts inside the input or in the begin padding.
//      Valid honours ceil_mode like ONNX Runtime does.
//  - SameUpper/SameLower: exactly resolve_conv_pads' rule (out = ceil(in/stride),
//    extra pad at the end or the beginning); ceil_mode does not apply (MaxPool
//    opset 12 spec formula).
// An out_spatial entry < 1 means the window does not fit: the caller rejects it.
void pool_output_shape(AutoPad auto_pad, bool ceil_mode, std::span<const int64_t> in_spatial,
                       std::span<const int64_t> kernel, std::span<const int64_t> strides,
                       std::span<const int64_t> dilations, Dims& pads_begin, Dims& pads_end, Dims& out_spatial);

// MaxPool: each output is the max over the window's taps that fall inside the
// input; padding never takes part (ONNX: "maximum number of elements exclude
// pad"). Non-finite values follow ONNX Runtime's CPU MaxPool, not IEEE
// maximum: its MLAS scalar kernels reduce with m = std::max(m, v) and its
// Indices/dilation path with `if (v > m) m = v`, both from m = lowest(). So
// NaN never replaces m (a NaN tap is skipped), +inf wins, and a window whose
// taps are all NaN or all -inf - or that has no tap inside the input (only
// possible with pads >= kernel, which callers should reject) - yields
// numeric_limits<float>::lowest(). (MLAS's SSE 2-D kernel can instead keep a
// NaN, depending on where it sits in the window, as MAXPS returns its second
// operand; that order-dependent result is not followed.) Every fast path
// (pool_fast.h, pool_max_2d.h) gives the same bits. Allocates nothing.
void max_pool_f32(const PoolGeometry& g, const float* x, float* y);

// MaxPool for every element type MaxPool-12 takes (float, double, int8,
// uint8), with the optional Indices output of ONNX: when `indices` is not
// null it receives, per output, the flat index of the (first) maximum in the
// whole input, p * plane + spatial offset (p = n * C + c), the spatial offset
// row-major or, with column_major (storage_order = 1), with the first spatial
// dim varying fastest. Starts at numeric_limits<T>::lowest() like max_pool_f32.
template <class T>
void max_pool(const PoolGeometry& g, const T* x, T* y, int64_t* indices, bool column_major);

// LpPool: y = (sum over the window's taps inside the input of |x|^p)^(1/p);
// padding contributes zeros. Allocates nothing.
void lp_pool_f32(const PoolGeometry& g, float p, const float* x, float* y);

// AveragePool: the sum of the window's taps inside the input, divided by
//  - count_include_pad = false: the number of those taps;
//  - count_include_pad = true: the number of taps inside the padded input
//    [-pad_begin, in + pad_end). With ceil_mode the last window may reach past
//    the end padding; those taps are not counted, as in ONNX Runtime and the
//    ONNX reference implementation.
// A window with no tap inside the input yields 0 (ONNX Runtime). Allocates nothing.
void average_pool_f32(const PoolGeometry& g, bool count_include_pad, const float* x, float* y);

// GlobalAveragePool / GlobalMaxPool: x[N, C, spatial] -> y[N, C], spatial
// being the product of all spatial dims (>= 1). The max follows max_pool_f32
// (NaN skipped; all NaN or all -inf: lowest()); the average is IEEE float
// arithmetic, as AveragePool's: a NaN, or +inf with -inf, gives NaN.
// Planes split over `threads` threads (in_parts); each sums its values in order, so the bits do not depend on it.
void global_average_pool_f32(const float* x, int64_t N, int64_t C, int64_t spatial, float* y, int threads = 1);
void global_max_pool_f32(const float* x, int64_t N, int64_t C, int64_t spatial, float* y);
void global_lp_pool_f32(const float* x, int64_t N, int64_t C, int64_t spatial, float p, float* y);

// MaxUnpool: y (y_count elements) is zero but y[indices[i]] = x[i] for the
// x_count inputs; every index in [0, y_count) (callers check). A repeated
// index keeps the last value.
void max_unpool_f32(const float* x, const int64_t* indices, int64_t x_count, float* y, int64_t y_count);

}  // namespace quant::kernels
