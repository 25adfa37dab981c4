// RNN, GRU, LSTM against a reference written here from the ONNX operator
// definitions (opset 14), at sizes where indexing mistakes show: hidden size 3
// != input size 2, batch 2, sequence 4, both directions, every bias, initial
// state and (LSTM) peephole given, random values. test_ops_rnn.cpp covers the
// attributes with hand-computed size-1 cases.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "tests/interp/single_node.h"

using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::f32;
using quant::testing::NodeSpec;
using quant::testing::run_ok;
using quant::testing::values_of;

namespace {

constexpr int kSeq = 4, kBatch = 2, kInput = 2, kHidden = 3, kDirs = 2;

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

std::vector<float> random_values(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// The inputs of one node: W [dirs, G*H, I], R [dirs, G*H, H], B [dirs, 2*G*H]
// (Wb then Rb), initial_h [dirs, batch, H], X [seq, batch, I].
struct Weights {
  int gates;
  std::vector<float> x, w, r, b, h0;
  Weights(int g, std::mt19937& rng)
      : gates(g),
        x(random_values(kSeq * kBatch * kInput, rng)),
        w(random_values(static_cast<size_t>(kDirs * g * kHidden * kInput), rng)),
        r(random_values(static_cast<size_t>(kDirs * g * kHidden * kHidden), rng)),
        b(random_values(static_cast<size_t>(kDirs * 2 * g * kHidden), rng)),
        h0(random_values(kDirs * kBatch * kHidden, rng)) {}

  float xv(int t, int n, int k) const { return x[static_cast<size_t>((t * kBatch + n) * kInput + k)]; }
  // Row `gate * H + j` of W times x_t, plus Wb.
  float wx(int d, int gate, int j, int t, int n) const {
    const int row = gate * kHidden + j;
    float s = b[static_cast<size_t>(d * 2 * gates * kHidden + row)];
    for (int k = 0; k < kInput; ++k) s += w[static_cast<size_t>((d * gates * kHidden + row) * kInput + k)] * xv(t, n, k);
    return s;
  }
  // Row `gate * H + j` of R times h, without Rb.
  float rh(int d, int gate, int j, const float* h) const {
    const int row = gate * kHidden + j;
    float s = 0;
    for (int k = 0; k < kHidden; ++k) s += r[static_cast<size_t>((d * gates * kHidden + row) * kHidden + k)] * h[k];
    return s;
  }
  float rb(int d, int gate, int j) const {
    return b[static_cast<size_t>(d * 2 * gates * kHidden + gates * kHidden + gate * kHidden + j)];
  }
  const float* initial_h(int d, int n) const { return &h0[static_cast<size_t>((d * kBatch + n) * kHidden)]; }

  NodeSpec spec(const char* op) const {
    NodeSpec s{op, 14,
               {f32({kSeq, kBatch, kInput}, x), f32({kDirs, gates * kHidden, kInput}, w),
                f32({kDirs, gates * kHidden, kHidden}, r), f32({kDirs, 2 * gates * kHidden}, b), Tensor(),
                f32({kDirs, kBatch, kHidden}, h0)}};
    s.attributes["hidden_size"] = Attribute::of_int(kHidden);
    s.attributes["direction"] = Attribute::of_string("bidirectional");
    return s;
  }
};

// One cell step: state (h, and c for LSTM) of one direction and batch entry
// at time t, updated in place.
using Step = void (*)(const Weights& wt, int d, int t, int n, std::vector<float>& h, std::vector<float>& c,
                      const std::vector<float>& p);

// Runs the reference over both directions (reverse: t from last to first)
// and returns Y [seq, dirs, batch, H], Y_h [dirs, batch, H], Y_c.
void reference(const Weights& wt, Step step, const std::vector<float>& c0, const std::vector<float>& p,
               std::vector<float>& y, std::vector<float>& y_h, std::vector<float>& y_c) {
  y.assign(kSeq * kDirs * kBatch * kHidden, 0.0f);
  y_h.assign(kDirs * kBatch * kHidden, 0.0f);
  y_c.assign(kDirs * kBatch * kHidden, 0.0f);
  for (int d = 0; d < kDirs; ++d) {
    for (int n = 0; n < kBatch; ++n) {
      std::vector<float> h(wt.initial_h(d, n), wt.initial_h(d, n) + kHidden), c(kHidden, 0.0f);
      if (!c0.empty()) c.assign(&c0[static_cast<size_t>((d * kBatch + n) * kHidden)], &c0[static_cast<size_t>((d * kBatch + n + 1) * kHidden)]);
      for (int i = 0; i < kSeq; ++i) {
        const int t = d == 0 ? i : kSeq - 1 - i;
        step(wt, d, t, n, h, c, p);
        for (int j = 0; j < kHidden; ++j) y[static_cast<size_t>(((t * kDirs + d) * kBatch + n) * kHidden + j)] = h[static_cast<size_t>(j)];
      }
      for (int j = 0; j < kHidden; ++j) {
        y_h[static_cast<size_t>((d * kBatch + n) * kHidden + j)] = h[static_cast<size_t>(j)];
        y_c[static_cast<size_t>((d * kBatch + n) * kHidden + j)] = c[static_cast<size_t>(j)];
      }
    }
  }
}

// RNN: H = tanh(X W^T + H R^T + Wb + Rb).
void rnn_step(const Weights& wt, int d, int t, int n, std::vector<float>& h, std::vector<float>&, const std::vector<float>&) {
  std::vector<float> next(kHidden);
  for (int j = 0; j < kHidden; ++j) next[static_cast<size_t>(j)] = std::tanh(wt.wx(d, 0, j, t, n) + wt.rh(d, 0, j, h.data()) + wt.rb(d, 0, j));
  h = next;
}

// GRU, gates [z r h]: z = sigmoid(..), r = sigmoid(..), H = (1 - z) . h~ + z . H, with
//   linear_before_reset 0: h~ = tanh(X Wh^T + (r . H) Rh^T + Rbh + Wbh)
//   linear_before_reset 1: h~ = tanh(X Wh^T + r . (H Rh^T + Rbh) + Wbh)
template <bool kLinearBeforeReset>
void gru_step(const Weights& wt, int d, int t, int n, std::vector<float>& h, std::vector<float>&, const std::vector<float>&) {
  std::vector<float> z(kHidden), r(kHidden), rh(kHidden), next(kHidden);
  for (int j = 0; j < kHidden; ++j) {
    const size_t u = static_cast<size_t>(j);
    z[u] = sigmoid(wt.wx(d, 0, j, t, n) + wt.rh(d, 0, j, h.data()) + wt.rb(d, 0, j));
    r[u] = sigmoid(wt.wx(d, 1, j, t, n) + wt.rh(d, 1, j, h.data()) + wt.rb(d, 1, j));
    rh[u] = r[u] * h[u];
  }
  for (int j = 0; j < kHidden; ++j) {
    const size_t u = static_cast<size_t>(j);
    const float recurrent = kLinearBeforeReset ? r[u] * (wt.rh(d, 2, j, h.data()) + wt.rb(d, 2, j))
                                               : wt.rh(d, 2, j, rh.data()) + wt.rb(d, 2, j);
    const float cand = std::tanh(wt.wx(d, 2, j, t, n) + recurrent);
    next[u] = (1 - z[u]) * cand + z[u] * h[u];
  }
  h = next;
}

// LSTM, gates [i o f c], peepholes P [dirs, 3H] = [Pi Po Pf]:
//   i = sigmoid(.. + Pi . C), f = sigmoid(.. + Pf . C), C' = f . C + i . tanh(..),
//   o = sigmoid(.. + Po . C'), H = o . tanh(C').
void lstm_step(const Weights& wt, int d, int t, int n, std::vector<float>& h, std::vector<float>& c,
               const std::vector<float>& p) {
  auto pre = [&](int gate, int j) { return wt.wx(d, gate, j, t, n) + wt.rh(d, gate, j, h.data()) + wt.rb(d, gate, j); };
  auto peep = [&](int which, int j) { return p[static_cast<size_t>(d * 3 * kHidden + which * kHidden + j)]; };
  std::vector<float> next_h(kHidden), next_c(kHidden);
  for (int j = 0; j < kHidden; ++j) {
    const size_t u = static_cast<size_t>(j);
    const float i = sigmoid(pre(0, j) + peep(0, j) * c[u]);
    const float f = sigmoid(pre(2, j) + peep(2, j) * c[u]);
    next_c[u] = f * c[u] + i * std::tanh(pre(3, j));
    const float o = sigmoid(pre(1, j) + peep(1, j) * next_c[u]);
    next_h[u] = o * std::tanh(next_c[u]);
  }
  h = next_h;
  c = next_c;
}

void check_close(const Tensor& got, const std::vector<float>& want, quant::Dims shape) {
  CHECK(got.shape() == shape);
  const auto v = values_of<float>(got);
  REQUIRE(v.size() == want.size());
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("element " << i);
    CHECK(v[i] == Approx(want[i]).margin(1e-5));
  }
}

const quant::Dims kYShape{kSeq, kDirs, kBatch, kHidden}, kStateShape{kDirs, kBatch, kHidden};

}  // namespace

TEST_CASE("RNN bidirectional, hidden 3 != input 2, batch 2, against the reference", "[interp][rnn]") {
  std::mt19937 rng(101);
  const Weights wt(1, rng);
  NodeSpec s = wt.spec("RNN");
  s.num_outputs = 2;
  std::vector<float> y, y_h, y_c;
  reference(wt, rnn_step, {}, {}, y, y_h, y_c);
  auto out = run_ok(s);
  check_close(out[0], y, kYShape);
  check_close(out[1], y_h, kStateShape);
}

TEST_CASE("GRU bidirectional, hidden 3 != input 2, batch 2, against the reference", "[interp][gru]") {
  std::mt19937 rng(102);
  const Weights wt(3, rng);
  for (bool lbr : {false, true}) {
    INFO("linear_before_reset " << lbr);
    NodeSpec s = wt.spec("GRU");
    s.num_outputs = 2;
    s.attributes["linear_before_reset"] = Attribute::of_int(lbr);
    std::vector<float> y, y_h, y_c;
    reference(wt, lbr ? gru_step<true> : gru_step<false>, {}, {}, y, y_h, y_c);
    auto out = run_ok(s);
    check_close(out[0], y, kYShape);
    check_close(out[1], y_h, kStateShape);
  }
}

TEST_CASE("LSTM bidirectional with initial_c and peepholes, hidden 3 != input 2, batch 2, against the reference",
          "[interp][lstm]") {
  std::mt19937 rng(103);
  const Weights wt(4, rng);
  const std::vector<float> c0 = random_values(kDirs * kBatch * kHidden, rng);
  const std::vector<float> p = random_values(kDirs * 3 * kHidden, rng);
  NodeSpec s = wt.spec("LSTM");
  s.inputs.push_back(f32(kStateShape, c0));
  s.inputs.push_back(f32({kDirs, 3 * kHidden}, p));
  s.num_outputs = 3;
  std::vector<float> y, y_h, y_c;
  reference(wt, lstm_step, c0, p, y, y_h, y_c);
  auto out = run_ok(s);
  check_close(out[0], y, kYShape);
  check_close(out[1], y_h, kStateShape);
  check_close(out[2], y_c, kStateShape);
}
