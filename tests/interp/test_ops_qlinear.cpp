// The QOperator ops (QLinearConv, QLinearMatMul, com.microsoft QLinear*)
// through one-node graphs: results against dequantize -> float op -> quantize
// (within one output step), parameters given as initializers (prepared once)
// and as graph inputs (built per run) giving the same bytes, both
// requantization modes, and bad input refused.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <limits>
#include <random>

#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"
#include "libquant/kernels/shape_util.h"
#include "libquant/kernels/threadpool.h"

using quant::Dims;
using quant::DType;
using quant::Expected;
using quant::Tensor;
using quant::interp::Requant;
using quant::interp::Session;
using quant::interp::SessionOptions;
using quant::ir::Attribute;

namespace {

struct QNode {
  QNode(std::string o, std::string d, std::vector<Tensor> ins) : op(std::move(o)), domain(std::move(d)), inputs(std::move(ins)) {}
  std::string op, domain;
  std::vector<Tensor> inputs;  // empty Tensor: omitted
  bool params_constant = true;  // every input but the data inputs as initializers
  std::vector<size_t> data_inputs = {0};
  std::map<std::string, Attribute> attributes;
  Requant requant = Requant::Float;
  int threads = 1;
};

Expected<Tensor> run_q(const QNode& q) {
  quant::ir::Graph g;
  g.opset_imports[""] = 21;
  if (!q.domain.empty()) g.opset_imports[q.domain] = 1;
  std::vector<quant::ir::Value*> ins;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < q.inputs.size(); ++i) {
    if (q.inputs[i].empty()) {
      ins.push_back(nullptr);
      continue;
    }
    quant::ir::Value* v = g.add_value("in" + std::to_string(i));
    v->dtype = q.inputs[i].dtype();
    const bool data = std::find(q.data_inputs.begin(), q.data_inputs.end(), i) != q.data_inputs.end();
    if (!data && q.params_constant) {
      v->constant = std::make_unique<Tensor>(q.inputs[i]);
    } else {
      g.inputs.push_back(v);
      feeds.push_back(q.inputs[i]);
    }
    ins.push_back(v);
  }
  quant::ir::Value* out = g.add_value("out");
  quant::ir::Node* n = g.add_node(q.op, ins, {out}, "node", q.domain);
  n->attributes = q.attributes;
  g.outputs = {out};
  SessionOptions options;
  options.requant = q.requant;
  options.threads = q.threads;
  QT_ASSIGN_OR_RETURN(auto session, Session::create(g, options));
  QT_ASSIGN_OR_RETURN(auto outs, session->run(feeds));
  return outs[0];
}

Tensor run_ok(const QNode& q) {
  auto t = run_q(q);
  INFO(t.status().message());
  REQUIRE(t.has_value());
  // The same node with its parameters as graph inputs gives the same bytes.
  QNode dynamic = q;
  dynamic.params_constant = false;
  auto u = run_q(dynamic);
  INFO(u.status().message());
  REQUIRE(u.has_value());
  REQUIRE(u->values<uint8_t>().size() == t->values<uint8_t>().size());
  REQUIRE(std::equal(u->values<uint8_t>().begin(), u->values<uint8_t>().end(), t->values<uint8_t>().begin()));
  return *t;
}

template <class T>
Tensor qtensor(Dims shape, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  Tensor t(quant::dtype_of<T>(), shape);
  for (auto& v : t.values<T>()) v = static_cast<T>(d(rng));
  return t;
}

Tensor f32(float v) { return Tensor::scalar<float>(v); }
template <class T>
Tensor q(T v) { return Tensor::scalar<T>(v); }

template <class T>
int32_t quantize(double real, float scale, int zp) {
  const double v = std::nearbyint(real / scale) + zp;
  return static_cast<int32_t>(std::clamp<double>(v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
}

}  // namespace

TEST_CASE("QLinearConv matches dequantize-conv-quantize, per channel, both requant modes", "[interp][qlinear]") {
  std::mt19937 rng(1);
  const int64_t N = 2, C = 4, M = 6, H = 5, W = 6, G = 2;
  Tensor x = qtensor<uint8_t>({N, C, H, W}, rng);
  Tensor w = qtensor<int8_t>({M, C / G, 3, 3}, rng);
  std::vector<float> ws_v(M);
  std::vector<int32_t> bias_v(M);
  for (int64_t m = 0; m < M; ++m) ws_v[size_t(m)] = 0.002f * float(m + 1), bias_v[size_t(m)] = int32_t(m * 300 - 800);
  const float xs = 0.02f, ys = 0.05f;
  const uint8_t xz = 120, yz = 130;
  Tensor ws = Tensor::from_vector<float>({M}, ws_v);
  Tensor wz = Tensor::from_vector<int8_t>({M}, std::vector<int8_t>(M, 0));
  Tensor bias = Tensor::from_vector<int32_t>({M}, bias_v);
  QNode node{"QLinearConv", "", {x, f32(xs), q<uint8_t>(xz), w, ws, wz, f32(ys), q<uint8_t>(yz), bias}};
  node.data_inputs = {0};
  node.attributes["pads"] = Attribute::of_ints({1, 1, 1, 1});
  node.attributes["strides"] = Attribute::of_ints({2, 1});
  node.attributes["group"] = Attribute::of_int(G);
  const Tensor y = run_ok(node);
  REQUIRE(y.dtype() == DType::UInt8);
  REQUIRE(y.shape() == Dims{N, M, 3, 6});
  node.requant = Requant::FixedPoint;
  const Tensor yf = run_ok(node);
  // Reference in double.
  const auto xv = x.values<uint8_t>();
  const auto wv = w.values<int8_t>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < 3; ++oh)
        for (int64_t ow = 0; ow < 6; ++ow) {
          double acc = double(bias_v[size_t(m)]) * xs * ws_v[size_t(m)];
          const int64_t g = m / (M / G);
          for (int64_t c = 0; c < C / G; ++c)
            for (int64_t kh = 0; kh < 3; ++kh)
              for (int64_t kw = 0; kw < 3; ++kw) {
                const int64_t ih = oh * 2 + kh - 1, iw = ow + kw - 1;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const double xr = xs * (int(xv[size_t(((n * C + g * (C / G) + c) * H + ih) * W + iw)]) - xz);
                const double wr = ws_v[size_t(m)] * wv[size_t(((m * (C / G) + c) * 3 + kh) * 3 + kw)];
                acc += xr * wr;
              }
          const size_t i = size_t(((n * M + m) * 3 + oh) * 6 + ow);
          const int32_t want = quantize<uint8_t>(acc, ys, yz);
          INFO("output " << i);
          REQUIRE(std::abs(int(y.values<uint8_t>()[i]) - want) <= 1);
          REQUIRE(std::abs(int(yf.values<uint8_t>()[i]) - want) <= 1);
        }
}

TEST_CASE("QLinearConv refuses bad parameters", "[interp][qlinear]") {
  std::mt19937 rng(2);
  Tensor x = qtensor<uint8_t>({1, 2, 4, 4}, rng);
  Tensor w = qtensor<int8_t>({3, 2, 3, 3}, rng);
  QNode node{"QLinearConv", "", {x, f32(0.1f), q<uint8_t>(0), w, f32(0.1f), q<int8_t>(0), f32(0.2f), q<uint8_t>(0),
                                 Tensor::from_vector<int32_t>({2}, {1, 2})}};
  auto r = run_q(node);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().message().find("bias") != std::string::npos);
  node.inputs.pop_back();
  node.inputs[4] = Tensor::from_vector<float>({2}, {0.1f, 0.2f});  // neither 1 nor 3 scales
  r = run_q(node);
  REQUIRE_FALSE(r.has_value());
  node.inputs[4] = f32(-1.0f);
  r = run_q(node);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().message().find("w_scale") != std::string::npos);
}

TEST_CASE("QLinearMatMul batched with per-column weights", "[interp][qlinear]") {
  std::mt19937 rng(3);
  Tensor a = qtensor<int8_t>({2, 3, 5}, rng);
  Tensor b = qtensor<int8_t>({5, 4}, rng);
  const std::vector<float> bs_v = {0.01f, 0.02f, 0.03f, 0.015f};
  const float as = 0.05f, ys = 0.4f;
  const int8_t az = -3, yz = 5;
  QNode node{"QLinearMatMul", "", {a, f32(as), q<int8_t>(az), b, Tensor::from_vector<float>({4}, bs_v),
                                   Tensor::from_vector<int8_t>({4}, {0, 0, 0, 0}), f32(ys), q<int8_t>(yz)}};
  for (Requant mode : {Requant::Float, Requant::FixedPoint}) {
    node.requant = mode;
    const Tensor y = run_ok(node);
    REQUIRE(y.shape() == Dims{2, 3, 4});
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < 5; ++k)
          acc += as * (a.values<int8_t>()[size_t(i * 5 + k)] - az) * bs_v[size_t(j)] * b.values<int8_t>()[size_t(k * 4 + j)];
        REQUIRE(std::abs(int(y.values<int8_t>()[size_t(i * 4 + j)]) - quantize<int8_t>(acc, ys, yz)) <= 1);
      }
  }
}

TEST_CASE("QLinearMatMul of two activations splits whole batches over the threads, the same bytes",
          "[interp][qlinear][threads]") {
  // Attention's products (one B per head, both operands activations): 8
  // heads of 64 x 64 x 64 go to the pool as one job of whole heads; 4 heads
  // of 16 x 16 x 16 are too small to split and run on the caller.
  std::mt19937 rng(12);
  for (const auto& [heads, size, jobs] : std::vector<std::array<int64_t, 3>>{{8, 64, 1}, {4, 16, 0}}) {
    Tensor a = qtensor<uint8_t>({heads, size, size}, rng), b = qtensor<int8_t>({heads, size, size}, rng);
    QNode node{"QLinearMatMul", "", {a, f32(0.02f), q<uint8_t>(120), b, f32(0.01f), q<int8_t>(0), f32(2.0f), q<uint8_t>(128)}};
    node.data_inputs = {0, 3};
    const Tensor one = run_ok(node);
    // Against the real product, within one output step (per-tensor scales:
    // the output stage requantizes in the product's registers).
    for (int64_t h = 0; h < heads; h += heads - 1)
      for (int64_t i = 0; i < size; ++i)
        for (int64_t j = 0; j < size; ++j) {
          double acc = 0;
          for (int64_t t = 0; t < size; ++t)
            acc += 0.02 * (a.values<uint8_t>()[size_t((h * size + i) * size + t)] - 120) * 0.01 *
                   b.values<int8_t>()[size_t((h * size + t) * size + j)];
          REQUIRE(std::abs(int(one.values<uint8_t>()[size_t((h * size + i) * size + j)]) -
                           quantize<uint8_t>(acc, 2.0f, 128)) <= 1);
        }
    for (int threads : {2, 3}) {
      node.threads = threads;
      const int64_t before = quant::kernels::pool_counters().jobs;
      const Tensor many = run_ok(node);
      INFO(heads << " heads of " << size << ", threads " << threads);
      CHECK(quant::kernels::pool_counters().jobs - before == 2 * jobs);  // run_ok runs the node twice
      const auto m = many.values<uint8_t>(), o = one.values<uint8_t>();
      REQUIRE(std::equal(m.begin(), m.end(), o.begin(), o.end()));
    }
  }
}

TEST_CASE("QLinearAdd and QLinearMul broadcast", "[interp][qlinear]") {
  std::mt19937 rng(4);
  Tensor a = qtensor<uint8_t>({2, 3, 4}, rng);
  Tensor b = qtensor<uint8_t>({3, 1}, rng);
  for (const char* op : {"QLinearAdd", "QLinearMul"}) {
    QNode node{op, "com.microsoft", {a, f32(0.1f), q<uint8_t>(100), b, f32(0.2f), q<uint8_t>(50), f32(0.3f), q<uint8_t>(128)}};
    node.data_inputs = {0, 3};
    const Tensor y = run_ok(node);
    REQUIRE(y.shape() == Dims{2, 3, 4});
    for (int64_t i = 0; i < 24; ++i) {
      const double ar = 0.1 * (a.values<uint8_t>()[size_t(i)] - 100);
      const double br = 0.2 * (b.values<uint8_t>()[size_t((i / 4) % 3)] - 50);
      const double real = std::string(op) == "QLinearAdd" ? ar + br : ar * br;
      REQUIRE(std::abs(int(y.values<uint8_t>()[size_t(i)]) - quantize<uint8_t>(real, 0.3f, 128)) <= 1);
    }
  }
}

TEST_CASE("QLinearAdd of equal shapes on threads gives the same bytes", "[interp][qlinear][threads]") {
  // 40000 elements: pieces of 16384 on 2 and 3 threads, the last one short.
  std::mt19937 rng(9);
  Tensor a = qtensor<uint8_t>({4, 100, 100}, rng), b = qtensor<uint8_t>({4, 100, 100}, rng);
  QNode node{"QLinearAdd", "com.microsoft", {a, f32(0.1f), q<uint8_t>(100), b, f32(0.2f), q<uint8_t>(50), f32(0.3f), q<uint8_t>(128)}};
  node.data_inputs = {0, 3};
  const Tensor one = run_ok(node);
  for (int threads : {2, 3}) {
    node.threads = threads;
    const Tensor many = run_ok(node);
    INFO("threads " << threads);
    const auto m = many.values<uint8_t>(), o = one.values<uint8_t>();
    REQUIRE(std::equal(m.begin(), m.end(), o.begin(), o.end()));
  }
}

TEST_CASE("QLinearAdd and QLinearMul broadcast over merged and unmerged dimensions", "[interp][qlinear]") {
  // Rows of the trailing dimensions each operand reads whole or broadcasts
  // throughout: [2,3,4,5] with [3,1,5] (rows of 5), [2,3,1,1] (rows of 20),
  // [1,1,4,5] (rows of 20, b read whole), [2,1,4,1] (rows of 1), a scalar-like
  // [1,1,1,1], and b the larger operand.
  std::mt19937 rng(17);
  const Dims big{2, 3, 4, 5};
  for (const Dims& small : {Dims{3, 1, 5}, Dims{2, 3, 1, 1}, Dims{1, 1, 4, 5}, Dims{2, 1, 4, 1}, Dims{1, 1, 1, 1}}) {
    for (bool big_first : {true, false}) {
      const Tensor x = qtensor<uint8_t>(big, rng), s = qtensor<uint8_t>(small, rng);
      const Tensor& a = big_first ? x : s;
      const Tensor& b = big_first ? s : x;
      const Dims ss = quant::kernels::broadcast_strides(small, big);
      for (const char* op : {"QLinearAdd", "QLinearMul"}) {
        QNode node{op, "com.microsoft", {a, f32(0.1f), q<uint8_t>(100), b, f32(0.2f), q<uint8_t>(50), f32(0.3f), q<uint8_t>(128)}};
        node.data_inputs = {0, 3};
        const Tensor y = run_ok(node);
        REQUIRE(y.shape() == big);
        for (int64_t i = 0; i < 120; ++i) {
          int64_t si = 0;
          for (int64_t d = 3, rest = i; d >= 0; --d) {
            si += rest % big[size_t(d)] * ss[size_t(d)];
            rest /= big[size_t(d)];
          }
          const int xv = x.values<uint8_t>()[size_t(i)], sv = s.values<uint8_t>()[size_t(si)];
          const double ar = 0.1 * ((big_first ? xv : sv) - 100), br = 0.2 * ((big_first ? sv : xv) - 50);
          const double real = std::string(op) == "QLinearAdd" ? ar + br : ar * br;
          INFO(op << " small " << quant::dims_to_string(small) << ", big first " << big_first << ", element " << i);
          REQUIRE(std::abs(int(y.values<uint8_t>()[size_t(i)]) - quantize<uint8_t>(real, 0.3f, 128)) <= 1);
        }
      }
    }
  }
}

TEST_CASE("QLinearMul broadcast by rows on threads gives the same bytes", "[interp][qlinear][threads]") {
  // A squeeze-excitation's [N, C, H, W] x [N, C, 1, 1], either operand first:
  // 2400 rows of 30, in runs of 546 rows (16384 / 30), the last run short.
  std::mt19937 rng(12);
  const Tensor x = qtensor<uint8_t>({2, 40, 30, 30}, rng), s = qtensor<uint8_t>({2, 40, 1, 1}, rng);
  for (bool x_first : {true, false}) {
    const Tensor& a = x_first ? x : s;
    const Tensor& b = x_first ? s : x;
    QNode node{"QLinearMul", "com.microsoft", {a, f32(0.05f), q<uint8_t>(120), b, f32(0.02f), q<uint8_t>(30), f32(0.4f), q<uint8_t>(128)}};
    node.data_inputs = {0, 3};
    const Tensor one = run_ok(node);
    const auto o = one.values<uint8_t>();
    REQUIRE(o.size() == 72000);
    for (size_t i = 0; i < o.size(); ++i) {
      const double xr = (x_first ? 0.05 : 0.02) * (x.values<uint8_t>()[i] - (x_first ? 120 : 30));
      const double sr = (x_first ? 0.02 : 0.05) * (s.values<uint8_t>()[i / 900] - (x_first ? 30 : 120));
      INFO("x first " << x_first << ", element " << i);
      REQUIRE(std::abs(int(o[i]) - quantize<uint8_t>(xr * sr, 0.4f, 128)) <= 1);
    }
    for (int threads : {2, 3}) {
      node.threads = threads;
      const Tensor many = run_ok(node);
      INFO("x first " << x_first << ", threads " << threads);
      const auto m = many.values<uint8_t>();
      REQUIRE(std::equal(m.begin(), m.end(), o.begin(), o.end()));
    }
  }
}

TEST_CASE("QLinearSigmoid, QLinearLeakyRelu tables; QLinearConcat rescales", "[interp][qlinear]") {
  std::mt19937 rng(5);
  Tensor x = qtensor<int8_t>({2, 8}, rng);
  QNode sig{"QLinearSigmoid", "com.microsoft", {x, f32(0.05f), q<int8_t>(0), f32(1.0f / 256), q<int8_t>(-128)}};
  Tensor y = run_ok(sig);
  for (int64_t i = 0; i < 16; ++i) {
    const double real = 1.0 / (1.0 + std::exp(-0.05 * x.values<int8_t>()[size_t(i)]));
    REQUIRE(std::abs(int(y.values<int8_t>()[size_t(i)]) - quantize<int8_t>(real, 1.0f / 256, -128)) <= 1);
  }
  QNode leaky{"QLinearLeakyRelu", "com.microsoft", {x, f32(0.05f), q<int8_t>(3), f32(0.04f), q<int8_t>(-10)}};
  leaky.attributes["alpha"] = Attribute::of_float(0.2f);
  y = run_ok(leaky);
  for (int64_t i = 0; i < 16; ++i) {
    const double v = 0.05 * (x.values<int8_t>()[size_t(i)] - 3);
    REQUIRE(std::abs(int(y.values<int8_t>()[size_t(i)]) - quantize<int8_t>(v >= 0 ? v : 0.2 * v, 0.04f, -10)) <= 1);
  }
  Tensor u = qtensor<uint8_t>({2, 3}, rng), v = qtensor<uint8_t>({2, 1}, rng);
  QNode cat{"QLinearConcat", "com.microsoft", {f32(0.1f), q<uint8_t>(10), u, f32(0.1f), q<uint8_t>(10), v, f32(0.3f), q<uint8_t>(0)}};
  cat.data_inputs = {2, 5};
  cat.attributes["axis"] = Attribute::of_int(-1);
  y = run_ok(cat);
  REQUIRE(y.shape() == Dims{2, 4});
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t c = 0; c < 3; ++c) REQUIRE(y.values<uint8_t>()[size_t(r * 4 + c)] == u.values<uint8_t>()[size_t(r * 3 + c)]);
    const int32_t want = quantize<uint8_t>(0.3 * v.values<uint8_t>()[size_t(r)], 0.1f, 10);
    REQUIRE(int(y.values<uint8_t>()[size_t(r * 4 + 3)]) == want);
  }
}

TEST_CASE("QLinearAveragePool and QLinearGlobalAveragePool", "[interp][qlinear]") {
  std::mt19937 rng(6);
  Tensor x = qtensor<uint8_t>({1, 2, 4, 5}, rng);
  QNode gap{"QLinearGlobalAveragePool", "com.microsoft", {x, f32(0.1f), q<uint8_t>(7), f32(0.05f), q<uint8_t>(9)}};
  gap.attributes["channels_last"] = Attribute::of_int(0);
  Tensor y = run_ok(gap);
  REQUIRE(y.shape() == Dims{1, 2, 1, 1});
  for (int64_t c = 0; c < 2; ++c) {
    double sum = 0;
    for (int64_t i = 0; i < 20; ++i) sum += 0.1 * (x.values<uint8_t>()[size_t(c * 20 + i)] - 7);
    REQUIRE(std::abs(int(y.values<uint8_t>()[size_t(c)]) - quantize<uint8_t>(sum / 20, 0.05f, 9)) <= 1);
  }
  QNode ap{"QLinearAveragePool", "com.microsoft", {x, f32(0.1f), q<uint8_t>(7), f32(0.05f), q<uint8_t>(9)}};
  ap.attributes["kernel_shape"] = Attribute::of_ints({3, 3});
  ap.attributes["pads"] = Attribute::of_ints({1, 1, 1, 1});
  ap.attributes["count_include_pad"] = Attribute::of_int(1);
  y = run_ok(ap);
  REQUIRE(y.shape() == Dims{1, 2, 4, 5});
  // Corner (0, 0): 4 taps inside, divided by 9.
  double corner = 0;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t w = 0; w < 2; ++w) corner += 0.1 * (x.values<uint8_t>()[size_t(h * 5 + w)] - 7);
  CHECK(std::abs(int(y.values<uint8_t>()[0]) - quantize<uint8_t>(corner / 9, 0.05f, 9)) <= 1);
  ap.attributes["channels_last"] = Attribute::of_int(1);
  auto r = run_q(ap);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().message().find("channels_last") != std::string::npos);
}
