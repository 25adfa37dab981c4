#include "libquant/kernels/rnn_dynamic.h"

#include <algorithm>

#include "libquant/kernels/dynamic_quantize.h"

namespace quant::kernels {
namespace {

// acc [rows, N] = (dynamic_quantize(a) - za) x (B - zb), exact int32; returns
// the operand's scale (rnn_helpers.cc ComputeGemm for uint8 weights).
float quantized_product(const float* a, int64_t rows, int64_t k, const QRnnWeights& b, QLstmScratch& s, int threads) {
  const int64_t n = b.packed->n();
  s.qa.resize(static_cast<size_t>(rows * k));
  s.acc.resize(static_cast<size_t>(rows * n));
  float scale = 0;
  uint8_t zp = 0;
  dynamic_quantize_linear_u8(a, rows * k, s.qa.data(), &scale, &zp);
  if (b.sat) {
    s.saturation += qgemm_sat16<uint8_t>(rows, s.qa.data(), k, zp, *b.sat, 0, n, s.acc.data(), n);
    return scale;
  }
  QGemmOutput out;
  out.y = s.acc.data();
  out.ldy = n;
  qgemm_packed<uint8_t>(rows, s.qa.data(), k, zp, *b.packed, nullptr, out, threads);
  return scale;
}

// scale_multiplier[n] = s_a * s_b[n], in float as ONNX Runtime computes it.
float multiplier(const QRnnWeights& b, float a_scale, int64_t col) {
  return a_scale * b.scales[b.scale_count == 1 ? 0 : col];
}

}  // namespace

void lstm_dynamic_q8(const RnnDims& d, const RnnDirection& io, const QRnnWeights& w, const QRnnWeights& r,
                     const LstmCell& cell, QLstmScratch& s, int threads) {
  const int64_t S = d.seq_len, N = d.batch, I = d.input_size, H = d.hidden_size, G = 4 * H;
  auto length = [&](int64_t b) -> int64_t { return io.seq_lens ? io.seq_lens[b] : S; };
  int64_t max_len = 0;
  for (int64_t b = 0; b < N; ++b) max_len = std::max(max_len, length(b));
  // Time index of entry b at step k: forward k; reverse len-1-k inside its
  // length (padding rows stay where they are, as ReverseSequence copies them).
  auto time_of = [&](int64_t b, int64_t k) { return io.reverse && k < length(b) ? length(b) - 1 - k : k; };

  // X rows in processing order, then X*W for all steps at once (ZeroMode).
  const int64_t rows = max_len * N;
  s.x_rows.resize(static_cast<size_t>(rows * I));
  for (int64_t k = 0; k < max_len; ++k)
    for (int64_t b = 0; b < N; ++b) {
      const float* src = io.x + (time_of(b, k) * N + b) * I;
      std::copy(src, src + I, s.x_rows.data() + (k * N + b) * I);
    }
  s.xw.resize(static_cast<size_t>(rows * G));
  if (rows > 0) {
    const float sx = quantized_product(s.x_rows.data(), rows, I, w, s, threads);
    for (int64_t n = 0; n < G; ++n) {
      const float m = multiplier(w, sx, n);
      for (int64_t i = 0; i < rows; ++i) s.xw[static_cast<size_t>(i * G + n)] = static_cast<float>(s.acc[static_cast<size_t>(i * G + n)]) * m;
    }
  }

  // Wb + Rb, added per gate after the peepholes (UniDirectionalLstm::LoadBias).
  const bool has_bias = io.wb || io.rb;
  s.bias.resize(static_cast<size_t>(G));
  for (int64_t j = 0; j < G; ++j) s.bias[static_cast<size_t>(j)] = (io.wb ? io.wb[j] : 0.0f) + (io.rb ? io.rb[j] : 0.0f);
  s.h.assign(static_cast<size_t>(N * H), 0.0f);
  s.c.assign(static_cast<size_t>(N * H), 0.0f);
  if (io.h0) std::copy(io.h0, io.h0 + N * H, s.h.begin());
  if (io.c0) std::copy(io.c0, io.c0 + N * H, s.c.begin());
  if (io.y)
    for (int64_t t = 0; t < S; ++t) std::fill(io.y + t * io.y_time_stride, io.y + t * io.y_time_stride + N * H, 0.0f);
  s.gates.resize(static_cast<size_t>(G));
  std::vector<float> step_multiplier(static_cast<size_t>(G));
  for (int64_t k = 0; k < max_len; ++k) {
    // Ht-1*R over the whole batch (AccumulateMode onto X*W).
    const float sh = quantized_product(s.h.data(), N, H, r, s, threads);
    for (int64_t n = 0; n < G; ++n) step_multiplier[static_cast<size_t>(n)] = multiplier(r, sh, n);
    for (int64_t b = 0; b < N; ++b) {
      float* h = s.h.data() + b * H;
      if (k >= length(b)) {
        // Past its length: zeros in Y, and in the next step's operand when Y
        // is an output (ONNX Runtime's previous state is the Y row then).
        if (io.y) std::fill(h, h + H, 0.0f);
        continue;
      }
      const int32_t* acc = s.acc.data() + b * G;
      const float* xw = s.xw.data() + (k * N + b) * G;
      for (int64_t n = 0; n < G; ++n)
        s.gates[static_cast<size_t>(n)] = static_cast<float>(acc[n]) * step_multiplier[static_cast<size_t>(n)] + xw[n];
      float* c = s.c.data() + b * H;
      lstm_gates_f32(H, s.gates.data(), has_bias ? s.bias.data() : nullptr, c, h, cell);
      if (io.y) std::copy(h, h + H, io.y + time_of(b, k) * io.y_time_stride + b * H);
      if (k + 1 == length(b)) {
        if (io.y_h) std::copy(h, h + H, io.y_h + b * H);
        if (io.y_c) std::copy(c, c + H, io.y_c + b * H);
      }
    }
  }
  // Entries of length 0: zero final states (ONNX Runtime zero-fills them).
  for (int64_t b = 0; b < N; ++b) {
    if (length(b) != 0) continue;
    if (io.y_h) std::fill(io.y_h + b * H, io.y_h + (b + 1) * H, 0.0f);
    if (io.y_c) std::fill(io.y_c + b * H, io.y_c + (b + 1) * H, 0.0f);
  }
}

}  // namespace quant::kernels
