// Dynamic quantization (qconvert --dynamic): weights quantized at conversion,
// activations at run time, so no profile is needed. Also the 4-bit grouped
// weights of static weight-only conversion (qconvert --weights int4).
//
// Forms emitted, all run by ONNX Runtime 1.20's CPU provider:
//  - int8: MatMul / Gemm -> DynamicQuantizeLinear + MatMulInteger (uint8 x
//    int8, symmetric per-column weights) + Cast + Mul by x_scale * w_scale[n]
//    (+ Add of beta * C for Gemm); Conv -> DynamicQuantizeLinear + ConvInteger
//    (uint8 weights, zero point 128: ONNX Runtime's ConvInteger takes uint8
//    weights with a per-tensor zero point; per-channel scales go into the Mul)
//    + Cast + Mul (+ Add bias). All ai.onnx ops of opset 10/11, so the ONNX
//    checker validates the result.
//  - int4: MatMul / Gemm -> com.microsoft MatMulNBits (bits 4, block_size G,
//    codes packed two per byte, implicit zero point 8, bias input for Gemm's C).
//    Why MatMulNBits rather than opset-21 DequantizeLinear(block_size) + INT4
//    initializers: (1) torchao's scheme quantizes activations per row (token);
//    standard ONNX only has per-tensor DynamicQuantizeLinear, and the opset-21
//    form is a float MatMul on dequantized weights, not an int8 x int4 product;
//    MatMulNBits with accuracy_level 4 tells the runtime that A may be
//    quantized to int8 at run time, which is exactly the scheme (ONNX Runtime
//    then runs its int8 x int4 block kernel). (2) It stores the weights at 4
//    bits + one float scale per group (~0.16x float for G = 32). (3) Opset 21
//    and INT4 are unknown to Debian's ONNX checker (1.12), while a com.microsoft
//    node leaves the rest of the model checkable.
//    Scheme (torchao Int8DynActInt4Weight): per output column n and group g of
//    G consecutive k, scale = max(absmax / 7.5, float eps) (get_group_qparams_symmetric),
//    q = clamp(round_half_even(w / scale), -8, 7). A K that G does not divide
//    gets a shorter last group (MatMulNBits pads the blob; torchao pads K with
//    zeros, which quantize to 0: the same arithmetic).
//  Weight rounding (options.rounding, qconvert --weight-rounding): rtn rounds
//  each weight to nearest with the scales above; gptq (calib/gptq.h, from the
//  Hessians of the layers' inputs) and hqq (calib/hqq.h, data-free) choose
//  the codes (gptq) or the group scales (hqq) of the same symmetric forms, for
//  int4 and int8 MatMul / Gemm weights; Conv stays round to nearest.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "libquant/calib/gptq.h"
#include "libquant/calib/hqq.h"
#include "libquant/core/status.h"
#include "libquant/ir/graph.h"
#include "libquant/passes/opset_upgrade.h"
#include "libquant/passes/qdq.h"

namespace quant::passes {

struct DynamicOptions {
  DType weights = DType::Int8;  // Int8 or Int4
  int64_t group_size = 32;      // Int4: a power of two, 16..256 (MatMulNBits block_size)
  // Int4: 4 quantizes activations to int8 at run time (dynamic); 0 keeps them
  // float (weight-only, the static --weights int4 mode).
  int64_t accuracy_level = 4;
  bool conv = true;  // Int8: Conv too (ConvInteger)
  // Int8 MatMul/Gemm weights: |w[2j]| + |w[2j+1]| <= bound along K (a
  // target's pair_bound, calib/pair_bound.h); 0: none. ConvInteger takes
  // uint8 weights (exact everywhere) and needs none.
  int32_t weight_pair_bound = 0;
  std::set<std::string> exclude_nodes;
  std::set<std::string> exclude_ops;
  // Int8 MatMul/Gemm weights stored as uint8 with zero point 128 (the same
  // values; a target with uint8 weights): MatMulInteger then runs ONNX
  // Runtime's exact U8U8 kernels on x86 instead of saturating U8S8 ones.
  bool uint8_weights = false;
  // Threads for the int8 weights' passes (column maxima, codes), split by
  // rows: the bytes do not depend on it (qconvert: every core).
  int threads = 1;
  // Where each quantized weight goes as soon as it is made (qconvert's
  // streaming conversion, DESIGN "Large models"): the tensor returned replaces
  // it, e.g. its bytes written to the output's external data file and mapped
  // back. Unset: weights stay in memory.
  std::function<Expected<Tensor>(Tensor)> spill;
  // As spill, for the bytes of a `dtype` tensor of `shape` in a buffer the
  // pass reuses for every weight (int8 codes; no tensor is allocated and
  // zero-filled per weight). Unset: such weights become tensors and go
  // through spill.
  std::function<Expected<Tensor>(DType, const Dims&, const void*)> spill_bytes;
  calib::WeightRounding rounding = calib::WeightRounding::Rtn;
  // gptq: node name -> the sums of its input rows (passes/hessian_collector.h);
  // a layer without one is rounded to nearest, with a report note.
  const std::map<std::string, calib::Hessian>* hessians = nullptr;
  calib::GptqOptions gptq;
};

// Checks the group size: a power of two from 16 to 256 (MatMulNBits needs a
// power of two >= 16; torchao's scheme uses 32..256). bad_input otherwise.
Status check_group_size(int64_t group_size);

// int8 needs DynamicQuantizeLinear (opset 11); int4 (com.microsoft
// MatMulNBits) needs nothing of ai.onnx.
OpsetNeed dynamic_opset_need(const DynamicOptions& options);

// Rewrites every MatMul / Gemm (and Conv for int8) with a constant float
// weight. Nodes it cannot rewrite stay float, with the reason in the report.
// The final output of each rewritten node keeps its value name.
Expected<QuantizeReport> quantize_dynamic(ir::Graph& graph, const DynamicOptions& options);

// LSTM has no static integer form in ONNX or in ONNX Runtime (its QDQ
// transformers leave an LSTM float): a static conversion gives it ONNX
// Runtime's com.microsoft DynamicQuantizeLSTM (dynamic_lstm.h; X and Ht-1
// quantized at run time, W and R in 8 bits: uint8 + 128 where `options`
// gives weights as uint8, as ort-x86 does, else int8), so that recurrent weights, most of a
// Silero-style model's, are stored in 8 bits. Needs opset 11
// (DynamicQuantizeLinear's); below it, and for nodes `options` excludes, LSTM
// stays float. Returns the decisions of the LSTMs rewritten.
Expected<QuantizeReport> quantize_lstms(ir::Graph& graph, const QuantizeOptions& options);
// Adds quantize_lstms' decisions to insert_qdq's `report`, dropping the latter's
// entries for the DynamicQuantizeLSTM nodes (float to it, quantized already).
void append_lstm_decisions(QuantizeReport&& lstms, QuantizeReport& report);

// Bytes of all initializers as stored in the ONNX file (qconvert --report).
int64_t initializer_bytes(const ir::Graph& graph);

}  // namespace quant::passes
