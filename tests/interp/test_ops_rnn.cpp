// RNN, GRU, LSTM through one-node graphs, with hidden and input size 1 so that
// every expected value is a short formula of the ONNX definitions.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/interp/single_node.h"

using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::NodeSpec;
using quant::testing::run_node;
using quant::testing::f32;
using quant::testing::i32;
using quant::testing::run_ok;
using quant::testing::values_of;

namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

Attribute strings(std::vector<std::string> v) {
  Attribute a;
  a.kind = Attribute::Kind::Strings;
  a.strings = std::move(v);
  return a;
}

// Runs and returns every output; fails the test on an error.
void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-6));
}

// RNN with W = R = 0.5 and a linear (Affine 1, 0) activation:
// forward over x = [1, 2]: h = 0.5, then 0.5*2 + 0.5*0.5 = 1.25.
NodeSpec linear_rnn(std::string direction, int64_t dirs) {
  NodeSpec s{"RNN", 14,
             {f32({2, 1, 1}, {1, 2}), f32({dirs, 1, 1}, std::vector<float>(static_cast<size_t>(dirs), 0.5f)),
              f32({dirs, 1, 1}, std::vector<float>(static_cast<size_t>(dirs), 0.5f))}};
  s.num_outputs = 2;
  s.attributes["hidden_size"] = Attribute::of_int(1);
  s.attributes["direction"] = Attribute::of_string(std::move(direction));
  s.attributes["activations"] = strings(std::vector<std::string>(static_cast<size_t>(dirs), "Affine"));
  return s;
}

}  // namespace

TEST_CASE("RNN forward, reverse and bidirectional", "[interp][rnn]") {
  auto fwd = run_ok(linear_rnn("forward", 1));
  CHECK(fwd[0].shape() == quant::Dims{2, 1, 1, 1});
  check_close(values_of<float>(fwd[0]), {0.5f, 1.25f});
  check_close(values_of<float>(fwd[1]), {1.25f});
  // Reverse: t=1 first: h = 1; then t=0: 0.5*1 + 0.5*1 = 1.
  auto rev = run_ok(linear_rnn("reverse", 1));
  check_close(values_of<float>(rev[0]), {1.0f, 1.0f});
  check_close(values_of<float>(rev[1]), {1.0f});
  // Bidirectional: Y [seq, 2, batch, hidden] interleaves the two.
  auto bi = run_ok(linear_rnn("bidirectional", 2));
  CHECK(bi[0].shape() == quant::Dims{2, 2, 1, 1});
  check_close(values_of<float>(bi[0]), {0.5f, 1.0f, 1.25f, 1.0f});
  check_close(values_of<float>(bi[1]), {1.25f, 1.0f});
}

TEST_CASE("RNN default Tanh, bias and initial_h", "[interp][rnn]") {
  // One step: h = tanh(0.5*x + 0.25*h0 + Wb + Rb).
  NodeSpec s{"RNN", 7,
             {f32({1, 1, 1}, {2}), f32({1, 1, 1}, {0.5f}), f32({1, 1, 1}, {0.25f}), f32({1, 2}, {0.1f, 0.2f}), Tensor(),
              f32({1, 1, 1}, {-1})}};
  s.num_outputs = 2;
  auto out = run_ok(s);
  const float h = std::tanh(1.0f - 0.25f + 0.3f);
  check_close(values_of<float>(out[0]), {h});
  check_close(values_of<float>(out[1]), {h});
}

TEST_CASE("RNN activation_alpha/beta are consumed in order; clip bounds pre-activations", "[interp][rnn]") {
  // Forward Affine(2, 0): h = 2*(0.5x + 0.5h): 1, then 2*(1 + 0.5) = 3.
  // Reverse Affine(3, 1): t=1: 3*1 + 1 = 4; t=0: 3*(0.5 + 2) + 1 = 8.5.
  NodeSpec s = linear_rnn("bidirectional", 2);
  s.attributes["activation_alpha"] = Attribute::of_floats({2, 3});
  s.attributes["activation_beta"] = Attribute::of_floats({0, 1});
  auto out = run_ok(s);
  check_close(values_of<float>(out[1]), {3.0f, 8.5f});

  NodeSpec c = linear_rnn("forward", 1);
  c.attributes["clip"] = Attribute::of_float(0.4f);
  check_close(values_of<float>(run_ok(c)[0]), {0.4f, 0.4f});
}

TEST_CASE("RNN sequence_lens zero-fills Y past each length", "[interp][rnn]") {
  // Batch 2: entry 0 has length 2, entry 1 length 1 (x = [1, 2] for both).
  NodeSpec s{"RNN", 14,
             {f32({2, 2, 1}, {1, 1, 2, 2}), f32({1, 1, 1}, {0.5f}), f32({1, 1, 1}, {0.5f}), Tensor(), i32({2}, {2, 1})}};
  s.num_outputs = 2;
  s.attributes["activations"] = strings({"Affine"});
  auto out = run_ok(s);
  check_close(values_of<float>(out[0]), {0.5f, 0.5f, 1.25f, 0.0f});
  check_close(values_of<float>(out[1]), {1.25f, 0.5f});
  s.inputs[4] = i32({2}, {3, 1});
  auto bad = run_node(s);
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.status().message(), Catch::Contains("sequence_lens value 3"));
}

TEST_CASE("RNN layout 1 is batch-major", "[interp][rnn]") {
  // Same as the sequence_lens case without lengths, X given as [batch, seq, 1].
  NodeSpec s{"RNN", 14, {f32({2, 2, 1}, {1, 2, 1, 2}), f32({1, 1, 1}, {0.5f}), f32({1, 1, 1}, {0.5f})}};
  s.num_outputs = 2;
  s.attributes["activations"] = strings({"Affine"});
  s.attributes["layout"] = Attribute::of_int(1);
  auto out = run_ok(s);
  CHECK(out[0].shape() == quant::Dims{2, 2, 1, 1});
  check_close(values_of<float>(out[0]), {0.5f, 1.25f, 0.5f, 1.25f});
  CHECK(out[1].shape() == quant::Dims{2, 1, 1});
}

TEST_CASE("RNN rejects weights of the wrong shape", "[interp][rnn]") {
  NodeSpec s{"RNN", 14, {f32({2, 1, 1}, {1, 2}), f32({1, 2, 1}, {1, 1}), f32({1, 1, 1}, {0.5f})}};
  auto out = run_node(s);
  REQUIRE_FALSE(out.has_value());
  CHECK_THAT(out.status().message(), Catch::Contains("RNN node 'node'"));
  CHECK_THAT(out.status().message(), Catch::Contains("W has shape"));
  NodeSpec a = linear_rnn("forward", 1);
  a.attributes["activations"] = strings({"Swish"});
  REQUIRE_FALSE(run_node(a).has_value());
}

TEST_CASE("GRU linear_before_reset moves the reset gate", "[interp][gru]") {
  // W, R = [z r h] = [0 0 1]: z = r = sigmoid(0) = 0.5. Rbh = 1, h0 = 0.5, x = 1.
  //   lbr 0: h~ = tanh(x + (r*h0)*1 + Rbh) = tanh(2.25)
  //   lbr 1: h~ = tanh(x + r*(h0*1 + Rbh)) = tanh(1.75)
  // H = (1 - z)*h~ + z*h0.
  NodeSpec s{"GRU", 14,
             {f32({1, 1, 1}, {1}), f32({1, 3, 1}, {0, 0, 1}), f32({1, 3, 1}, {0, 0, 1}), f32({1, 6}, {0, 0, 0, 0, 0, 1}),
              Tensor(), f32({1, 1, 1}, {0.5f})}};
  s.num_outputs = 2;
  check_close(values_of<float>(run_ok(s)[1]), {0.5f * std::tanh(2.25f) + 0.25f});
  s.attributes["linear_before_reset"] = Attribute::of_int(1);
  check_close(values_of<float>(run_ok(s)[1]), {0.5f * std::tanh(1.75f) + 0.25f});
}

TEST_CASE("GRU custom activations per gate group", "[interp][gru]") {
  // f = HardSigmoid(0.2, 0.5) on z and r, g = Affine(1, 0) on h:
  // z = r = 0.5 (pre-activation 0); h~ = x = 1; H = 0.5*1 + 0.5*0 = 0.5.
  NodeSpec s{"GRU", 7, {f32({1, 1, 1}, {1}), f32({1, 3, 1}, {0, 0, 1}), f32({1, 3, 1}, {0, 0, 0})}};
  s.num_outputs = 2;
  s.attributes["activations"] = strings({"HardSigmoid", "Affine"});
  check_close(values_of<float>(run_ok(s)[1]), {0.5f});
}

TEST_CASE("LSTM peepholes, initial_c, Y_c and input_forget", "[interp][lstm]") {
  // W = [i o f c] = [0 0 0 1], R = 0: pre-activations i, o, f are 0 plus peepholes.
  // P = [pi po pf] = [1 1 0], c0 = 2, x = 1:
  //   i = sigmoid(2), f = sigmoid(0) = 0.5, c = 0.5*2 + i*tanh(1)
  //   o = sigmoid(c) (peephole on the new cell state), H = o*tanh(c).
  NodeSpec s{"LSTM", 14,
             {f32({1, 1, 1}, {1}), f32({1, 4, 1}, {0, 0, 0, 1}), f32({1, 4, 1}, {0, 0, 0, 0}), Tensor(), Tensor(),
              Tensor(), f32({1, 1, 1}, {2}), f32({1, 3}, {1, 1, 0})}};
  s.num_outputs = 3;
  const float i = sigmoid(2.0f);
  const float c = 1.0f + i * std::tanh(1.0f);
  auto out = run_ok(s);
  check_close(values_of<float>(out[1]), {sigmoid(c) * std::tanh(c)});
  check_close(values_of<float>(out[2]), {c});
  // input_forget: f = 1 - i.
  s.attributes["input_forget"] = Attribute::of_int(1);
  const float c2 = (1.0f - i) * 2.0f + i * std::tanh(1.0f);
  check_close(values_of<float>(run_ok(s)[2]), {c2});
}

TEST_CASE("LSTM rejects a peephole tensor of the wrong size", "[interp][lstm]") {
  NodeSpec s{"LSTM", 14,
             {f32({1, 1, 1}, {1}), f32({1, 4, 1}, {0, 0, 0, 1}), f32({1, 4, 1}, {0, 0, 0, 0}), Tensor(), Tensor(),
              Tensor(), Tensor(), f32({1, 2}, {1, 1})}};
  auto out = run_node(s);
  REQUIRE_FALSE(out.has_value());
  CHECK_THAT(out.status().message(), Catch::Contains("P has shape"));
}
