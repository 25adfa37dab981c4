// The RNN family's attributes (ONNX RNN, GRU, LSTM opset 7 / 14, and ONNX
// Runtime's com.microsoft DynamicQuantizeLSTM, which takes LSTM's), parsed
// once per node; shared by ops_rnn.cpp and ops_rnn_dynamic.cpp.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "libquant/interp/kernel.h"
#include "libquant/kernels/rnn.h"

namespace quant::interp {

enum class Cell { Rnn, Gru, Lstm };

struct RnnAttrs {
  Cell cell;
  int64_t gates;
  int64_t directions;  // 1 or 2
  bool reverse;        // direction == "reverse"
  int64_t hidden_size; // -1: from R's shape
  int64_t layout;      // 0: [seq, batch, ...]; 1: [batch, seq, ...] (opset 14)
  float clip;          // 0: none
  bool linear_before_reset;
  bool input_forget;
  std::vector<kernels::RnnActivation> activations;  // per direction, gates' functions in order
};

Expected<RnnAttrs> parse_rnn_attrs(const KernelContext& ctx, Cell cell);

// Checks an optional per-direction tensor's shape (null passes); `what` names it.
Status require_rnn_shape(const char* op, const Tensor* t, const Dims& want, const char* what);

// The optional inputs B, sequence_lens, initial_h, initial_c and P (3..7),
// null when absent, checked against X's sizes (S steps, N entries) and the
// hidden size H; sequence_lens values in [0, S].
struct RnnOptionalInputs {
  const Tensor *bias = nullptr, *lens = nullptr, *h0 = nullptr, *c0 = nullptr, *peephole = nullptr;
};
Expected<RnnOptionalInputs> rnn_optional_inputs(const ir::Node& node, const RnnAttrs& a, std::span<const Tensor* const> in,
                                                int64_t S, int64_t N, int64_t H);

}  // namespace quant::interp
