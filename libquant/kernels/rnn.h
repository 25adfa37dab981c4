// Recurrent cells of ONNX RNN, GRU and LSTM (opset 7 / 14), one direction at a
// time, time-major (layout 0). The op wrapper (interp/ops_rnn.cpp) splits the
// directions and converts layout 1 (batch-major) to and from this layout.
#pragma once

#include <cstdint>

namespace quant::kernels {

// The activation functions the recurrent ops accept (ONNX RNN/GRU/LSTM,
// attribute `activations`), with their alpha/beta parameters.
enum class RnnActivationKind { Sigmoid, Tanh, Relu, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };

struct RnnActivation {
  RnnActivationKind kind = RnnActivationKind::Sigmoid;
  float alpha = 0.0f;
  float beta = 0.0f;
};

// Applies `a` in place to n values.
void rnn_activation_f32(const RnnActivation& a, float* x, int64_t n);

struct RnnDims {
  int64_t seq_len = 0;
  int64_t batch = 0;
  int64_t input_size = 0;
  int64_t hidden_size = 0;
};

// Buffers of one direction. `gates` is 1 (RNN), 3 (GRU, order z r h) or 4
// (LSTM, order i o f c), as in the ONNX weight layouts.
struct RnnDirection {
  const float* x = nullptr;          // [seq_len, batch, input_size]
  const float* w = nullptr;          // [gates*hidden, input_size]
  const float* r = nullptr;          // [gates*hidden, hidden]
  const float* wb = nullptr;         // [gates*hidden] or null (zeros)
  const float* rb = nullptr;         // [gates*hidden] or null (zeros)
  const float* peephole = nullptr;   // LSTM only: [3*hidden] (i o f) or null
  const int32_t* seq_lens = nullptr; // [batch], each in [0, seq_len], or null (all seq_len)
  const float* h0 = nullptr;         // [batch, hidden] or null (zeros)
  const float* c0 = nullptr;         // LSTM only: [batch, hidden] or null (zeros)
  // Y rows of time step t start at y + t * y_time_stride ([batch, hidden]
  // contiguous); null when Y is not wanted. Steps past a batch entry's
  // sequence length are written as zeros (as ONNX Runtime does).
  float* y = nullptr;
  int64_t y_time_stride = 0;
  float* y_h = nullptr;              // [batch, hidden] or null
  float* y_c = nullptr;              // LSTM only: [batch, hidden] or null
  bool reverse = false;
  float clip = 0.0f;                 // > 0: gate pre-activations clamped to [-clip, clip]
};

// Floats of scratch memory each cell needs (the caller allocates it, so that
// the kernels themselves allocate nothing).
int64_t rnn_workspace_size(const RnnDims& d, int64_t gates);

// Ht = f(Xt*W^T + Ht-1*R^T + Wb + Rb).
void rnn_cell_f32(const RnnDims& d, const RnnDirection& io, const RnnActivation& f, float* workspace);

// z = f(..), r = f(..), h = g(..) as in ONNX GRU; linear_before_reset selects
// where the reset gate applies (before or after multiplying by Rh).
void gru_cell_f32(const RnnDims& d, const RnnDirection& io, const RnnActivation& f, const RnnActivation& g,
                  bool linear_before_reset, float* workspace);

// What an LSTM cell applies after its matrix products.
struct LstmCell {
  RnnActivation f, g, h;
  bool input_forget = false;        // f = 1 - i
  const float* peephole = nullptr;  // [3*hidden] (i o f) or null
  float clip = 0.0f;                // > 0: pre-activations clamped to [-clip, clip]
};

// One batch entry's LSTM step after the products: `gates` [4*hidden] (i o f c)
// holds X*W^T + H*R^T (+ biases when `bias` is null); `bias` [4*hidden], when
// given, is added after the peephole terms, as ONNX Runtime does. Updates the
// cell state c [hidden] in place, writes Ht to h_out [hidden]; gates is scratch.
void lstm_gates_f32(int64_t hidden, float* gates, const float* bias, float* c, float* h_out, const LstmCell& cell);

// ONNX LSTM with optional peepholes; input_forget couples the gates (f = 1 - i).
void lstm_cell_f32(const RnnDims& d, const RnnDirection& io, const RnnActivation& f, const RnnActivation& g,
                   const RnnActivation& h, bool input_forget, float* workspace);

}  // namespace quant::kernels
