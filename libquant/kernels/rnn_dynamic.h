// ONNX Runtime's com.microsoft DynamicQuantizeLSTM (contrib op, version 1;
// CPU kernel of ONNX Runtime 1.20: contrib_ops/cpu/quantization/
// dynamic_quantize_lstm.cc over core/providers/cpu/rnn/uni_directional_lstm.cc
// and rnn_helpers.cc), one direction at a time, time-major. Weights are 8-bit
// constants [K, 4*hidden] (W: K = input_size, R: K = hidden); each of the two
// products of a step quantizes its float operand at run time:
//  - X*W: once per direction, over the rows of the first max(sequence_lens)
//    time steps of every batch entry (padding included; reverse: each entry's
//    steps reversed within its length, as ReverseSequence lays them out);
//  - Ht-1*R: every step, over all batch rows (an entry past its length holds
//    zeros when Y is an output, else its last Ht).
// Operand: uint8, scale = (max - min) / 255 over [min(0, min), max(0, max)],
// zero point round_half_even(-min / scale) (rnn_helpers.h
// GetQuantizationParameter; kernels/dynamic_quantize.h computes the same),
// q = saturate(round_half_even(x / scale) + zp). Products are exact int32;
// gates = float(acc_x) * (s_x * s_w[n]) then + float(acc_r) * (s_h * s_r[n])
// (MLAS's scale output processor, zero then accumulate mode), then peephole,
// bias (Wb + Rb), clip, activation as in the float cell (kernels/rnn.h).
// Entries advance together from step 0 and stop at their length (also in
// reverse), which is ONNX Runtime's schedule and decides which rows share a
// step's activation range. ONNX Runtime splits the batch into chunks when it
// runs LSTM on several intra-op threads (UniDirectionalLstm::SetNumThreads);
// this is its one-thread form, where a step's range covers the whole batch.
#pragma once

#include <cstdint>
#include <vector>

#include "libquant/kernels/qdot_sat16.h"
#include "libquant/kernels/qgemm_packed.h"
#include "libquant/kernels/rnn.h"

namespace quant::kernels {

// One direction's W or R: packed once (PackedQB, its zero point included) and
// its scales, one or one per column (4*hidden). With `sat` (int8 weights on a
// target whose u8 x s8 products saturate in pairs, kernels/qdot_sat16.h:
// MLAS's AVX2 U8S8 kernel, which DynamicQuantizeLSTM's prepacked GEMMs run
// on x86 without VNNI) the products are emulated from it instead.
struct QRnnWeights {
  const PackedQB* packed = nullptr;
  const Sat16Weights* sat = nullptr;
  const float* scales = nullptr;
  int64_t scale_count = 1;
};

// Scratch of lstm_dynamic_q8; grown on first use, reused across calls.
struct QLstmScratch {
  std::vector<float> x_rows, xw, gates, bias, h, c;
  std::vector<uint8_t> qa;
  std::vector<int32_t> acc;
  SaturationStats saturation;  // pairs of the emulated products (QRnnWeights::sat)
};

// `io` as for lstm_cell_f32 (its w and r unused; y, when set, gets zeros past
// each entry's length). `threads` for the products.
void lstm_dynamic_q8(const RnnDims& d, const RnnDirection& io, const QRnnWeights& w, const QRnnWeights& r,
                     const LstmCell& cell, QLstmScratch& scratch, int threads);

}  // namespace quant::kernels
