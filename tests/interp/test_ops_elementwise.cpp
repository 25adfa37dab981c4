// Element-wise ops through one-node graphs, against hand-computed values:
// every element-type path, attribute defaults and the opset differences.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "libquant/kernels/cast.h"
#include "libquant/kernels/elementwise.h"
#include "libquant/kernels/shape_util.h"
#include "tests/interp/single_node.h"

using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::NodeSpec;
using quant::testing::boolean;
using quant::testing::f32;
using quant::testing::run_error;
using quant::testing::run_one;
using quant::testing::tensor_of;
using quant::testing::values_of;

namespace {

Tensor half(quant::Dims shape, const std::vector<float>& v) {
  Tensor t(DType::Float16, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) t.data<uint16_t>()[i] = quant::kernels::float_to_half(v[i]);
  return t;
}
std::vector<float> half_values(const Tensor& t) {
  std::vector<float> out;
  for (uint16_t h : t.values<uint16_t>()) out.push_back(quant::kernels::half_to_float(h));
  return out;
}

}  // namespace

TEST_CASE("Add, Sub, Mul, Div on every integer width, float64 and float16", "[interp][elementwise]") {
  auto y8 = run_one({"Add", 14, {tensor_of<uint8_t>({3}, {250, 1, 2}), tensor_of<uint8_t>({}, {10})}});
  CHECK(y8.dtype() == DType::UInt8);
  CHECK(values_of<uint8_t>(y8) == std::vector<uint8_t>{4, 11, 12});  // wraps modulo 256
  auto s8 = run_one({"Sub", 14, {tensor_of<int8_t>({2}, {-128, 5}), tensor_of<int8_t>({2}, {1, 7})}});
  CHECK(values_of<int8_t>(s8) == std::vector<int8_t>{127, -2});
  auto m16 = run_one({"Mul", 14, {tensor_of<uint16_t>({2}, {300, 65535}), tensor_of<uint16_t>({2}, {300, 65535})}});
  CHECK(values_of<uint16_t>(m16) == std::vector<uint16_t>{uint16_t(90000 % 65536), 1});
  // Integer division truncates toward zero (ONNX Runtime), x / 0 is defined as 0.
  auto d32 = run_one({"Div", 14, {tensor_of<int32_t>({4}, {-7, 7, 9, 1}), tensor_of<int32_t>({4}, {2, -2, 0, 1})}});
  CHECK(values_of<int32_t>(d32) == std::vector<int32_t>{-3, -3, 0, 1});
  auto du64 = run_one({"Div", 14, {tensor_of<uint64_t>({2}, {10, ~0ull}), tensor_of<uint64_t>({1}, {~0ull})}});
  CHECK(values_of<uint64_t>(du64) == std::vector<uint64_t>{0, 1});
  auto dd = run_one({"Div", 14, {tensor_of<double>({2}, {1, -3}), tensor_of<double>({}, {4})}});
  CHECK(values_of<double>(dd) == std::vector<double>{0.25, -0.75});
  auto h = run_one({"Add", 14, {half({2}, {1.5f, -2.0f}), half({1}, {0.25f})}});
  CHECK(h.dtype() == DType::Float16);
  CHECK(half_values(h) == std::vector<float>{1.75f, -1.75f});
  CHECK_THAT(run_error({"Add", 14, {f32({1}, {1}), tensor_of<double>({1}, {1})}}), Catch::Contains("one element type"));
  CHECK_THAT(run_error({"Add", 14, {boolean({1}, {1}), boolean({1}, {1})}}), Catch::Contains("bool"));
}

TEST_CASE("Mod: integer sign rules, fmod, floats need fmod=1", "[interp][elementwise]") {
  Tensor a = tensor_of<int32_t>({4}, {-7, 7, -7, 7});
  Tensor b = tensor_of<int32_t>({4}, {3, -3, -3, 3});
  // fmod=0: the result has the divisor's sign (Python %).
  CHECK(values_of<int32_t>(run_one({"Mod", 13, {a, b}})) == std::vector<int32_t>{2, -2, -1, 1});
  NodeSpec f{"Mod", 13, {a, b}};
  f.attributes["fmod"] = Attribute::of_int(1);  // the dividend's sign (C fmod)
  CHECK(values_of<int32_t>(run_one(f)) == std::vector<int32_t>{-1, 1, -1, 1});
  CHECK(values_of<uint8_t>(run_one({"Mod", 13, {tensor_of<uint8_t>({2}, {200, 7}), tensor_of<uint8_t>({}, {6})}})) ==
        std::vector<uint8_t>{2, 1});
  NodeSpec ff{"Mod", 13, {f32({2}, {-5.5f, 5.5f}), f32({1}, {2})}};
  ff.attributes["fmod"] = Attribute::of_int(1);
  CHECK(values_of<float>(run_one(ff)) == std::vector<float>{-1.5f, 1.5f});
  CHECK_THAT(run_error({"Mod", 13, {f32({1}, {1}), f32({1}, {2})}}), Catch::Contains("fmod=1"));
}

TEST_CASE("Pow with mixed base and exponent types", "[interp][elementwise]") {
  CHECK(values_of<float>(run_one({"Pow", 15, {f32({3}, {2, 4, -2}), f32({3}, {3, 0.5f, 2})}})) ==
        std::vector<float>{8, 2, 4});
  auto fi = run_one({"Pow", 15, {f32({2}, {2, 3}), tensor_of<int64_t>({}, {2})}});
  CHECK(fi.dtype() == DType::Float32);
  CHECK(values_of<float>(fi) == std::vector<float>{4, 9});
  // Integer base keeps its type; a float exponent truncates the result.
  auto if_ = run_one({"Pow", 15, {tensor_of<int32_t>({2}, {2, 10}), f32({}, {0.5f})}});
  CHECK(if_.dtype() == DType::Int32);
  CHECK(values_of<int32_t>(if_) == std::vector<int32_t>{1, 3});
  // Integer ^ integer is exact past 2^53 (3^39), negative exponents truncate.
  auto ii = run_one({"Pow", 15, {tensor_of<int64_t>({4}, {3, -2, 2, 5}), tensor_of<int64_t>({4}, {39, 3, -1, 0})}});
  CHECK(values_of<int64_t>(ii) == std::vector<int64_t>{4052555153018976267LL, -8, 0, 1});
  CHECK_THAT(run_error({"Pow", 15, {tensor_of<uint8_t>({1}, {2}), tensor_of<uint8_t>({1}, {2})}}), Catch::Contains("base"));
}

TEST_CASE("BitShift and PRelu", "[interp][elementwise]") {
  NodeSpec l{"BitShift", 11, {tensor_of<uint8_t>({3}, {16, 4, 1}), tensor_of<uint8_t>({3}, {1, 6, 9})}};
  l.attributes["direction"] = Attribute::of_string("LEFT");
  CHECK(values_of<uint8_t>(run_one(l)) == std::vector<uint8_t>{32, 0, 0});  // 4<<6 = 256 -> 0; shift 9 -> 0
  NodeSpec r{"BitShift", 11, {tensor_of<uint64_t>({2}, {~0ull, 8}), tensor_of<uint64_t>({}, {3})}};
  r.attributes["direction"] = Attribute::of_string("RIGHT");
  CHECK(values_of<uint64_t>(run_one(r)) == std::vector<uint64_t>{~0ull >> 3, 1});
  NodeSpec bad{"BitShift", 11, {tensor_of<uint8_t>({1}, {1}), tensor_of<uint8_t>({1}, {1})}};
  CHECK_THAT(run_error(bad), Catch::Contains("direction"));

  // Slope [2,1] broadcasts onto X [2,2] (unidirectional).
  Tensor x = f32({2, 2}, {-1, 2, -3, 4});
  CHECK(values_of<float>(run_one({"PRelu", 16, {x, f32({2, 1}, {0.5f, 0.1f})}})) ==
        std::vector<float>{-0.5f, 2, -0.3f, 4});
  CHECK_THAT(run_error({"PRelu", 16, {f32({2}, {1, 2}), f32({2, 2}, {1, 1, 1, 1})}}),
             Catch::Contains("does not broadcast to X"));
  CHECK(values_of<int64_t>(run_one({"PRelu", 16, {tensor_of<int64_t>({2}, {-4, 4}), tensor_of<int64_t>({}, {3})}})) ==
        std::vector<int64_t>{-12, 4});
}

TEST_CASE("Min, Max, Sum, Mean are variadic with broadcasting", "[interp][elementwise]") {
  Tensor a = f32({2, 1}, {1, 6});
  Tensor b = f32({3}, {2, 5, 4});
  Tensor c = f32({}, {3});
  CHECK(values_of<float>(run_one({"Max", 13, {a, b, c}})) == std::vector<float>{3, 5, 4, 6, 6, 6});
  CHECK(values_of<float>(run_one({"Min", 13, {a, b, c}})) == std::vector<float>{1, 1, 1, 2, 3, 3});
  CHECK(values_of<float>(run_one({"Sum", 13, {a, b, c}})) == std::vector<float>{6, 9, 8, 11, 14, 13});
  CHECK(values_of<float>(run_one({"Mean", 13, {a, b, c}})) ==
        std::vector<float>{2, 3, 8.0f / 3, 11.0f / 3, 14.0f / 3, 13.0f / 3});
  auto one = run_one({"Max", 13, {a}});
  CHECK(one.shape() == quant::Dims{2, 1});
  CHECK(values_of<int8_t>(run_one({"Max", 13, {tensor_of<int8_t>({2}, {-5, 3}), tensor_of<int8_t>({2}, {-6, 4})}})) ==
        std::vector<int8_t>{-5, 4});
  CHECK(values_of<uint64_t>(run_one({"Min", 13, {tensor_of<uint64_t>({2}, {~0ull, 3}), tensor_of<uint64_t>({}, {7})}})) ==
        std::vector<uint64_t>{7, 3});
  auto nan = run_one({"Max", 13, {f32({2}, {std::nanf(""), 1}), f32({2}, {1, std::nanf("")})}});
  CHECK(std::isnan(values_of<float>(nan)[0]));
  CHECK(std::isnan(values_of<float>(nan)[1]));
  CHECK(half_values(run_one({"Min", 13, {half({2}, {0.5f, -1}), half({2}, {0.25f, 2})}})) ==
        std::vector<float>{0.25f, -1});
  CHECK_THAT(run_error({"Sum", 13, {tensor_of<int32_t>({1}, {1})}}), Catch::Contains("not supported"));
  CHECK_THAT(run_error({"Max", 13, {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}}), Catch::Contains("do not broadcast"));
}

TEST_CASE("Unary math on float, double and integers", "[interp][unary]") {
  Tensor x = f32({6}, {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f});
  CHECK(values_of<float>(run_one({"Round", 11, {x}})) == std::vector<float>{-2, -2, -0, 0, 2, 2});  // half to even
  CHECK(values_of<float>(run_one({"Floor", 13, {x}})) == std::vector<float>{-3, -2, -1, 0, 1, 2});
  CHECK(values_of<float>(run_one({"Ceil", 13, {x}})) == std::vector<float>{-2, -1, -0, 1, 2, 3});
  CHECK(values_of<float>(run_one({"Abs", 13, {x}})) == std::vector<float>{2.5f, 1.5f, 0.5f, 0.5f, 1.5f, 2.5f});
  CHECK(values_of<float>(run_one({"Neg", 13, {f32({2}, {1, -2})}})) == std::vector<float>{-1, 2});
  CHECK(values_of<float>(run_one({"Sign", 13, {f32({3}, {-3, 0, 0.1f})}})) == std::vector<float>{-1, 0, 1});
  CHECK(values_of<float>(run_one({"Sqrt", 13, {f32({2}, {4, 0.25f})}})) == std::vector<float>{2, 0.5f});
  CHECK(values_of<float>(run_one({"Reciprocal", 13, {f32({2}, {4, -0.5f})}})) == std::vector<float>{0.25f, -2});
  CHECK(values_of<double>(run_one({"Exp", 13, {tensor_of<double>({1}, {1})}}))[0] == Approx(std::exp(1.0)));
  CHECK(values_of<float>(run_one({"Log", 13, {f32({1}, {1})}}))[0] == 0.0f);
  CHECK(values_of<float>(run_one({"Tanh", 13, {f32({1}, {0.5f})}}))[0] == Approx(std::tanh(0.5f)));
  CHECK(values_of<float>(run_one({"Erf", 13, {f32({1}, {0.5f})}}))[0] == Approx(0.5204998778f));
  struct Case {
    const char* op;
    float in;
    double want;
  };
  for (const Case& c : {Case{"Sin", 0.5f, std::sin(0.5)}, Case{"Cos", 0.5f, std::cos(0.5)},
                        Case{"Tan", 0.5f, std::tan(0.5)}, Case{"Asin", 0.5f, std::asin(0.5)},
                        Case{"Acos", 0.5f, std::acos(0.5)}, Case{"Atan", 0.5f, std::atan(0.5)},
                        Case{"Sinh", 0.5f, std::sinh(0.5)}, Case{"Cosh", 0.5f, std::cosh(0.5)},
                        Case{"Asinh", 0.5f, std::asinh(0.5)}, Case{"Acosh", 1.5f, std::acosh(1.5)},
                        Case{"Atanh", 0.5f, std::atanh(0.5)}, Case{"Softplus", 0.5f, std::log1p(std::exp(0.5))},
                        Case{"Softsign", 0.5f, 0.5 / 1.5}, Case{"Sigmoid", 0.5f, 1 / (1 + std::exp(-0.5))}}) {
    INFO(c.op);
    CHECK(values_of<float>(run_one({c.op, 13, {f32({1}, {c.in})}}))[0] == Approx(c.want).epsilon(1e-6));
  }
  // Softplus neither overflows nor underflows at the ends.
  auto sp = values_of<float>(run_one({"Softplus", 1, {f32({2}, {100, -100})}}));
  CHECK(sp[0] == 100.0f);
  CHECK(sp[1] > 0.0f);  // e^-100, a float subnormal
  CHECK(sp[1] < 1e-40f);
  // Integer paths: Abs/Neg wrap on the most negative value; Sign; Relu (opset 14).
  CHECK(values_of<int8_t>(run_one({"Abs", 13, {tensor_of<int8_t>({3}, {-128, -3, 3})}})) ==
        std::vector<int8_t>{-128, 3, 3});
  CHECK(values_of<int32_t>(run_one({"Neg", 13, {tensor_of<int32_t>({2}, {5, -6})}})) == std::vector<int32_t>{-5, 6});
  CHECK(values_of<uint16_t>(run_one({"Sign", 13, {tensor_of<uint16_t>({2}, {0, 9})}})) == std::vector<uint16_t>{0, 1});
  CHECK(values_of<int64_t>(run_one({"Relu", 14, {tensor_of<int64_t>({2}, {-5, 6})}})) == std::vector<int64_t>{0, 6});
  CHECK_THAT(run_error({"Neg", 13, {tensor_of<uint8_t>({1}, {1})}}), Catch::Contains("uint8"));
  CHECK_THAT(run_error({"Sqrt", 13, {tensor_of<int32_t>({1}, {4})}}), Catch::Contains("not supported"));
  // float16 computes in float32 and rounds back.
  CHECK(half_values(run_one({"Sqrt", 13, {half({2}, {4, 2.25f})}})) == std::vector<float>{2, 1.5f});
}

TEST_CASE("Activations read their attributes and defaults", "[interp][unary]") {
  Tensor x = f32({4}, {-2, -0.5f, 0.5f, 2});
  auto run = [&](const char* op, int64_t opset, std::map<std::string, Attribute> attrs) {
    NodeSpec s{op, opset, {x}};
    s.attributes = std::move(attrs);
    return values_of<float>(run_one(s));
  };
  CHECK(run("LeakyRelu", 16, {}) == std::vector<float>{-0.02f, -0.005f, 0.5f, 2});
  CHECK(run("LeakyRelu", 16, {{"alpha", Attribute::of_float(0.5f)}}) == std::vector<float>{-1, -0.25f, 0.5f, 2});
  auto elu = run("Elu", 6, {{"alpha", Attribute::of_float(2)}});
  CHECK(elu[0] == Approx(2 * std::expm1(-2.0)));
  CHECK(elu[3] == 2);
  auto selu = run("Selu", 6, {});
  CHECK(selu[0] == Approx(1.0507009873554805 * 1.6732632423543772 * std::expm1(-2.0)));
  CHECK(selu[3] == Approx(1.0507009873554805 * 2));
  auto celu = run("Celu", 12, {{"alpha", Attribute::of_float(2)}});
  CHECK(celu[0] == Approx(2 * std::expm1(-1.0)));
  CHECK(celu[2] == 0.5f);
  CHECK(run("ThresholdedRelu", 10, {}) == std::vector<float>{0, 0, 0, 2});
  CHECK(run("ThresholdedRelu", 10, {{"alpha", Attribute::of_float(0.25f)}}) == std::vector<float>{0, 0, 0.5f, 2});
  auto hs = run("HardSigmoid", 6, {});
  CHECK(hs[0] == Approx(0.1f));
  CHECK(hs[3] == Approx(0.9f));
  auto hs2 = run("HardSigmoid", 6, {{"alpha", Attribute::of_float(1)}, {"beta", Attribute::of_float(0)}});
  CHECK(hs2 == std::vector<float>{0, 0, 0.5f, 1});
  auto hw = run("HardSwish", 14, {});
  CHECK(hw[0] == Approx(-2 * (0.5 - 2.0 / 6)));
  CHECK(hw[3] == Approx(2 * (0.5 + 2.0 / 6)));
  auto mish = run("Mish", 18, {});
  CHECK(mish[3] == Approx(2 * std::tanh(std::log1p(std::exp(2.0)))));
}

TEST_CASE("Gelu in both approximate modes", "[interp][unary]") {
  Tensor x = f32({3}, {-1, 0.5f, 3});
  NodeSpec exact{"Gelu", 20, {x}};
  auto e = values_of<float>(run_one(exact));
  auto gelu = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
  CHECK(e[0] == Approx(gelu(-1)).epsilon(1e-6));  // -0.158655
  CHECK(e[1] == Approx(0.345731).epsilon(1e-5));
  CHECK(e[2] == Approx(gelu(3)).epsilon(1e-6));
  NodeSpec tanh_mode{"Gelu", 20, {x}};
  tanh_mode.attributes["approximate"] = Attribute::of_string("tanh");
  auto t = values_of<float>(run_one(tanh_mode));
  auto gelu_tanh = [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  };
  CHECK(t[0] == Approx(gelu_tanh(-1)).epsilon(1e-6));  // -0.158808, differs from the erf form
  CHECK(t[0] != Approx(e[0]).epsilon(1e-5));
  CHECK(t[1] == Approx(gelu_tanh(0.5)).epsilon(1e-6));
  NodeSpec bad{"Gelu", 20, {x}};
  bad.attributes["approximate"] = Attribute::of_string("fast");
  CHECK_THAT(run_error(bad), Catch::Contains("approximate"));
}

TEST_CASE("Clip on integers and doubles, bounds as attributes or inputs", "[interp][unary]") {
  Tensor x = tensor_of<int8_t>({4}, {-128, -5, 5, 127});
  CHECK(values_of<int8_t>(run_one({"Clip", 13, {x, tensor_of<int8_t>({}, {-10}), tensor_of<int8_t>({}, {10})}})) ==
        std::vector<int8_t>{-10, -5, 5, 10});
  CHECK(values_of<int8_t>(run_one({"Clip", 13, {x, Tensor(), tensor_of<int8_t>({}, {0})}})) ==
        std::vector<int8_t>{-128, -5, 0, 0});
  CHECK(values_of<int8_t>(run_one({"Clip", 13, {x}})) == std::vector<int8_t>{-128, -5, 5, 127});
  Tensor d = tensor_of<double>({2}, {-1e300, 1e300});
  CHECK(values_of<double>(run_one({"Clip", 13, {d}})) == std::vector<double>{-1e300, 1e300});
  NodeSpec c6{"Clip", 6, {d}};
  c6.attributes["max"] = Attribute::of_float(2);
  CHECK(values_of<double>(run_one(c6)) == std::vector<double>{-1e300, 2});
  CHECK_THAT(run_error({"Clip", 13, {x, tensor_of<int32_t>({}, {0})}}), Catch::Contains("min must be int8"));
  CHECK_THAT(run_error({"Clip", 11, {x}}), Catch::Contains("int8"));  // integers from opset 12
  CHECK_THAT(run_error({"Clip", 13, {f32({1}, {0}), f32({2}, {0, 1})}}), Catch::Contains("scalar"));
}

TEST_CASE("IsNaN, IsInf with detect flags, Not", "[interp][unary]") {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = f32({4}, {-inf, std::nanf(""), 1, inf});
  auto nan = run_one({"IsNaN", 13, {x}});
  CHECK(nan.dtype() == DType::Bool);
  CHECK(values_of<uint8_t>(nan) == std::vector<uint8_t>{0, 1, 0, 0});
  CHECK(values_of<uint8_t>(run_one({"IsInf", 10, {x}})) == std::vector<uint8_t>{1, 0, 0, 1});
  NodeSpec pos{"IsInf", 10, {tensor_of<double>({2}, {-1.0 / 0.0, 1.0 / 0.0})}};
  pos.attributes["detect_negative"] = Attribute::of_int(0);
  CHECK(values_of<uint8_t>(run_one(pos)) == std::vector<uint8_t>{0, 1});
  NodeSpec neg{"IsInf", 10, {x}};
  neg.attributes["detect_positive"] = Attribute::of_int(0);
  CHECK(values_of<uint8_t>(run_one(neg)) == std::vector<uint8_t>{1, 0, 0, 0});
  CHECK(values_of<uint8_t>(run_one({"Not", 1, {boolean({3}, {1, 0, 1})}})) == std::vector<uint8_t>{0, 1, 0});
  CHECK_THAT(run_error({"Not", 1, {f32({1}, {1})}}), Catch::Contains("bool"));
}

TEST_CASE("And, Or, Xor and comparisons broadcast to bool", "[interp][logic]") {
  Tensor a = boolean({2, 1}, {1, 0});
  Tensor b = boolean({2}, {1, 0});
  CHECK(values_of<uint8_t>(run_one({"And", 7, {a, b}})) == std::vector<uint8_t>{1, 0, 0, 0});
  CHECK(values_of<uint8_t>(run_one({"Or", 7, {a, b}})) == std::vector<uint8_t>{1, 1, 1, 0});
  CHECK(values_of<uint8_t>(run_one({"Xor", 7, {a, b}})) == std::vector<uint8_t>{0, 1, 1, 0});
  CHECK_THAT(run_error({"And", 7, {a, tensor_of<uint8_t>({1}, {1})}}), Catch::Contains("bool"));

  Tensor x = tensor_of<int32_t>({3}, {1, 2, 3});
  Tensor y = tensor_of<int32_t>({}, {2});
  auto eq = run_one({"Equal", 13, {x, y}});
  CHECK(eq.dtype() == DType::Bool);
  CHECK(values_of<uint8_t>(eq) == std::vector<uint8_t>{0, 1, 0});
  CHECK(values_of<uint8_t>(run_one({"Less", 13, {x, y}})) == std::vector<uint8_t>{1, 0, 0});
  CHECK(values_of<uint8_t>(run_one({"Greater", 13, {x, y}})) == std::vector<uint8_t>{0, 0, 1});
  CHECK(values_of<uint8_t>(run_one({"LessOrEqual", 16, {x, y}})) == std::vector<uint8_t>{1, 1, 0});
  CHECK(values_of<uint8_t>(run_one({"GreaterOrEqual", 16, {x, y}})) == std::vector<uint8_t>{0, 1, 1});
  // NaN compares false, and unequal.
  Tensor f = f32({2}, {std::nanf(""), 1});
  CHECK(values_of<uint8_t>(run_one({"Equal", 13, {f, f}})) == std::vector<uint8_t>{0, 1});
  CHECK(values_of<uint8_t>(run_one({"Equal", 13, {boolean({2}, {1, 0}), boolean({}, {0})}})) ==
        std::vector<uint8_t>{0, 1});
  CHECK(values_of<uint8_t>(run_one({"Less", 13, {tensor_of<uint64_t>({2}, {~0ull, 1}), tensor_of<uint64_t>({}, {2})}})) ==
        std::vector<uint8_t>{0, 1});
  CHECK(values_of<uint8_t>(run_one({"Greater", 13, {half({2}, {0.5f, -1}), half({}, {0})}})) ==
        std::vector<uint8_t>{1, 0});
  CHECK_THAT(run_error({"Less", 13, {x, f32({1}, {1})}}), Catch::Contains("one element type"));
}

TEST_CASE("Where broadcasts three ways for any element type", "[interp][logic]") {
  Tensor cond = boolean({2, 1}, {1, 0});
  auto y = run_one({"Where", 16, {cond, tensor_of<int64_t>({3}, {1, 2, 3}), tensor_of<int64_t>({}, {-1})}});
  CHECK(y.shape() == quant::Dims{2, 3});
  CHECK(values_of<int64_t>(y) == std::vector<int64_t>{1, 2, 3, -1, -1, -1});
  auto b = run_one({"Where", 16, {boolean({2}, {0, 1}), boolean({2}, {1, 1}), boolean({2}, {0, 0})}});
  CHECK(b.dtype() == DType::Bool);
  CHECK(values_of<uint8_t>(b) == std::vector<uint8_t>{0, 1});
  auto h = run_one({"Where", 16, {boolean({2}, {1, 0}), half({2}, {1, 2}), half({2}, {3, 4})}});
  CHECK(half_values(h) == std::vector<float>{1, 4});
  CHECK_THAT(run_error({"Where", 16, {f32({1}, {1}), f32({1}, {1}), f32({1}, {1})}}), Catch::Contains("condition"));
  CHECK_THAT(run_error({"Where", 16, {cond, f32({1}, {1}), tensor_of<double>({1}, {1})}}),
             Catch::Contains("one element type"));
}

TEST_CASE("Cast and CastLike between numbers, bool, float16 and bfloat16", "[interp][cast]") {
  auto cast = [](Tensor x, DType to) {
    NodeSpec s{"Cast", 13, {std::move(x)}};
    s.attributes["to"] = Attribute::of_int(static_cast<int64_t>(to));
    return run_one(s);
  };
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = f32({7}, {-2.7f, -0.5f, 0.9f, 300.5f, -1e10f, std::nanf(""), inf});
  // Truncation toward zero, saturation beyond the range, NaN -> 0.
  CHECK(values_of<int8_t>(cast(x, DType::Int8)) == std::vector<int8_t>{-2, 0, 0, 127, -128, 0, 127});
  CHECK(values_of<uint8_t>(cast(x, DType::UInt8)) == std::vector<uint8_t>{0, 0, 0, 255, 0, 0, 255});
  CHECK(values_of<int32_t>(cast(x, DType::Int32)) == std::vector<int32_t>{-2, 0, 0, 300,
                                                                          std::numeric_limits<int32_t>::min(), 0,
                                                                          std::numeric_limits<int32_t>::max()});
  CHECK(values_of<int64_t>(cast(f32({1}, {9.3e18f}), DType::Int64))[0] == std::numeric_limits<int64_t>::max());
  // Anything to bool is != 0 (NaN is true); bool to numbers is 0/1.
  CHECK(values_of<uint8_t>(cast(x, DType::Bool)) == std::vector<uint8_t>{1, 1, 1, 1, 1, 1, 1});
  CHECK(values_of<uint8_t>(cast(f32({2}, {0, -0.0f}), DType::Bool)) == std::vector<uint8_t>{0, 0});
  CHECK(values_of<double>(cast(boolean({2}, {1, 0}), DType::Float64)) == std::vector<double>{1, 0});
  // Integer narrowing wraps (two's complement), widening sign-extends.
  CHECK(values_of<int8_t>(cast(tensor_of<int32_t>({2}, {300, -129}), DType::Int8)) == std::vector<int8_t>{44, 127});
  CHECK(values_of<uint64_t>(cast(tensor_of<int8_t>({1}, {-1}), DType::UInt64))[0] == ~0ull);
  CHECK(values_of<float>(cast(tensor_of<int64_t>({1}, {16777217}), DType::Float32))[0] == 16777216.0f);
  // float16: round to nearest even, overflow to inf, subnormals kept.
  auto h = cast(tensor_of<double>({5}, {1.0 + 1.0 / 2048, 1.0 + 3.0 / 2048, 65520.0, 6e-8, -2.0}), DType::Float16);
  CHECK(std::vector<uint16_t>(h.values<uint16_t>().begin(), h.values<uint16_t>().end()) ==
        std::vector<uint16_t>{0x3C00, 0x3C02, 0x7C00, 0x0001, 0xC000});
  CHECK(values_of<float>(cast(h, DType::Float32))[4] == -2.0f);
  // bfloat16 keeps the upper half of the float (truncation, see kernels/cast.h).
  auto bf = cast(f32({2}, {0.48033667f, -1.0f}), DType::BFloat16);
  CHECK(bf.values<uint16_t>()[0] == 0x3EF5);
  CHECK(bf.values<uint16_t>()[1] == 0xBF80);
  CHECK(values_of<float>(cast(bf, DType::Float32))[1] == -1.0f);

  auto like = run_one({"CastLike", 15, {tensor_of<int32_t>({2}, {1, -2}), tensor_of<double>({}, {0})}});
  CHECK(like.dtype() == DType::Float64);
  CHECK(values_of<double>(like) == std::vector<double>{1, -2});

  NodeSpec to_string{"Cast", 13, {x}};  // strings: tests/interp/test_ops_sequence.cpp
  to_string.attributes["to"] = Attribute::of_int(8);
  CHECK(run_one(to_string).dtype() == DType::String);
  NodeSpec to_float8{"Cast", 13, {x}};
  to_float8.attributes["to"] = Attribute::of_int(17);
  CHECK_THAT(run_error(to_float8), Catch::Contains("17"));
  NodeSpec no_to{"Cast", 13, {x}};
  CHECK_THAT(run_error(no_to), Catch::Contains("'to'"));
}

TEST_CASE("Opset < 7 broadcast/axis attributes and per-channel PRelu slopes", "[interp][elementwise]") {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  NodeSpec suffix{"Add", 6, {a, f32({3}, {10, 20, 30})}};
  suffix.attributes["broadcast"] = Attribute::of_int(1);
  CHECK(values_of<float>(run_one(suffix)) == std::vector<float>{11, 22, 33, 14, 25, 36});
  NodeSpec axis0{"Mul", 6, {a, f32({2}, {10, -1})}};
  axis0.attributes["broadcast"] = Attribute::of_int(1);
  axis0.attributes["axis"] = Attribute::of_int(0);
  CHECK(values_of<float>(run_one(axis0)) == std::vector<float>{10, 20, 30, -4, -5, -6});
  NodeSpec no_flag{"Sub", 6, {a, f32({3}, {1, 1, 1})}};
  CHECK_THAT(run_error(no_flag), Catch::Contains("without broadcast=1"));
  NodeSpec bad_axis{"Add", 6, {a, f32({3}, {1, 1, 1})}};
  bad_axis.attributes["broadcast"] = Attribute::of_int(1);
  bad_axis.attributes["axis"] = Attribute::of_int(0);
  CHECK_THAT(run_error(bad_axis), Catch::Contains("dims differ"));
  // Opset 7: numpy rules, the attributes are gone.
  CHECK(values_of<float>(run_one({"Add", 7, {a, f32({3}, {10, 20, 30})}})) ==
        std::vector<float>{11, 22, 33, 14, 25, 36});

  // PRelu opset 6: slope [C] applies along axis 1.
  Tensor x = f32({1, 2, 2}, {-1, -2, -3, 4});
  CHECK(values_of<float>(run_one({"PRelu", 6, {x, f32({2}, {0.5f, 2})}})) == std::vector<float>{-0.5f, -1, -6, 4});
  // Opset 9+: [2] aligns with the last dim instead.
  CHECK(values_of<float>(run_one({"PRelu", 9, {x, f32({2}, {0.5f, 2})}})) == std::vector<float>{-0.5f, -4, -1.5f, 4});
}

TEST_CASE("float Add, Sub, Mul and Div over broadcast runs give the broadcasting kernel's bits", "[interp][elementwise]") {
  // One layout, a value per row of either operand, shapes that broadcast in
  // the middle, runs longer than a thread's piece (kElementPiece) and runs
  // that pieces cut, on 1 and 3 threads.
  const std::vector<std::pair<quant::Dims, quant::Dims>> cases = {
      {{2, 3, 40, 50}, {2, 3, 40, 50}},  // SiLU's x * sigmoid(x)
      {{1, 6, 60, 70}, {6, 60, 70}},     // flat, ranks differ
      {{2, 3, 40, 50}, {2, 3, 1, 1}},    // squeeze and excitation
      {{1, 8, 30, 30}, {8, 1, 1}},
      {{2, 3, 1, 1}, {2, 3, 40, 50}},    // the rows in A
      {{2, 3, 5, 7}, {2, 3, 1, 1}},      // rows of 35: the vector loop's tails
      {{2, 3, 1, 1}, {2, 3, 5, 7}},
      {{5, 7, 300}, {}},                 // a scalar
      {{5, 7, 300}, {5, 7, 300}},
      {{2, 3, 4}, {1, 3, 1}},            // broadcast, not rows
      {{2, 3, 4}, {4}},
      {{3, 1}, {1, 4}},
      {{2, 3, 100, 100}, {3, 1, 1}},     // runs of 10000: pieces of 16384 start inside them
      {{1, 2, 200, 200}, {2, 1, 1}},     // runs of 40000, cut into pieces
      {{64, 700}, {700}},                // a bias row added to each of 64 rows
      {{}, {}}};
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  // NaNs of their own payload and sign (a's at elements 1 and 2, b's at 3
  // and 5, so that no output element has two: for Add and Mul of two NaNs
  // IEEE 754 returns either, and GCC orders the operands of a commutative
  // op as it likes, in the reference as in the vector code), infinities and
  // zeros (x / 0).
  auto random = [&](const quant::Dims& shape, int64_t nan0, int64_t nan1) {
    Tensor t(DType::Float32, shape);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.size(); ++i) p[i] = normal(rng);
    if (t.size() > 10) {
      const uint32_t payloads[] = {0x7fc00000u | static_cast<uint32_t>(rng() & 0xffffu),
                                   0xffc00000u | static_cast<uint32_t>(rng() & 0xffffu)};
      std::memcpy(&p[nan0], &payloads[0], sizeof(float));
      std::memcpy(&p[nan1], &payloads[1], sizeof(float));
      p[4] = INFINITY;
      p[7] = -INFINITY;
      p[9] = 0.0f;
    }
    return t;
  };
  const std::pair<const char*, quant::kernels::BinaryOp> ops[] = {{"Add", quant::kernels::BinaryOp::Add},
                                                                   {"Sub", quant::kernels::BinaryOp::Sub},
                                                                   {"Mul", quant::kernels::BinaryOp::Mul},
                                                                   {"Div", quant::kernels::BinaryOp::Div}};
  for (const auto& [sa, sb] : cases) {
    const Tensor a = random(sa, 1, 2), b = random(sb, 3, 5);
    const quant::Dims sy = *quant::kernels::broadcast_shapes(sa, sb);
    for (const auto& [name, op] : ops) {
      Tensor want(DType::Float32, sy);
      quant::kernels::binary_broadcast<float>(op, a.data<float>(), sa, b.data<float>(), sb, want.data<float>(), sy);
      for (int threads : {1, 3}) {
        NodeSpec spec{name, 14, {a, b}};
        spec.threads = threads;
        const Tensor y = run_one(spec);
        INFO(quant::dims_to_string(sa) << " " << name << " " << quant::dims_to_string(sb) << ", " << threads << " threads");
        REQUIRE(y.shape() == sy);
        CHECK(std::memcmp(y.data<float>(), want.data<float>(), static_cast<size_t>(y.size()) * sizeof(float)) == 0);
      }
    }
  }
}
