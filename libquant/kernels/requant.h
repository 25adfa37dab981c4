// Requantization: turning an int32 accumulator (plus an int32 bias) into the
// 8- or 16-bit output of an integer kernel, DESIGN "Numerics". Two modes:
//
//  - RequantMode::Float (the default; ONNX Runtime's CPU kernels, MLAS
//    MlasRequantizeOutput):
//        y = saturate(round_half_to_even(float(acc + bias) * M) + zp)
//    with M = s_in * s_w / s_out in float32 (one M per output channel for
//    per-channel weights), float(acc) the int32 -> float32 conversion (rounds to
//    nearest for |acc| > 2^24, as MLAS's cvtdq2ps does), and the product in
//    float32. MLAS clamps the product to [qmin - zp, qmax - zp] before rounding;
//    with integer bounds that equals rounding first and saturating after.
//
//  - RequantMode::FixedPoint (integer-only targets; gemmlowp / TFLite):
//        y = saturate(MultiplyByQuantizedMultiplier(acc + bias, mult, shift) + zp)
//    where M = mult * 2^(shift - 31), mult in [2^30, 2^31) (quantize_multiplier),
//    and MultiplyByQuantizedMultiplier is TFLite's:
//        RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x << left, mult), right)
//    with left = max(shift, 0), right = max(-shift, 0). The primitives are
//    documented to the bit below.
//
// acc + bias wraps modulo 2^32 in both modes (int32 addition as ONNX Runtime
// does it; defined here because it is computed in uint32).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace quant::kernels {

enum class RequantMode { Float, FixedPoint };

// ---- gemmlowp / TFLite fixed-point primitives --------------------------------

// gemmlowp SaturatingRoundingDoublingHighMul (ARM NEON SQRDMULH): the high 32
// bits of 2*a*b, rounded to nearest with ties toward +infinity:
//   a == b == INT32_MIN -> INT32_MAX (the one overflowing case), otherwise
//   (a*b + (a*b >= 0 ? 2^30 : 1 - 2^30)) / 2^31, the division in int64 truncating
//   toward zero; this equals floor((2*a*b + 2^31) / 2^32), so -0.5 -> 0, 0.5 -> 1.
int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b);

// gemmlowp RoundingDivideByPOT (ARM NEON SRSHL with a negative shift for
// non-negative x): x / 2^exponent rounded to nearest, ties away from zero:
//   mask = 2^exponent - 1, remainder = x & mask,
//   threshold = (mask >> 1) + (x < 0 ? 1 : 0),
//   result = (x >> exponent) + (remainder > threshold ? 1 : 0)
// with >> the arithmetic shift. exponent in [0, 31].
int32_t rounding_divide_by_pot(int32_t x, int exponent);

// A real multiplier M > 0 as M = multiplier * 2^(shift - 31).
struct FixedPointMultiplier {
  int32_t multiplier = 0;  // in [2^30, 2^31) or 0 when M rounds to 0
  int32_t shift = 0;       // > 0: left shift of the input; < 0: right shift of the result
};

// TFLite QuantizeMultiplier: q = frexp(M) in [0.5, 1), multiplier =
// round(q * 2^31) (std::round, ties away from zero); a multiplier of 2^31 is
// halved with shift + 1; shift < -31 gives {0, 0} (M too small: result 0);
// shift > 30 is clamped to {2^31 - 1, 30}. M <= 0 or not finite gives {0, 0}.
FixedPointMultiplier quantize_multiplier(double m);

// TFLite MultiplyByQuantizedMultiplier. One deviation, to keep the arithmetic
// defined: TFLite computes x * 2^left in int32 (undefined on overflow); here it
// saturates to the int32 range (reachable only for M >= 1 with huge accumulators).
int32_t multiply_by_quantized_multiplier(int32_t x, FixedPointMultiplier m);

// TFLite's MultiplyByQuantizedMultiplier for an int64 accumulator, the one
// its 16x8 kernels use (tensorflow/lite/kernels/internal/common.cc, the
// default build without TFLITE_SINGLE_ROUNDING): the multiplier is reduced
// to 16 bits, reduced = multiplier < 0x7FFF0000 ? (multiplier + 2^15) >> 16
// : 0x7FFF, then
//     result = (x * reduced + 2^(total - 1)) >> total,  total = 15 - shift,
// an arithmetic shift, so ties round toward +infinity. TFLite assumes
// |x| < 2^47 and shift in [-31, 8) and casts the result to int32; here x is
// clamped to that range, a total shift <= 0 multiplies instead, and the
// result saturates to int32, so that every input has a defined answer.
int32_t multiply_by_quantized_multiplier_wide(int64_t x, FixedPointMultiplier m);

// ---- the output stage ----------------------------------------------------------

// Requantization parameters of one kernel, built once at prepare time.
// scale (Float) or fixed (FixedPoint) holds 1 entry (per-tensor) or one per
// output channel; zero_point is the output zero point.
//
// clamp_lo / clamp_hi narrow the output range further: a Relu/Clip folded
// into the op (passes/lower_qdq.h) runs as clip(y, clamp_lo, clamp_hi) on the
// integer output, which equals saturating to the intersected range (both
// clamps are monotone and the bounds integers), and in Float mode that equals
// clamping the scaled value to [lo - zp, hi - zp] before rounding, as the
// type's own range is.
struct Requantizer {
  RequantMode mode = RequantMode::Float;
  std::vector<float> scale;
  std::vector<FixedPointMultiplier> fixed;
  int32_t zero_point = 0;
  int32_t clamp_lo = std::numeric_limits<int32_t>::min();
  int32_t clamp_hi = std::numeric_limits<int32_t>::max();

  size_t count() const { return mode == RequantMode::Float ? scale.size() : fixed.size(); }
};

// Builds a Requantizer from float32 multipliers M (one per tensor or channel);
// FixedPoint converts each float M with quantize_multiplier.
Requantizer make_requantizer(RequantMode mode, std::span<const float> multipliers, int32_t zero_point);
// The same from multipliers computed in double, as TFLite computes
// input_scale * filter_scale / output_scale (tensorflow/lite/kernels/
// kernel_util.cc, PopulateConvolutionQuantizationParams); Float mode keeps
// them as float32.
Requantizer make_requantizer(RequantMode mode, std::span<const double> multipliers, int32_t zero_point);

// Q's range intersected with the Requantizer's clamp: [lo, hi].
template <class Q>
std::pair<int32_t, int32_t> output_range(const Requantizer& r) {
  return {std::max<int32_t>(std::numeric_limits<Q>::min(), r.clamp_lo),
          std::min<int32_t>(std::numeric_limits<Q>::max(), r.clamp_hi)};
}

// One value: saturate(requant(acc) + zero_point) to output_range<Q>, with the
// multiplier at `channel` (0 when per-tensor).
template <class Q>
Q requantize_one(int32_t acc, const Requantizer& r, int64_t channel);

// A rows x cols block of accumulators (element (i, j) at acc[i * acc_row_stride
// + j]) into y (element (i, j) at y[i * y_row_stride + j * y_col_stride]).
// Column j is output channel first_channel + j: it adds bias[j] (bias may be
// null; the caller offsets it) and uses that channel's multiplier (or the one
// multiplier of a per-tensor Requantizer). The strides let a convolution
// computed as [pixels x channels] write NCHW directly. Allocates nothing.
// Instantiated for Q = uint8_t, int8_t, uint16_t, int16_t.
template <class Q>
void requantize(const int32_t* acc, int64_t rows, int64_t cols, int64_t acc_row_stride, const int32_t* bias,
                const Requantizer& r, int64_t first_channel, Q* y, int64_t y_row_stride, int64_t y_col_stride);

// An int64 accumulator (16-bit activations, kernels/qwide.h) into Q:
// FixedPoint applies multiply_by_quantized_multiplier_wide, Float
// float32(acc) * M rounded half to even, then the zero point and the clamp
// as requantize_one.
template <class Q>
Q requantize_one_wide(int64_t acc, const Requantizer& r, int64_t channel);

// requantize() for int64 accumulators with an optional int32 bias per column,
// added in int64 (no wrap-around). Instantiated for the four 8/16-bit types.
template <class Q>
void requantize_wide(const int64_t* acc, int64_t rows, int64_t cols, int64_t acc_row_stride, const int32_t* bias,
                     const Requantizer& r, int64_t first_channel, Q* y, int64_t y_row_stride, int64_t y_col_stride);

}  // namespace quant::kernels
