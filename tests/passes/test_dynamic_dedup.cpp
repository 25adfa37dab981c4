// qconvert --dynamic stores quantized weights of equal content once
// (passes/dynamic.cpp DynamicBuilder::constant): found by a hash of the size
// and the first and last 4 KiB, decided by comparing every byte. Weights
// equal at both ends but not in the middle must stay apart. The streaming
// int8 path (DynamicOptions::spill_bytes: codes in a reused buffer, written
// out only when new) makes the same constants.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "libquant/passes/dynamic.h"

namespace {

using quant::DType;
using quant::Tensor;
using quant::ir::Graph;

constexpr int64_t K = 128, N = 256;  // int8 weight 32 KiB, int4 blobs 16 KiB: past the two 4 KiB edges

Tensor ramp() {
  Tensor t(DType::Float32, {K, N});
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = 0.01f * static_cast<float>(i % 97) - 1.0f;
  return t;
}

// x -> MatMul(w_a), MatMul(w_b), MatMul(w_c): w_a and w_b equal, w_c one
// element negated in row 64 (the middle of both quantized forms; |w| and so
// every scale unchanged).
std::unique_ptr<Graph> three_linears() {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 13;
  quant::ir::Value* x = g->add_value("x");
  x->dtype = DType::Float32;
  x->has_shape = true;
  x->shape = {1, K};
  x->dim_names = {"", ""};
  g->inputs.push_back(x);
  Tensor c = ramp();
  float& v = c.data<float>()[64 * N + 100];
  REQUIRE(std::fabs(v) > 0.05f);
  v = -v;
  Tensor ws[3] = {ramp(), ramp(), std::move(c)};
  const char* names[3] = {"a", "b", "c"};
  for (int i = 0; i < 3; ++i) {
    quant::ir::Value* w = g->add_value(std::string("w_") + names[i]);
    w->dtype = DType::Float32;
    w->has_shape = true;
    w->shape = {K, N};
    w->constant = std::make_unique<Tensor>(std::move(ws[i]));
    quant::ir::Value* y = g->add_value(std::string("y_") + names[i]);
    y->dtype = DType::Float32;
    g->add_node("MatMul", {x, w}, {y}, std::string("mm_") + names[i]);
    g->outputs.push_back(y);
  }
  return g;
}

// The weight input of each rewritten node, in node order.
std::vector<const quant::ir::Value*> weights_of(const Graph& g, const std::string& op) {
  std::vector<const quant::ir::Value*> w;
  for (const auto& n : g.nodes())
    if (n->op_type == op) w.push_back(n->inputs[1]);
  return w;
}

}  // namespace

TEST_CASE("dynamic quantization stores equal weights once and keeps different ones apart", "[passes][dynamic]") {
  for (const DType weights : {DType::Int8, DType::Int4}) {
    CAPTURE(quant::dtype_name(weights));
    auto g = three_linears();
    quant::passes::DynamicOptions o;
    o.weights = weights;
    o.group_size = 32;
    auto report = quant::passes::quantize_dynamic(*g, o);
    INFO(report.status().message());
    REQUIRE(report.has_value());
    const auto w = weights_of(*g, weights == DType::Int4 ? "MatMulNBits" : "MatMulInteger");
    REQUIRE(w.size() == 3);
    CHECK(w[0] == w[1]);
    CHECK(w[0] != w[2]);
    const Tensor &a = *w[0]->constant, &c = *w[2]->constant;
    REQUIRE(a.byte_size() == c.byte_size());
    REQUIRE(a.byte_size() > 8192);
    const auto* pa = static_cast<const unsigned char*>(a.raw());
    const auto* pc = static_cast<const unsigned char*>(c.raw());
    // Same first and last 4 KiB (same hash), different middle.
    CHECK(std::equal(pa, pa + 4096, pc));
    CHECK(std::equal(pa + a.byte_size() - 4096, pa + a.byte_size(), pc + c.byte_size() - 4096));
    CHECK_FALSE(std::equal(pa, pa + a.byte_size(), pc));
  }
}

TEST_CASE("int8 codes through spill_bytes are the same bytes, deduplicated before they are written", "[passes][dynamic]") {
  for (const bool uint8 : {false, true}) {
    CAPTURE(uint8);
    quant::passes::DynamicOptions o;
    o.uint8_weights = uint8;
    // w_c also gets NaN, +-Inf, -0 and a tie (0.5 of its column's step):
    // the uint8 codes made at once equal the int8 codes + 128 there too.
    const auto special = [](Graph& g) {
      float* c = g.find_value("w_c")->constant->data<float>();
      const float step = 1.0f / 127.0f;  // column 5's absmax is 1 (the ramp's -1)
      c[0] = std::nanf("");
      c[1] = INFINITY;
      c[2] = -INFINITY;
      c[3] = -0.0f;
      c[N + 5] = 0.5f * step;
      c[2 * N + 5] = -2.5f * step;
    };
    auto in_memory = three_linears();
    special(*in_memory);
    REQUIRE(quant::passes::quantize_dynamic(*in_memory, o).has_value());
    auto streamed = three_linears();
    special(*streamed);
    int spilled = 0;
    o.spill_bytes = [&](DType d, const quant::Dims& shape, const void* bytes) -> quant::Expected<Tensor> {
      ++spilled;
      Tensor t(d, shape);
      std::memcpy(t.raw(), bytes, t.byte_size());
      return t;
    };
    REQUIRE(quant::passes::quantize_dynamic(*streamed, o).has_value());
    CHECK(spilled == 2);  // w_a and w_c; w_b equals w_a
    const auto a = weights_of(*in_memory, "MatMulInteger"), b = weights_of(*streamed, "MatMulInteger");
    REQUIRE(a.size() == 3);
    REQUIRE(b.size() == 3);
    CHECK(b[0] == b[1]);
    CHECK(b[0] != b[2]);
    for (size_t i = 0; i < 3; ++i) {
      const Tensor &x = *std::as_const(a[i])->constant, &y = *std::as_const(b[i])->constant;
      CHECK(x.dtype() == (uint8 ? DType::UInt8 : DType::Int8));
      CHECK(y.dtype() == x.dtype());
      CHECK(y.shape() == x.shape());
      CHECK(std::memcmp(x.raw(), y.raw(), x.byte_size()) == 0);
      CHECK(a[i]->name() == b[i]->name());
    }
  }
}

TEST_CASE("int8 weights and scales do not depend on DynamicOptions::threads", "[passes][dynamic]") {
  // Column maxima and codes are split by rows over the threads; with NaN,
  // infinities, -0 and a tie in the weights, every constant is the same bytes.
  auto convert = [](int threads, bool uint8) {
    auto g = three_linears();
    float* c = g->find_value("w_c")->constant->data<float>();
    const float step = 1.0f / 127.0f;
    c[0] = std::nanf("");
    c[N + 1] = INFINITY;
    c[2 * N + 2] = -0.0f;
    c[3 * N + 5] = 0.5f * step;
    quant::passes::DynamicOptions o;
    o.uint8_weights = uint8;
    o.threads = threads;
    REQUIRE(quant::passes::quantize_dynamic(*g, o).has_value());
    return g;
  };
  for (const bool uint8 : {false, true}) {
    CAPTURE(uint8);
    const auto one = convert(1, uint8);
    for (int threads : {2, 3}) {
      CAPTURE(threads);
      const auto many = convert(threads, uint8);
      int compared = 0;
      for (const quant::ir::Value* v : one->values()) {
        if (!v->is_constant()) continue;
        const quant::ir::Value* w = many->find_value(v->name());
        REQUIRE(w);
        REQUIRE(w->is_constant());
        const Tensor &x = *std::as_const(v)->constant, &y = *std::as_const(w)->constant;
        REQUIRE(x.dtype() == y.dtype());
        REQUIRE(x.shape() == y.shape());
        CHECK(std::memcmp(x.raw(), y.raw(), x.byte_size()) == 0);
        ++compared;
      }
      CHECK(compared >= 3);  // two code tensors (w_a and w_b share one) and scales
    }
  }
}
