#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>

#include "libquant/interp/compare.h"
#include "libquant/interp/session.h"

using quant::Tensor;

TEST_CASE("SNR, cosine and abs errors on known values", "[interp][compare]") {
  quant::interp::ErrorStats s;
  Tensor ref = Tensor::from_vector<float>({4}, {1, -1, 1, -1});
  Tensor tst = Tensor::from_vector<float>({4}, {1.1f, -0.9f, 1.1f, -0.9f});
  REQUIRE(s.add(ref, tst).is_ok());
  // signal 4, noise 4 * 0.01 -> 10 log10(100) = 20 dB.
  CHECK(s.snr_db() == Approx(20.0).epsilon(1e-4));
  CHECK(s.max_abs_error() == Approx(0.1).epsilon(1e-4));
  CHECK(s.mean_abs_error() == Approx(0.1).epsilon(1e-4));
  CHECK(s.cosine() < 1.0);
  CHECK(s.cosine() > 0.99);
  quant::interp::ErrorStats same;
  REQUIRE(same.add(ref, ref).is_ok());
  CHECK(std::isinf(same.snr_db()));
  CHECK(same.cosine() == Approx(1.0));
  CHECK_FALSE(s.add(ref, Tensor::from_vector<float>({2}, {1, 2})).is_ok());
}

TEST_CASE("argmax per row and top-k", "[interp][compare]") {
  Tensor scores = Tensor::from_vector<float>({2, 3}, {0.1f, 0.7f, 0.2f, 5, 5, 1});
  CHECK(quant::interp::argmax_rows(scores) == std::vector<int64_t>{1, 0});
  const float row[] = {0.1f, 0.7f, 0.2f};
  CHECK(quant::interp::in_top_k(row, 3, 2, 2));
  CHECK_FALSE(quant::interp::in_top_k(row, 3, 0, 2));
  CHECK_FALSE(quant::interp::in_top_k(row, 3, 7, 5));
}

TEST_CASE("A NaN or Inf in either tensor makes every metric NaN, so no gate passes", "[interp][compare]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor ref = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  // Sqrt of negative inputs against an Identity reference: every output NaN.
  for (const Tensor& tst : {Tensor::from_vector<float>({4}, {nan, nan, nan, nan}),
                            Tensor::from_vector<float>({4}, {1, 2, 3, inf}),
                            Tensor::from_vector<float>({4}, {1, 2, nan, 4})}) {
    quant::interp::ErrorStats s;
    REQUIRE(s.add(ref, tst).is_ok());
    CHECK(s.nonfinite() > 0);
    CHECK(std::isnan(s.snr_db()));
    CHECK(std::isnan(s.cosine()));
    CHECK(std::isnan(s.max_abs_error()));
    CHECK(std::isnan(s.mean_abs_error()));
    CHECK_FALSE(s.snr_db() >= 25);
    CHECK_FALSE(s.cosine() >= 0.99);
  }
  // A non-finite reference leaves the comparison undefined too, and one bad
  // sample spoils the totals of good ones added before or after it.
  quant::interp::ErrorStats s;
  REQUIRE(s.add(ref, ref).is_ok());
  CHECK(s.nonfinite() == 0);
  REQUIRE(s.add(Tensor::from_vector<float>({4}, {1, -inf, 3, 4}), ref).is_ok());
  REQUIRE(s.add(ref, ref).is_ok());
  CHECK(s.nonfinite() == 1);
  CHECK(std::isnan(s.snr_db()));
  CHECK(quant::interp::count_nonfinite(Tensor::from_vector<float>({3}, {nan, inf, 0})) == 2);
  CHECK(quant::interp::count_nonfinite(Tensor::from_vector<int64_t>({1}, {7})) == 0);
}

TEST_CASE("A row holding a NaN has no top-1 and no top-k", "[interp][compare]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor scores = Tensor::from_vector<float>({3, 3}, {nan, nan, nan, 0.1f, nan, 0.9f, 0.3f, 0.2f, 0.1f});
  CHECK(quant::interp::argmax_rows(scores) == std::vector<int64_t>{-1, -1, 0});
  const float all_nan[] = {nan, nan, nan};
  for (int64_t label = 0; label < 3; ++label) CHECK_FALSE(quant::interp::in_top_k(all_nan, 3, label, 1));
  const float one_nan[] = {0.5f, nan, 0.1f};
  CHECK_FALSE(quant::interp::in_top_k(one_nan, 3, 0, 3));
}

namespace {

quant::ir::Value* add_value(quant::ir::Graph& g, const std::string& name, Tensor* constant = nullptr) {
  quant::ir::Value* v = g.add_value(name);
  v->dtype = constant ? constant->dtype() : quant::DType::Float32;
  if (constant) v->constant = std::make_unique<Tensor>(*constant);
  return v;
}

// float: x -> Sigmoid -> s -> Identity -> y.
// tested: the same with x and s through QuantizeLinear/DequantizeLinear,
// x fine (scale 0.01), s coarse (scale 0.1).
void build_pair(quant::ir::Graph& ref, quant::ir::Graph& tst) {
  for (quant::ir::Graph* g : {&ref, &tst}) g->opset_imports[""] = 13;
  ref.inputs = {add_value(ref, "x")};
  add_value(ref, "s");
  add_value(ref, "y");
  ref.add_node("Sigmoid", {ref.find_value("x")}, {ref.find_value("s")}, "sig");
  ref.add_node("Identity", {ref.find_value("s")}, {ref.find_value("y")}, "id");
  ref.outputs = {ref.find_value("y")};

  tst.inputs = {add_value(tst, "x")};
  auto qdq = [&](const std::string& name, float scale, quant::ir::Value* in) {
    Tensor s = Tensor::scalar<float>(scale), z = Tensor::scalar<uint8_t>(128);
    quant::ir::Value* sv = add_value(tst, name + "_scale", &s);
    quant::ir::Value* zv = add_value(tst, name + "_zero_point", &z);
    quant::ir::Value* q = add_value(tst, name + "_quantized");
    q->dtype = quant::DType::UInt8;
    quant::ir::Value* d = add_value(tst, name + "_dequantized");
    tst.add_node("QuantizeLinear", {in, sv, zv}, {q}, name + "_q");
    tst.add_node("DequantizeLinear", {q, sv, zv}, {d}, name + "_dq");
    return d;
  };
  quant::ir::Value* xd = qdq("x", 0.01f, tst.inputs[0]);
  quant::ir::Value* s = add_value(tst, "s");
  tst.add_node("Sigmoid", {xd}, {s}, "sig");
  quant::ir::Value* sd = qdq("s", 0.1f, s);
  quant::ir::Value* y = add_value(tst, "y");
  tst.add_node("Identity", {sd}, {y}, "id");
  tst.outputs = {y};
}

}  // namespace

TEST_CASE("Per-layer comparison pairs quantized tensors with their float twins, worst first", "[interp][compare]") {
  quant::ir::Graph ref, tst;
  build_pair(ref, tst);
  quant::interp::LayerComparison cmp(tst, ref, {{"x_quantized", "x", 0.01f, 128}, {"s_quantized", "s", 0.1f, 128}});
  auto rs = quant::interp::Session::create(ref);
  auto ts = quant::interp::Session::create(tst);
  REQUIRE(rs.has_value());
  REQUIRE(ts.has_value());
  for (int sample = 0; sample < 3; ++sample) {
    std::vector<float> v(100);
    for (size_t i = 0; i < v.size(); ++i) v[i] = -1.2f + 0.024f * static_cast<float>(i) + 0.003f * static_cast<float>(sample);
    Tensor x = Tensor::from_vector<float>({100}, v);
    REQUIRE((*rs)->run({x}, cmp.reference_observer()).has_value());
    REQUIRE((*ts)->run({x}, cmp.tested_observer()).has_value());
    cmp.end_sample();
  }
  auto layers = cmp.by_snr();
  REQUIRE(layers.size() == 3);
  // s is quantized coarsely: s_quantized and y (which reads it) are worst,
  // equal, in execution order; the float 's' is not listed since s_quantized
  // stands for it.
  CHECK(layers[0].tensor == "s_quantized");
  CHECK(layers[0].reference == "s");
  CHECK(layers[0].dequantized);
  CHECK(layers[1].tensor == "y");
  CHECK_FALSE(layers[1].dequantized);
  CHECK(layers[0].stats.snr_db() == Approx(layers[1].stats.snr_db()));
  CHECK(layers[2].tensor == "x_quantized");
  CHECK(layers[2].stats.snr_db() > layers[0].stats.snr_db() + 15);
  CHECK(layers[0].stats.snr_db() > 15);
  CHECK(layers[0].order < layers[1].order);
  CHECK(layers[2].order < layers[0].order);
  CHECK(layers[0].stats.count() == 300);
  CHECK(cmp.skipped() == 0);
}

TEST_CASE("Per-layer comparison counts the float values outside the quantized range and hands pairs to a hook",
          "[interp][compare]") {
  quant::ir::Graph ref, tst;
  build_pair(ref, tst);
  // x_quantized's real range as the comparison is told: 0.005 * ([0, 255] - 128) = [-0.64, 0.635].
  quant::interp::LayerComparison cmp(tst, ref, {{"x_quantized", "x", 0.005f, 128}, {"s_quantized", "s", 0.1f, 128}});
  std::map<std::string, int64_t> hooked;
  cmp.set_pair_hook([&](const quant::interp::LayerComparison::Layer& l, const Tensor& r, const Tensor& t) {
    CHECK(r.dtype() == quant::DType::Float32);
    CHECK(t.dtype() == quant::DType::Float32);
    CHECK(r.shape() == t.shape());
    hooked[l.tensor] += r.size();
  });
  auto rs = quant::interp::Session::create(ref);
  auto ts = quant::interp::Session::create(tst);
  REQUIRE(rs.has_value());
  REQUIRE(ts.has_value());
  int64_t outside = 0;
  for (int sample = 0; sample < 2; ++sample) {
    std::vector<float> v(100);
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = -1.2f + 0.024f * static_cast<float>(i) + 0.003f * static_cast<float>(sample);
      outside += v[i] < -0.64 || v[i] > 0.635;
    }
    Tensor x = Tensor::from_vector<float>({100}, v);
    REQUIRE((*rs)->run({x}, cmp.reference_observer()).has_value());
    REQUIRE((*ts)->run({x}, cmp.tested_observer()).has_value());
    cmp.end_sample();
  }
  REQUIRE(outside > 0);
  bool seen_x = false;
  for (const auto& l : cmp.by_snr()) {
    CHECK(hooked[l.tensor] == l.stats.count());
    if (l.tensor == "x_quantized") {
      seen_x = true;
      CHECK(l.range_min == Approx(-0.64));
      CHECK(l.range_max == Approx(0.635));
      CHECK(l.clipped == outside);
      CHECK(l.clipped_share() == Approx(static_cast<double>(outside) / 200));
    } else if (l.tensor == "s_quantized") {
      CHECK(l.clipped == 0);  // sigmoid in (0, 1) inside 0.1 * [-128, 127]
    } else {
      CHECK(std::isnan(l.range_min));  // a float pair has no quantized range
      CHECK(l.clipped_share() == 0);
    }
  }
  CHECK(seen_x);
}
