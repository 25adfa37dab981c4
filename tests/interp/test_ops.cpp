// Each interpreter op through a one-node graph against hand-computed values:
// attribute parsing and opset differences, on top of the kernel tests.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/interp/single_node.h"

using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::NodeSpec;
using quant::testing::run_node;
using quant::testing::values_of;

namespace {

Tensor f32(quant::Dims shape, std::vector<float> v) { return Tensor::from_vector<float>(std::move(shape), v); }
Tensor i64(quant::Dims shape, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(shape), v); }

std::vector<float> run_f32(const NodeSpec& spec) {
  auto out = run_node(spec);
  INFO(out.status().message());
  REQUIRE(out.has_value());
  return values_of<float>((*out)[0]);
}

}  // namespace

TEST_CASE("Conv with pads, stride and bias", "[interp][conv]") {
  // x = 1..9 in 3x3, w = all ones 2x2, pads 0, stride 1 -> sums of 2x2 windows + bias 1.
  NodeSpec s{"Conv", 13, {f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), f32({1, 1, 2, 2}, {1, 1, 1, 1}), f32({1}, {1})}};
  CHECK(run_f32(s) == std::vector<float>{13, 17, 25, 29});
  s.attributes["strides"] = Attribute::of_ints({2, 2});
  s.attributes["pads"] = Attribute::of_ints({1, 1, 0, 0});
  // Padded 4x4 (top/left zero row/col), stride 2: windows at (0,0) and (0,2), (2,0), (2,2).
  CHECK(run_f32(s) == std::vector<float>{2, 6, 12, 29});
}

TEST_CASE("Conv auto_pad SAME_UPPER keeps the spatial size", "[interp][conv]") {
  NodeSpec s{"Conv", 13, {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 2, 2}, {1, 1, 1, 1})}};
  s.attributes["auto_pad"] = Attribute::of_string("SAME_UPPER");
  auto out = run_node(s);
  REQUIRE(out.has_value());
  CHECK((*out)[0].shape() == quant::Dims{1, 1, 2, 2});
  CHECK(values_of<float>((*out)[0]) == std::vector<float>{10, 6, 7, 4});
}

TEST_CASE("Conv rejects mismatched channels with a message", "[interp][conv]") {
  NodeSpec s{"Conv", 13, {f32({1, 2, 3, 3}, std::vector<float>(18, 1)), f32({1, 1, 2, 2}, {1, 1, 1, 1})}};
  auto out = run_node(s);
  REQUIRE_FALSE(out.has_value());
  CHECK(out.status().code() == quant::StatusCode::kBadInput);
  CHECK_THAT(out.status().message(), Catch::Contains("Conv node 'node'"));
  CHECK_THAT(out.status().message(), Catch::Contains("channels"));
}

TEST_CASE("Gemm transB, alpha, beta and broadcast C", "[interp][gemm]") {
  NodeSpec s{"Gemm", 13, {f32({1, 2}, {1, 2}), f32({3, 2}, {1, 0, 0, 1, 1, 1}), f32({3}, {10, 20, 30})}};
  s.attributes["transB"] = Attribute::of_int(1);
  s.attributes["alpha"] = Attribute::of_float(2.0f);
  s.attributes["beta"] = Attribute::of_float(0.5f);
  CHECK(run_f32(s) == std::vector<float>{2 + 5, 4 + 10, 6 + 15});
}

TEST_CASE("MatMul batched with broadcasting", "[interp][matmul]") {
  NodeSpec s{"MatMul", 13, {f32({2, 1, 2}, {1, 2, 3, 4}), f32({2, 1}, {1, 1})}};
  auto out = run_node(s);
  REQUIRE(out.has_value());
  CHECK((*out)[0].shape() == quant::Dims{2, 1, 1});
  CHECK(values_of<float>((*out)[0]) == std::vector<float>{3, 7});
}

TEST_CASE("Add, Sub, Mul, Div broadcast", "[interp][elementwise]") {
  Tensor a = f32({2, 1}, {1, 2});
  Tensor b = f32({3}, {10, 20, 40});
  CHECK(run_f32({"Add", 13, {a, b}}) == std::vector<float>{11, 21, 41, 12, 22, 42});
  CHECK(run_f32({"Sub", 13, {a, b}}) == std::vector<float>{-9, -19, -39, -8, -18, -38});
  CHECK(run_f32({"Mul", 13, {a, b}}) == std::vector<float>{10, 20, 40, 20, 40, 80});
  CHECK(run_f32({"Div", 13, {b, a}}) == std::vector<float>{10, 20, 40, 5, 10, 20});
  auto bad = run_node({"Add", 13, {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}});
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.status().message(), Catch::Contains("do not broadcast"));
  auto ints = run_node({"Add", 13, {i64({2}, {1, 2}), i64({}, {5})}});
  REQUIRE(ints.has_value());
  CHECK(values_of<int64_t>((*ints)[0]) == std::vector<int64_t>{6, 7});
}

TEST_CASE("Relu, Sigmoid and Clip in both opset forms", "[interp][elementwise]") {
  Tensor x = f32({4}, {-2, -0.5f, 0.5f, 3});
  CHECK(run_f32({"Relu", 13, {x}}) == std::vector<float>{0, 0, 0.5f, 3});
  auto sig = run_f32({"Sigmoid", 13, {f32({1}, {0})}});
  CHECK(sig[0] == Approx(0.5f));
  NodeSpec clip6{"Clip", 6, {x}};
  clip6.attributes["min"] = Attribute::of_float(-1);
  clip6.attributes["max"] = Attribute::of_float(1);
  CHECK(run_f32(clip6) == std::vector<float>{-1, -0.5f, 0.5f, 1});
  NodeSpec clip13{"Clip", 13, {x, Tensor::scalar<float>(0.0f), Tensor::scalar<float>(2.0f)}};
  CHECK(run_f32(clip13) == std::vector<float>{0, 0, 0.5f, 2});
  NodeSpec clip_max_only{"Clip", 13, {x, Tensor(), Tensor::scalar<float>(0.0f)}};
  CHECK(run_f32(clip_max_only) == std::vector<float>{-2, -0.5f, 0, 0});
}

TEST_CASE("MaxPool, AveragePool and GlobalAveragePool", "[interp][pool]") {
  Tensor x = f32({1, 1, 2, 3}, {1, 5, 2, 4, 3, 6});
  NodeSpec mp{"MaxPool", 13, {x}};
  mp.attributes["kernel_shape"] = Attribute::of_ints({2, 2});
  CHECK(run_f32(mp) == std::vector<float>{5, 6});
  NodeSpec ap{"AveragePool", 13, {x}};
  ap.attributes["kernel_shape"] = Attribute::of_ints({1, 2});
  ap.attributes["strides"] = Attribute::of_ints({1, 2});
  ap.attributes["pads"] = Attribute::of_ints({0, 0, 0, 1});
  // Windows [1,5], [2,pad] -> 3, 2 (pad not counted); [4,3], [6,pad] -> 3.5, 6.
  CHECK(run_f32(ap) == std::vector<float>{3, 2, 3.5f, 6});
  ap.attributes["count_include_pad"] = Attribute::of_int(1);
  CHECK(run_f32(ap) == std::vector<float>{3, 1, 3.5f, 3});
  auto gap = run_node({"GlobalAveragePool", 13, {x}});
  REQUIRE(gap.has_value());
  CHECK((*gap)[0].shape() == quant::Dims{1, 1, 1, 1});
  CHECK(values_of<float>((*gap)[0])[0] == Approx(3.5f));
}

TEST_CASE("BatchNormalization inference", "[interp][norm]") {
  NodeSpec s{"BatchNormalization", 15,
             {f32({1, 2, 1, 1}, {1, 2}), f32({2}, {2, 1}), f32({2}, {0, 1}), f32({2}, {1, 0}), f32({2}, {4, 1})}};
  s.attributes["epsilon"] = Attribute::of_float(0);
  // c0: 2*(1-1)/2 + 0 = 0; c1: 1*(2-0)/1 + 1 = 3.
  CHECK(run_f32(s) == std::vector<float>{0, 3});
}

TEST_CASE("Softmax coerces to 2-D before opset 13 and uses one axis after", "[interp][norm]") {
  Tensor x = f32({1, 2, 2}, {0, 0, 0, 0});
  NodeSpec s11{"Softmax", 11, {x}};  // default axis 1 -> rows of 4
  for (float v : run_f32(s11)) CHECK(v == Approx(0.25f));
  NodeSpec s13{"Softmax", 13, {x}};  // default axis -1 -> rows of 2
  for (float v : run_f32(s13)) CHECK(v == Approx(0.5f));
  NodeSpec s13a{"Softmax", 13, {x}};
  s13a.attributes["axis"] = Attribute::of_int(1);
  for (float v : run_f32(s13a)) CHECK(v == Approx(0.5f));
}

TEST_CASE("Reshape with 0 and -1, Flatten, Transpose, Concat", "[interp][shape]") {
  Tensor x = f32({2, 3, 4}, std::vector<float>(24, 1));
  auto r = run_node({"Reshape", 13, {x, i64({2}, {0, -1})}});
  REQUIRE(r.has_value());
  CHECK((*r)[0].shape() == quant::Dims{2, 12});
  auto bad = run_node({"Reshape", 13, {x, i64({2}, {5, -1})}});
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.status().message(), Catch::Contains("cannot reshape"));

  NodeSpec fl{"Flatten", 13, {x}};
  fl.attributes["axis"] = Attribute::of_int(-1);
  auto f = run_node(fl);
  REQUIRE(f.has_value());
  CHECK((*f)[0].shape() == quant::Dims{6, 4});

  NodeSpec tr{"Transpose", 13, {f32({2, 3}, {1, 2, 3, 4, 5, 6})}};
  CHECK(run_f32(tr) == std::vector<float>{1, 4, 2, 5, 3, 6});

  NodeSpec cc{"Concat", 13, {f32({1, 2}, {1, 2}), f32({1, 1}, {3})}};
  cc.attributes["axis"] = Attribute::of_int(-1);
  CHECK(run_f32(cc) == std::vector<float>{1, 2, 3});
}

TEST_CASE("Identity and Constant", "[interp][shape]") {
  CHECK(run_f32({"Identity", 13, {f32({2}, {1, 2})}}) == std::vector<float>{1, 2});
  NodeSpec c{"Constant", 13, {}};
  c.attributes["value"] = Attribute::of_tensor(f32({2}, {7, 8}));
  CHECK(run_f32(c) == std::vector<float>{7, 8});
  NodeSpec ci{"Constant", 13, {}};
  ci.attributes["value_ints"] = Attribute::of_ints({4, 5});
  auto out = run_node(ci);
  REQUIRE(out.has_value());
  CHECK(values_of<int64_t>((*out)[0]) == std::vector<int64_t>{4, 5});
}

TEST_CASE("QuantizeLinear and DequantizeLinear per tensor and per axis", "[interp][quant]") {
  Tensor x = f32({2, 2}, {-1.0f, 0.25f, 0.5f, 100.0f});
  auto q = run_node({"QuantizeLinear", 13, {x, Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(128)}});
  REQUIRE(q.has_value());
  CHECK((*q)[0].dtype() == DType::UInt8);
  // -1/0.5=-2 -> 126; 0.25/0.5=0.5 -> round half even 0 -> 128; 1 -> 129; 200 -> saturate 255.
  CHECK(values_of<uint8_t>((*q)[0]) == std::vector<uint8_t>{126, 128, 129, 255});
  auto dq = run_node({"DequantizeLinear", 13, {(*q)[0], Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(128)}});
  REQUIRE(dq.has_value());
  CHECK(values_of<float>((*dq)[0]) == std::vector<float>{-1.0f, 0.0f, 0.5f, 63.5f});

  NodeSpec per_axis{"QuantizeLinear", 13,
                    {x, f32({2}, {1.0f, 0.25f}), Tensor::from_vector<int8_t>({2}, {0, 0})}};
  per_axis.attributes["axis"] = Attribute::of_int(0);
  auto qa = run_node(per_axis);
  REQUIRE(qa.has_value());
  CHECK(values_of<int8_t>((*qa)[0]) == std::vector<int8_t>{-1, 0, 2, 127});
  NodeSpec wrong{"QuantizeLinear", 13, {x, f32({3}, {1, 1, 1}), Tensor::from_vector<int8_t>({3}, {0, 0, 0})}};
  wrong.attributes["axis"] = Attribute::of_int(0);
  auto w = run_node(wrong);
  REQUIRE_FALSE(w.has_value());
  CHECK_THAT(w.status().message(), Catch::Contains("per-axis scale"));
}

TEST_CASE("QuantizeLinear per tensor on threads gives the same bytes", "[interp][quant][threads]") {
  // 40000 values: pieces of 16384 on 2 and 3 threads, the last one short;
  // halves, ties and values past the range included.
  std::vector<float> v(40000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i % 1201) - 600) * 0.25f;
  NodeSpec spec{"QuantizeLinear", 13, {f32({4, 100, 100}, v), Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(100)}};
  auto one = run_node(spec);
  REQUIRE(one.has_value());
  for (int threads : {2, 3}) {
    spec.threads = threads;
    auto many = run_node(spec);
    REQUIRE(many.has_value());
    INFO("threads " << threads);
    CHECK(values_of<uint8_t>((*many)[0]) == values_of<uint8_t>((*one)[0]));
  }
  CHECK(values_of<uint8_t>((*one)[0])[0] == 0);    // -600 * 0.25 / 0.5 = -300 -> saturates
  CHECK(values_of<uint8_t>((*one)[0])[601] == 100);  // 1 * 0.25 / 0.5 = 0.5 -> ties to even 0
}

TEST_CASE("An unsupported operator is refused at prepare, naming node and opset", "[interp]") {
  auto out = run_node({"NoSuchOp", 13, {f32({1}, {1})}});
  REQUIRE_FALSE(out.has_value());
  CHECK_THAT(out.status().message(), Catch::Contains("NoSuchOp"));
  CHECK_THAT(out.status().message(), Catch::Contains("opset 13"));
}
