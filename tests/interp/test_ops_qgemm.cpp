// com.microsoft QGemm against the formula of ONNX Runtime's kernel, computed
// naively here: acc = sum_k (A'[m][k] - za)(B'[k][n] - zb[n]) + C[m][n];
// integer output saturate(round_half_to_even(float(acc) * (alpha * sa * sb[n] / sy)) + zy),
// float output float(acc) * (alpha * sa * sb[n]); swept over transA/transB,
// per-tensor / per-column B, C shapes, signedness and both output kinds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <random>

#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"

using quant::DType;
using quant::Tensor;

namespace {

template <class T>
Tensor random_tensor(std::mt19937& rng, quant::Dims shape, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  Tensor t(quant::dtype_of<T>(), shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data<T>()[i] = static_cast<T>(d(rng));
  return t;
}

struct Case {
  bool trans_a, trans_b, per_column, float_out, signed_a;
  quant::Dims c_shape;  // empty: no C
  float alpha;
  // Compute as ONNX Runtime on x86 without VNNI (SessionOptions::dot): the
  // raw uint8 x int8 products summed in pairs (k, k + 1) saturating to int16
  // before the zero points apply; int8 A (QOperator, not from Q/DQ) is exact.
  bool saturating = false;
};

template <class TA>
void check(const Case& c, std::mt19937& rng) {
  const int64_t m = 3, k = 37, n = 5;
  const float sa = 0.02f, sy = 0.3f, alpha = c.alpha;
  const int za = std::is_signed_v<TA> ? -7 : 131, zy = 9;
  Tensor a = random_tensor<TA>(rng, c.trans_a ? quant::Dims{k, m} : quant::Dims{m, k}, std::is_signed_v<TA> ? -128 : 0,
                               std::is_signed_v<TA> ? 127 : 255);
  Tensor b = random_tensor<int8_t>(rng, c.trans_b ? quant::Dims{n, k} : quant::Dims{k, n}, -128, 127);
  std::vector<float> sb = c.per_column ? std::vector<float>{0.01f, 0.02f, 0.005f, 0.03f, 0.011f} : std::vector<float>{0.013f};
  std::vector<int8_t> zb = c.per_column ? std::vector<int8_t>{0, 1, -2, 3, 0} : std::vector<int8_t>{2};
  const quant::Dims pshape = c.per_column ? quant::Dims{n} : quant::Dims{};
  Tensor cten = c.c_shape.empty() ? Tensor() : random_tensor<int32_t>(rng, c.c_shape, -5000, 5000);

  quant::ir::Graph g;
  g.opset_imports[""] = 13;
  g.opset_imports["com.microsoft"] = 1;
  auto constant = [&](const std::string& name, Tensor t) {
    quant::ir::Value* v = g.add_value(name);
    v->dtype = t.dtype();
    v->constant = std::make_unique<Tensor>(std::move(t));
    return v;
  };
  quant::ir::Value* av = g.add_value("a");
  av->dtype = a.dtype();
  g.inputs = {av};
  std::vector<quant::ir::Value*> ins{av, constant("sa", Tensor::scalar<float>(sa)), constant("za", Tensor::scalar<TA>(static_cast<TA>(za))),
                                     constant("b", b), constant("sb", Tensor::from_vector<float>(pshape, sb)),
                                     constant("zb", Tensor::from_vector<int8_t>(pshape, zb)),
                                     c.c_shape.empty() ? nullptr : constant("c", cten)};
  if (!c.float_out) ins.insert(ins.end(), {constant("sy", Tensor::scalar<float>(sy)), constant("zy", Tensor::scalar<uint8_t>(zy))});
  quant::ir::Value* y = g.add_value("y");
  quant::ir::Node* node = g.add_node("QGemm", ins, {y}, "qgemm", "com.microsoft");
  node->attributes["transA"] = quant::ir::Attribute::of_int(c.trans_a);
  node->attributes["transB"] = quant::ir::Attribute::of_int(c.trans_b);
  node->attributes["alpha"] = quant::ir::Attribute::of_float(alpha);
  g.outputs = {y};
  quant::interp::SessionOptions options;
  if (c.saturating) options.dot = quant::kernels::DotArithmetic::U8S8PairsSaturateInt16;
  auto s = quant::interp::Session::create(g, options);
  REQUIRE(s.has_value());
  auto out = (*s)->run({a});
  REQUIRE(out.has_value());
  const Tensor& got = (*out)[0];
  REQUIRE(got.shape() == quant::Dims{m, n});
  REQUIRE(got.dtype() == (c.float_out ? DType::Float32 : DType::UInt8));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t acc = 0;
      const int64_t zbj = zb[c.per_column ? static_cast<size_t>(j) : 0];
      auto a_at = [&](int64_t kk) { return a.as_int64(c.trans_a ? kk * m + i : i * k + kk); };
      auto b_at = [&](int64_t kk) { return b.as_int64(c.trans_b ? j * k + kk : kk * n + j); };
      if (c.saturating && !std::is_signed_v<TA>) {
        int64_t row = 0, col = 0;
        for (int64_t kk = 0; kk < k; kk += 2) {
          int64_t pair = a_at(kk) * b_at(kk) + (kk + 1 < k ? a_at(kk + 1) * b_at(kk + 1) : 0);
          acc += std::clamp<int64_t>(pair, -32768, 32767);
        }
        for (int64_t kk = 0; kk < k; ++kk) row += a_at(kk), col += b_at(kk);
        acc += -zbj * row - za * col + k * za * zbj;
      } else {
        for (int64_t kk = 0; kk < k; ++kk) acc += (a_at(kk) - za) * (b_at(kk) - zbj);
      }
      if (!c.c_shape.empty()) {
        const quant::Dims& cs = c.c_shape;
        const int64_t rows = cs.size() == 2 ? cs[0] : 1, cols = cs.empty() ? 1 : cs.back();
        acc += cten.as_int64((rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j));
      }
      const float sbj = sb[c.per_column ? static_cast<size_t>(j) : 0];
      if (c.float_out) {
        CHECK(got.data<float>()[i * n + j] == static_cast<float>(acc) * (alpha * sa * sbj));
      } else {
        const float mult = alpha * sa * sbj / sy;
        const double q = std::nearbyint(static_cast<double>(static_cast<float>(acc) * mult)) + zy;
        CHECK(got.data<uint8_t>()[i * n + j] == static_cast<uint8_t>(std::clamp(q, 0.0, 255.0)));
      }
    }
}

}  // namespace

TEST_CASE("QGemm matches ONNX Runtime's formula", "[interp][qgemm]") {
  std::mt19937 rng(7);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool per_column : {false, true})
        for (bool float_out : {false, true})
          for (const quant::Dims& cs : {quant::Dims{}, quant::Dims{5}, quant::Dims{3, 1}, quant::Dims{3, 5}}) {
            Case c{ta, tb, per_column, float_out, false, cs, float_out ? 1.0f : 0.5f};
            check<uint8_t>(c, rng);
            check<int8_t>(c, rng);
          }
}

TEST_CASE("QGemm computes as ONNX Runtime without VNNI under a saturating target", "[interp][qgemm][sat16]") {
  std::mt19937 rng(9);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool float_out : {false, true}) {
        Case c{ta, tb, true, float_out, false, quant::Dims{5}, float_out ? 1.0f : 0.5f, true};
        check<uint8_t>(c, rng);
        check<int8_t>(c, rng);
      }
}
