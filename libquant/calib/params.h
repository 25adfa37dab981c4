// Range -> scale / zero point per schema (DESIGN "Numerics"), with
// real = scale * (q - zero_point).
//
//  - asymmetric: the range is widened to include 0; scale = (max - min) / (qmax - qmin);
//    zero_point = round_half_even(qmin - min / scale) clamped to [qmin, qmax].
//  - symmetric: absmax = max(|min|, |max|); signed types: zero point 0 and scale =
//    absmax / qmax (int8 127, int16 32767, int4 7). Unsigned types use the middle
//    code as zero point (uint8: 128) and the same absmax / 127, so -absmax and
//    +absmax are both representable as in the signed case.
//  - symmetric-uint8: as symmetric, except that an 8-bit activation whose range is
//    non-negative (after Relu, Sigmoid, ...) becomes uint8 with zero point 0 and
//    scale = max / 255, doubling its resolution. An int16 activation stays symmetric
//    int16 (uint16 is not an activation precision).
//  - power2-scale: symmetric, scale rounded up to a power of two (shift-only hardware).
// Scales are computed in double and rounded once to float32. A zero-width range
// (and one too narrow for a float32 scale) gets scale 1, so that the tensor's
// single value 0 stays exact and no scale is 0 or inf. Non-finite range ends count as 0.
#pragma once

#include <cstdint>
#include <string_view>

#include "libquant/calib/range.h"
#include "libquant/core/status.h"
#include "libquant/core/tensor.h"

namespace quant::calib {

enum class Schema { Asymmetric, Symmetric, SymmetricUInt8, Power2Scale };

// "asymmetric", "symmetric", "symmetric-uint8", "power2-scale"; anything else is
// bad_input listing the valid names.
Expected<Schema> schema_from_name(std::string_view name);
std::string_view schema_name(Schema schema);

// Per-tensor activation parameters; `precision` is UInt8, Int8 or Int16.
QuantParams choose_quant_params(Range range, Schema schema, DType precision);

// Weights are always quantized symmetrically whatever the schema (zero point 0 for
// signed qtypes: int8 scale = absmax / 127, int4 / 7, int16 / 32767); power2-scale
// rounds each scale up to a power of two. Per-tensor when axis < 0, else one scale
// per index of dimension `axis`. An all-zero channel gets scale 1. Non-finite
// weights are ignored. `weights` is a float tensor (float32/64/16, bfloat16).
// `max_level` > 0 narrows the grid to [-max_level, max_level] (a target's
// weight range, e.g. 64 for 7-bit weights): scale = absmax / max_level.
// `threads` splits the maxima of float32 weights whose channels lie along the
// last axis (MatMul weights [K, N]) by rows; max is exact, so the result does
// not depend on it.
QuantParams choose_weight_params(const Tensor& weights, int64_t axis, DType qtype, Schema schema, int32_t max_level = 0,
                                 int threads = 1);

}  // namespace quant::calib
