// Softmax (double), LogSoftmax, Hardmax, NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss through one-node graphs.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/interp/single_node.h"

using quant::DType;
using quant::Dims;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::NodeSpec;
using quant::testing::run_node;
using quant::testing::f32;
using quant::testing::i64;
using quant::testing::run_ok;
using quant::testing::values_of;

TEST_CASE("Softmax on double", "[interp][softmax]") {
  NodeSpec s{"Softmax", 13, {Tensor::from_vector<double>({2}, {0, std::log(3.0)})}};
  auto y = run_ok(s)[0];
  CHECK(y.dtype() == DType::Float64);
  CHECK(values_of<double>(y)[0] == Approx(0.25));
  CHECK(values_of<double>(y)[1] == Approx(0.75));
}

TEST_CASE("LogSoftmax is stable and follows the opset's axis rule", "[interp][softmax]") {
  // log_softmax([0, ln 3]) = [ln 0.25, ln 0.75]; shifting by 1000 changes
  // nothing (up to float's spacing at 1000, 6e-5).
  NodeSpec s{"LogSoftmax", 13, {f32({1, 2}, {1000, 1000 + std::log(3.0f)})}};
  auto y = values_of<float>(run_ok(s)[0]);
  CHECK(y[0] == Approx(std::log(0.25f)).margin(1e-4));
  CHECK(y[1] == Approx(std::log(0.75f)).margin(1e-4));
  // Opset 11, axis 0 on [2, 2]: the whole tensor is one row of 4 zeros.
  NodeSpec s11{"LogSoftmax", 11, {f32({2, 2}, {0, 0, 0, 0})}};
  s11.attributes["axis"] = Attribute::of_int(0);
  for (float v : values_of<float>(run_ok(s11)[0])) CHECK(v == Approx(std::log(0.25f)));
}

TEST_CASE("Hardmax marks the first maximum", "[interp][softmax]") {
  Tensor x = f32({2, 3}, {1, 3, 3, 2, 0, 1});
  CHECK(values_of<float>(run_ok({"Hardmax", 13, {x}})[0]) == std::vector<float>{0, 1, 0, 1, 0, 0});
  NodeSpec axis0{"Hardmax", 13, {x}};
  axis0.attributes["axis"] = Attribute::of_int(0);
  CHECK(values_of<float>(run_ok(axis0)[0]) == std::vector<float>{0, 1, 1, 1, 0, 0});
  // Opset 11, axis 0: one row of 6, first maximum at index 1.
  NodeSpec old{"Hardmax", 11, {x}};
  old.attributes["axis"] = Attribute::of_int(0);
  CHECK(values_of<float>(run_ok(old)[0]) == std::vector<float>{0, 1, 0, 0, 0, 0});
}

TEST_CASE("NegativeLogLikelihoodLoss reductions, weights and ignore_index", "[interp][loss]") {
  // input [N=2, C=3] log-probs, targets 2 and 0.
  Tensor input = f32({2, 3}, {-1, -2, -3, -4, -5, -6});
  Tensor target = i64({2}, {2, 0});
  NodeSpec none{"NegativeLogLikelihoodLoss", 13, {input, target}};
  none.attributes["reduction"] = Attribute::of_string("none");
  CHECK(values_of<float>(run_ok(none)[0]) == std::vector<float>{3, 4});
  NodeSpec mean{"NegativeLogLikelihoodLoss", 13, {input, target}};
  CHECK(values_of<float>(run_ok(mean)[0]) == std::vector<float>{3.5f});
  // Weights [1, 1, 2]: losses 6 and 4, mean = 10 / 3.
  NodeSpec weighted{"NegativeLogLikelihoodLoss", 13, {input, target, f32({3}, {1, 1, 2})}};
  CHECK(values_of<float>(run_ok(weighted)[0])[0] == Approx(10.0f / 3));
  weighted.attributes["reduction"] = Attribute::of_string("sum");
  CHECK(values_of<float>(run_ok(weighted)[0]) == std::vector<float>{10});
  // ignore_index 0 drops the second sample from the mean.
  NodeSpec ignored{"NegativeLogLikelihoodLoss", 13, {input, target}};
  ignored.attributes["ignore_index"] = Attribute::of_int(0);
  CHECK(values_of<float>(run_ok(ignored)[0]) == std::vector<float>{3});
  // A target outside [0, C) is refused before any read.
  NodeSpec bad{"NegativeLogLikelihoodLoss", 13, {input, i64({2}, {3, 0})}};
  auto refused = run_node(bad);
  REQUIRE_FALSE(refused.has_value());
  CHECK_THAT(refused.status().message(), Catch::Contains("target[0] = 3"));
}

TEST_CASE("NegativeLogLikelihoodLoss over extra dims", "[interp][loss]") {
  // input [1, 2, 2]: classes along dim 1, positions d = 0, 1.
  NodeSpec s{"NegativeLogLikelihoodLoss", 13, {f32({1, 2, 2}, {-1, -2, -3, -4}), i64({1, 2}, {1, 0})}};
  s.attributes["reduction"] = Attribute::of_string("none");
  auto y = run_ok(s)[0];
  CHECK(y.shape() == Dims{1, 2});
  CHECK(values_of<float>(y) == std::vector<float>{3, 2});
}

TEST_CASE("SoftmaxCrossEntropyLoss and its log_prob output", "[interp][loss]") {
  // Equal scores: log_prob = ln(1/2) everywhere; loss = ln 2 per sample.
  NodeSpec s{"SoftmaxCrossEntropyLoss", 13, {f32({2, 2}, {5, 5, 1, 1}), i64({2}, {0, 1})}};
  s.num_outputs = 2;
  auto out = run_ok(s);
  CHECK(out[0].shape() == Dims{});
  CHECK(values_of<float>(out[0])[0] == Approx(std::log(2.0f)));
  CHECK(out[1].shape() == Dims{2, 2});
  for (float v : values_of<float>(out[1])) CHECK(v == Approx(-std::log(2.0f)));
  s.attributes["reduction"] = Attribute::of_string("average");
  REQUIRE_FALSE(run_node(s).has_value());
}
