// Bounding neighbouring pairs of int8 weights so that ONNX Runtime's x86
// kernels without VNNI cannot saturate (targets' "pair_bound",
// kernels/qdot_sat16.h): VPMADDUBSW adds a[2j] w[2j] + a[2j+1] w[2j+1] into an
// int16; with uint8 activations (<= 255) and |w[2j]| + |w[2j+1]| <= 128 the
// sum stays within +-32640. Only the pairs over the bound change, each to the
// nearest pair of integers inside it.
#pragma once

#include <cstdint>
#include <utility>

namespace quant::calib {

// The pair of integers (t0, t1) with |t0| + |t1| <= bound (and |t| <= 127)
// nearest in squared error to the real values (r0, r1) = w / scale; ties go
// to the larger first magnitude. Signs follow r.
std::pair<int8_t, int8_t> nearest_bounded_pair(double r0, double r1, int32_t bound);

}  // namespace quant::calib
