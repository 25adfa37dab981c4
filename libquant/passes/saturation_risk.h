// Whether a QDQ model would saturate on a target whose dot products sum
// uint8 x int8 pairs into int16 (ONNX Runtime on x86 without VNNI,
// kernels/qdot_sat16.h), judged from the activations' calibrated ranges:
// qconvert --target warns before the model ships.
//
// For each pair (w0, w1) of a weight column in ONNX Runtime's K order and an
// activation whose raw uint8 values lie in [lo, hi] (the calibrated range
// quantized; Q saturates anything beyond it), the pair sum spans
//   [sum_i min(lo w_i, hi w_i), sum_i max(lo w_i, hi w_i)]
// and the pair can saturate when that interval leaves [-32768, 32767].
// As ONNX Runtime builds its graph: an int8 activation counts as uint8 + 128
// only from a Q -> DQ pair it rewrites (the Q feeding that one DQ), and a Conv
// whose Relu/Clip before the Q the Q's range does not imply stays float there
// (lower_qdq.cpp), so neither is a risk.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "libquant/core/tensor.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

struct SaturationRisk {
  std::string node;
  std::string op_type;
  int64_t pairs = 0;       // weight pairs of the node
  int64_t can_saturate = 0;
};

// `activation_ranges`: float activation name -> its quantized [lo, hi]
// (the activation's own integer type). `int8_as_uint8`: the target rewrites
// int8 activations to uint8 (+128) first. Returns the nodes with at least one
// pair that can saturate.
std::vector<SaturationRisk> find_saturation_risks(const ir::Graph& graph,
                                                  const std::map<std::string, std::pair<int32_t, int32_t>>& activation_ranges,
                                                  bool int8_as_uint8);

}  // namespace quant::passes
