#include "libquant/kernels/rnn.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "libquant/kernels/gemm.h"

namespace quant::kernels {

void rnn_activation_f32(const RnnActivation& a, float* x, int64_t n) {
  const float alpha = a.alpha, beta = a.beta;
  switch (a.kind) {
    case RnnActivationKind::Sigmoid:
      for (int64_t i = 0; i < n; ++i) x[i] = 1.0f / (1.0f + std::exp(-x[i]));
      break;
    case RnnActivationKind::Tanh:
      for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
      break;
    case RnnActivationKind::Relu:
      for (int64_t i = 0; i < n; ++i) x[i] = std::max(x[i], 0.0f);
      break;
    case RnnActivationKind::Affine:
      for (int64_t i = 0; i < n; ++i) x[i] = alpha * x[i] + beta;
      break;
    case RnnActivationKind::LeakyRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
      break;
    case RnnActivationKind::ThresholdedRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] > alpha ? x[i] : 0.0f;
      break;
    case RnnActivationKind::ScaledTanh:
      for (int64_t i = 0; i < n; ++i) x[i] = alpha * std::tanh(beta * x[i]);
      break;
    case RnnActivationKind::HardSigmoid:
      for (int64_t i = 0; i < n; ++i) x[i] = std::clamp(alpha * x[i] + beta, 0.0f, 1.0f);
      break;
    case RnnActivationKind::Elu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= 0.0f ? x[i] : alpha * (std::exp(x[i]) - 1.0f);
      break;
    case RnnActivationKind::Softsign:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::abs(x[i]));
      break;
    case RnnActivationKind::Softplus:
      // log(1 + e^x) without overflow for large x.
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] + std::log1p(std::exp(-x[i])) : std::log1p(std::exp(x[i]));
      break;
  }
}

namespace {

// Scratch layout shared by the three cells.
struct Workspace {
  float* xw;    // [seq*batch, gates*hidden]: X*W^T + biases, all steps at once
  float* hr;    // [batch, gates*hidden]: Ht-1*R^T of one step
  float* h;     // [batch, hidden]: hidden state
  float* c;     // [batch, hidden]: LSTM cell state
  float* tmp;   // [batch, hidden]: GRU r (.) Ht-1
  float* bias;  // [gates*hidden]
};

Workspace split_workspace(const RnnDims& d, int64_t gates, float* ws) {
  const int64_t gh = gates * d.hidden_size, bh = d.batch * d.hidden_size;
  Workspace w{};
  w.xw = ws;
  w.hr = w.xw + d.seq_len * d.batch * gh;
  w.h = w.hr + d.batch * gh;
  w.c = w.h + bh;
  w.tmp = w.c + bh;
  w.bias = w.tmp + bh;
  return w;
}

void clip_values(float* x, int64_t n, float clip) {
  if (clip <= 0.0f) return;
  for (int64_t i = 0; i < n; ++i) x[i] = std::clamp(x[i], -clip, clip);
}

// Length of batch entry b, and whether time step t is inside it.
int64_t length_of(const RnnDims& d, const RnnDirection& io, int64_t b) { return io.seq_lens ? io.seq_lens[b] : d.seq_len; }

// Initial states, and the projection of every input step through W at once
// (one large GEMM instead of seq_len small ones).
void begin(const RnnDims& d, const RnnDirection& io, int64_t gates, const Workspace& w) {
  const int64_t gh = gates * d.hidden_size, bh = d.batch * d.hidden_size;
  if (io.h0) std::copy(io.h0, io.h0 + bh, w.h);
  else std::fill(w.h, w.h + bh, 0.0f);
  if (io.c0) std::copy(io.c0, io.c0 + bh, w.c);
  else std::fill(w.c, w.c + bh, 0.0f);
  gemm_f32(false, true, d.seq_len * d.batch, gh, d.input_size, 1.0f, io.x, io.w, 1.0f, w.bias, 1, gh, w.xw);
}

// Time index of the k-th processed step.
int64_t step_time(const RnnDims& d, const RnnDirection& io, int64_t k) { return io.reverse ? d.seq_len - 1 - k : k; }

// After the last step: Y_h / Y_c, zero for entries of length 0 (ONNX Runtime
// zero-fills them; the spec leaves that case open).
void finish(const RnnDims& d, const RnnDirection& io, const Workspace& w) {
  const int64_t H = d.hidden_size;
  for (int64_t b = 0; b < d.batch; ++b) {
    const bool empty = length_of(d, io, b) == 0;
    if (io.y_h) {
      if (empty) std::fill(io.y_h + b * H, io.y_h + (b + 1) * H, 0.0f);
      else std::copy(w.h + b * H, w.h + (b + 1) * H, io.y_h + b * H);
    }
    if (io.y_c) {
      if (empty) std::fill(io.y_c + b * H, io.y_c + (b + 1) * H, 0.0f);
      else std::copy(w.c + b * H, w.c + (b + 1) * H, io.y_c + b * H);
    }
  }
}

// Writes the hidden state of entry b at time t to Y (zeros past its length).
void write_y(const RnnDims& d, const RnnDirection& io, const Workspace& w, int64_t t, int64_t b, bool active) {
  if (!io.y) return;
  const int64_t H = d.hidden_size;
  float* row = io.y + t * io.y_time_stride + b * H;
  if (active) std::copy(w.h + b * H, w.h + (b + 1) * H, row);
  else std::fill(row, row + H, 0.0f);
}

void sum_biases(const RnnDirection& io, int64_t n, float* bias) {
  for (int64_t i = 0; i < n; ++i) bias[i] = (io.wb ? io.wb[i] : 0.0f) + (io.rb ? io.rb[i] : 0.0f);
}

}  // namespace

int64_t rnn_workspace_size(const RnnDims& d, int64_t gates) {
  const int64_t gh = gates * d.hidden_size;
  return d.seq_len * d.batch * gh + d.batch * gh + 3 * d.batch * d.hidden_size + gh;
}

void rnn_cell_f32(const RnnDims& d, const RnnDirection& io, const RnnActivation& f, float* ws) {
  const int64_t H = d.hidden_size;
  Workspace w = split_workspace(d, 1, ws);
  sum_biases(io, H, w.bias);
  begin(d, io, 1, w);
  for (int64_t k = 0; k < d.seq_len; ++k) {
    const int64_t t = step_time(d, io, k);
    gemm_f32(false, true, d.batch, H, H, 1.0f, w.h, io.r, 0.0f, nullptr, 1, 1, w.hr);
    for (int64_t b = 0; b < d.batch; ++b) {
      const bool active = t < length_of(d, io, b);
      if (active) {
        float* g = w.hr + b * H;
        const float* x = w.xw + (t * d.batch + b) * H;
        for (int64_t j = 0; j < H; ++j) g[j] += x[j];
        clip_values(g, H, io.clip);
        rnn_activation_f32(f, g, H);
        std::copy(g, g + H, w.h + b * H);
      }
      write_y(d, io, w, t, b, active);
    }
  }
  finish(d, io, w);
}

void gru_cell_f32(const RnnDims& d, const RnnDirection& io, const RnnActivation& f, const RnnActivation& g,
                  bool linear_before_reset, float* ws) {
  const int64_t H = d.hidden_size, G = 3 * H;
  Workspace w = split_workspace(d, 3, ws);
  // z and r: Wb + Rb. h: Wbh, plus Rbh unless the reset gate multiplies
  // (Ht-1*Rh^T + Rbh) as a whole (linear_before_reset, ONNX GRU).
  sum_biases(io, 2 * H, w.bias);
  for (int64_t j = 2 * H; j < G; ++j)
    w.bias[j] = (io.wb ? io.wb[j] : 0.0f) + (!linear_before_reset && io.rb ? io.rb[j] : 0.0f);
  begin(d, io, 3, w);
  const float* rh = io.r + 2 * H * H;  // rows of Rh in R[zrh]
  for (int64_t k = 0; k < d.seq_len; ++k) {
    const int64_t t = step_time(d, io, k);
    if (linear_before_reset) {
      // All three gates at once: [Hz Hr Hh] = Ht-1 * R^T.
      gemm_f32(false, true, d.batch, G, H, 1.0f, w.h, io.r, 0.0f, nullptr, 1, 1, w.hr);
    } else {
      // z and r first; h needs (r (.) Ht-1) * Rh^T below.
      for (int64_t b = 0; b < d.batch; ++b)
        gemm_f32(false, true, 1, 2 * H, H, 1.0f, w.h + b * H, io.r, 0.0f, nullptr, 1, 1, w.hr + b * G);
    }
    for (int64_t b = 0; b < d.batch; ++b) {
      float* gates = w.hr + b * G;
      const float* x = w.xw + (t * d.batch + b) * G;
      for (int64_t j = 0; j < 2 * H; ++j) gates[j] += x[j];
      clip_values(gates, 2 * H, io.clip);
      rnn_activation_f32(f, gates, 2 * H);
    }
    float* rh_h = w.tmp;
    if (!linear_before_reset) {
      for (int64_t b = 0; b < d.batch; ++b) {
        const float* r = w.hr + b * G + H;
        for (int64_t j = 0; j < H; ++j) rh_h[b * H + j] = r[j] * w.h[b * H + j];
      }
    }
    for (int64_t b = 0; b < d.batch; ++b) {
      const bool active = t < length_of(d, io, b);
      if (active) {
        float* gates = w.hr + b * G;
        const float* z = gates;
        const float* r = gates + H;
        float* hh = gates + 2 * H;
        const float* x = w.xw + (t * d.batch + b) * G + 2 * H;
        if (linear_before_reset) {
          for (int64_t j = 0; j < H; ++j) hh[j] = x[j] + r[j] * (hh[j] + (io.rb ? io.rb[2 * H + j] : 0.0f));
        } else {
          gemm_f32(false, true, 1, H, H, 1.0f, rh_h + b * H, rh, 0.0f, nullptr, 1, 1, hh);
          for (int64_t j = 0; j < H; ++j) hh[j] += x[j];
        }
        clip_values(hh, H, io.clip);
        rnn_activation_f32(g, hh, H);
        float* h = w.h + b * H;
        for (int64_t j = 0; j < H; ++j) h[j] = (1.0f - z[j]) * hh[j] + z[j] * h[j];
      }
      write_y(d, io, w, t, b, active);
    }
  }
  finish(d, io, w);
}

void lstm_gates_f32(int64_t H, float* gates, const float* bias, float* c, float* h_out, const LstmCell& cell) {
  float* gi = gates;
  float* go = gates + H;
  float* gf = gates + 2 * H;
  float* gc = gates + 3 * H;
  const float* p_i = cell.peephole;
  const float* p_o = cell.peephole ? cell.peephole + H : nullptr;
  const float* p_f = cell.peephole ? cell.peephole + 2 * H : nullptr;
  // Per gate: peephole term, bias, clip, activation (the order of ONNX
  // Runtime's UniDirectionalLstm::GateComputations, 1.20). Input and forget
  // gates see Ct-1 through the peepholes; the output gate sees the new Ct
  // (ONNX LSTM).
  auto pre = [&](float* x, const float* peep, const float* cs, int64_t block) {
    if (peep)
      for (int64_t j = 0; j < H; ++j) x[j] += peep[j] * cs[j];
    if (bias)
      for (int64_t j = 0; j < H; ++j) x[j] += bias[block * H + j];
    clip_values(x, H, cell.clip);
  };
  pre(gi, p_i, c, 0);
  rnn_activation_f32(cell.f, gi, H);
  if (cell.input_forget) {
    for (int64_t j = 0; j < H; ++j) gf[j] = 1.0f - gi[j];
  } else {
    pre(gf, p_f, c, 2);
    rnn_activation_f32(cell.f, gf, H);
  }
  pre(gc, nullptr, c, 3);
  rnn_activation_f32(cell.g, gc, H);
  for (int64_t j = 0; j < H; ++j) c[j] = gf[j] * c[j] + gi[j] * gc[j];
  pre(go, p_o, c, 1);
  rnn_activation_f32(cell.f, go, H);
  // h(Ct) into the spare block gc, then Ht = o (.) h(Ct).
  std::copy(c, c + H, gc);
  rnn_activation_f32(cell.h, gc, H);
  for (int64_t j = 0; j < H; ++j) h_out[j] = go[j] * gc[j];
}

void lstm_cell_f32(const RnnDims& d, const RnnDirection& io, const RnnActivation& f, const RnnActivation& g,
                   const RnnActivation& h, bool input_forget, float* ws) {
  const int64_t H = d.hidden_size, G = 4 * H;
  Workspace w = split_workspace(d, 4, ws);
  sum_biases(io, G, w.bias);
  begin(d, io, 4, w);
  const LstmCell cell{f, g, h, input_forget, io.peephole, io.clip};
  for (int64_t k = 0; k < d.seq_len; ++k) {
    const int64_t t = step_time(d, io, k);
    gemm_f32(false, true, d.batch, G, H, 1.0f, w.h, io.r, 0.0f, nullptr, 1, 1, w.hr);
    for (int64_t b = 0; b < d.batch; ++b) {
      const bool active = t < length_of(d, io, b);
      if (active) {
        float* gates = w.hr + b * G;
        const float* x = w.xw + (t * d.batch + b) * G;
        for (int64_t j = 0; j < G; ++j) gates[j] += x[j];
        lstm_gates_f32(H, gates, nullptr, w.c + b * H, w.h + b * H, cell);
      }
      write_y(d, io, w, t, b, active);
    }
  }
  finish(d, io, w);
}

}  // namespace quant::kernels
