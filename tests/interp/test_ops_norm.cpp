// BatchNormalization, LayerNormalization, InstanceNormalization, LRN,
// MeanVarianceNormalization and Dropout through one-node graphs.
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
using quant::testing::f64;
using quant::testing::run_ok;
using quant::testing::values_of;

namespace {

Tensor bool_scalar(bool v) {
  Tensor t(DType::Bool, {});
  t.data<uint8_t>()[0] = v;
  return t;
}

}  // namespace

TEST_CASE("BatchNormalization on double and with spatial=0 (opset 7)", "[interp][norm]") {
  NodeSpec s{"BatchNormalization", 15,
             {f64({1, 2, 1, 1}, {1, 2}), f64({2}, {2, 1}), f64({2}, {0, 1}), f64({2}, {1, 0}), f64({2}, {4, 1})}};
  s.attributes["epsilon"] = Attribute::of_float(0);
  auto y = run_ok(s)[0];
  CHECK(y.dtype() == DType::Float64);
  CHECK(values_of<double>(y) == std::vector<double>{0, 3});
  // spatial=0: one parameter per (channel, position); x [1, 1, 2].
  NodeSpec p{"BatchNormalization", 7,
             {f32({1, 1, 2}, {3, 3}), f32({1, 2}, {1, 2}), f32({1, 2}, {0, 0}), f32({1, 2}, {1, 2}), f32({1, 2}, {1, 1})}};
  p.attributes["epsilon"] = Attribute::of_float(0);
  p.attributes["spatial"] = Attribute::of_int(0);
  CHECK(values_of<float>(run_ok(p)[0]) == std::vector<float>{2, 2});
}

TEST_CASE("BatchNormalization training_mode uses batch statistics (opset 15)", "[interp][norm]") {
  // x [2, 1]: batch mean 2, population variance 1.
  NodeSpec s{"BatchNormalization", 15,
             {f32({2, 1}, {1, 3}), f32({1}, {1}), f32({1}, {0}), f32({1}, {10}), f32({1}, {5})}};
  s.attributes["epsilon"] = Attribute::of_float(0);
  s.attributes["training_mode"] = Attribute::of_int(1);
  s.attributes["momentum"] = Attribute::of_float(0.5f);
  s.num_outputs = 3;
  auto out = run_ok(s);
  CHECK(values_of<float>(out[0]) == std::vector<float>{-1, 1});
  CHECK(values_of<float>(out[1]) == std::vector<float>{6});  // 10 * 0.5 + 2 * 0.5
  CHECK(values_of<float>(out[2]) == std::vector<float>{3});  // 5 * 0.5 + 1 * 0.5
  s.attributes["training_mode"] = Attribute::of_int(0);
  auto refused = run_node(s);
  REQUIRE_FALSE(refused.has_value());
  CHECK_THAT(refused.status().message(), Catch::Contains("training_mode=1"));
}

TEST_CASE("LayerNormalization with axis, bias and the Mean/InvStdDev outputs", "[interp][norm]") {
  // Rows [1, 3] and [2, 6]: means 2 and 4, variances 1 and 4.
  NodeSpec s{"LayerNormalization", 17, {f32({2, 2}, {1, 3, 2, 6}), f32({2}, {1, 2}), f32({2}, {0, 10})}};
  s.attributes["epsilon"] = Attribute::of_float(0);
  s.num_outputs = 3;
  auto out = run_ok(s);
  CHECK(values_of<float>(out[0]) == std::vector<float>{-1, 12, -1, 12});
  CHECK(out[1].shape() == Dims{2, 1});
  CHECK(values_of<float>(out[1]) == std::vector<float>{2, 4});
  CHECK(values_of<float>(out[2]) == std::vector<float>{1, 0.5f});
  // axis 0 normalizes all four values (mean 3, variance 3.5); a scalar-like
  // scale [1] broadcasts over the normalized shape; no bias.
  NodeSpec all{"LayerNormalization", 17, {f32({2, 2}, {1, 3, 2, 6}), f32({1}, {2})}};
  all.attributes["axis"] = Attribute::of_int(0);
  all.attributes["epsilon"] = Attribute::of_float(0);
  auto y = values_of<float>(run_ok(all)[0]);
  const float inv = 1.0f / std::sqrt(3.5f);
  CHECK(y[0] == Approx(2 * (1 - 3) * inv));
  CHECK(y[3] == Approx(2 * (6 - 3) * inv));
  NodeSpec bad{"LayerNormalization", 17, {f32({2, 2}, {1, 3, 2, 6}), f32({3}, {1, 1, 1})}};
  auto refused = run_node(bad);
  REQUIRE_FALSE(refused.has_value());
  CHECK_THAT(refused.status().message(), Catch::Contains("does not broadcast"));
}

TEST_CASE("InstanceNormalization per sample and channel", "[interp][norm]") {
  // x [1, 2, 2]: channel 0 = [1, 3] (mean 2, var 1), channel 1 = [5, 5] (var 0).
  NodeSpec s{"InstanceNormalization", 6, {f32({1, 2, 2}, {1, 3, 5, 5}), f32({2}, {2, 1}), f32({2}, {0, 7})}};
  s.attributes["epsilon"] = Attribute::of_float(0);
  auto y = values_of<float>(run_ok(s)[0]);
  CHECK(y[0] == Approx(-2));
  CHECK(y[1] == Approx(2));
  // 0 / sqrt(0) is NaN; with the default epsilon the channel maps to its bias.
  s.attributes.erase("epsilon");
  y = values_of<float>(run_ok(s)[0]);
  CHECK(y[2] == Approx(7));
  CHECK(y[3] == Approx(7));
}

TEST_CASE("LRN sums squares over neighbouring channels", "[interp][norm]") {
  // 3 channels, size 3: channel 0 sees channels 0-1, channel 1 sees 0-2.
  NodeSpec s{"LRN", 13, {f32({1, 3, 1, 1}, {1, 2, 3})}};
  s.attributes["size"] = Attribute::of_int(3);
  s.attributes["alpha"] = Attribute::of_float(3);
  s.attributes["beta"] = Attribute::of_float(1);
  s.attributes["bias"] = Attribute::of_float(1);
  auto y = values_of<float>(run_ok(s)[0]);
  CHECK(y[0] == Approx(1.0f / (1 + 1 * 5)));
  CHECK(y[1] == Approx(2.0f / (1 + 1 * 14)));
  CHECK(y[2] == Approx(3.0f / (1 + 1 * 13)));
  NodeSpec no_size{"LRN", 13, {f32({1, 3, 1, 1}, {1, 2, 3})}};
  REQUIRE_FALSE(run_node(no_size).has_value());
}

TEST_CASE("MeanVarianceNormalization over the given axes", "[interp][norm]") {
  NodeSpec s{"MeanVarianceNormalization", 13, {f32({2, 2}, {1, 3, 10, 20})}};
  s.attributes["axes"] = Attribute::of_ints({1});
  auto y = values_of<float>(run_ok(s)[0]);
  CHECK(y[0] == Approx(-1));
  CHECK(y[1] == Approx(1));
  CHECK(y[2] == Approx(-1));
  CHECK(y[3] == Approx(1));
}

TEST_CASE("Dropout is the identity in inference, with an all-true mask", "[interp][norm]") {
  Tensor x = f32({3}, {1, -2, 3});
  NodeSpec s{"Dropout", 13, {x, f32({}, {0.5f})}};
  s.num_outputs = 2;
  auto out = run_ok(s);
  CHECK(values_of<float>(out[0]) == std::vector<float>{1, -2, 3});
  CHECK(out[1].dtype() == DType::Bool);
  CHECK(values_of<uint8_t>(out[1]) == std::vector<uint8_t>{1, 1, 1});
  // Opset 7: the mask has the input's type.
  NodeSpec s7{"Dropout", 7, {x}};
  s7.num_outputs = 2;
  CHECK(run_ok(s7)[1].dtype() == DType::Float32);
}

TEST_CASE("Dropout in training mode keeps x / (1 - ratio) where the mask is true", "[interp][norm]") {
  std::vector<float> ones(1000, 1.0f);
  NodeSpec s{"Dropout", 13, {f32({1000}, ones), f32({}, {0.25f}), bool_scalar(true)}};
  s.num_outputs = 2;
  auto out = run_ok(s);
  auto y = values_of<float>(out[0]);
  auto mask = values_of<uint8_t>(out[1]);
  int kept = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    CHECK(y[i] == (mask[i] ? Approx(1 / 0.75f) : Approx(0)));
    kept += mask[i];
  }
  CHECK(kept > 650);  // ~750 expected
  CHECK(kept < 850);
  // Seeded: the same mask on every run.
  CHECK(values_of<uint8_t>(run_ok(s)[1]) == mask);
  s.inputs[1] = f32({}, {1.5f});
  REQUIRE_FALSE(run_node(s).has_value());
}
