// QLinearConv and QGemm made by passes::lower_qdq against the QDQ graph they
// replace, run as it is (Q/DQ in float: the reference), compared on the
// quantized output tensor.
//
// Both paths compute ONNX Runtime's float-multiplier requantization of the
// same real value r = acc * s_x * s_w[c] / s_y (acc: the exact int32
// accumulator plus bias), each with float32 roundings of its own:
//   - reference: dequantized inputs and weights rounded to float32, products
//     and sums in float32, then y / s_y, then round half to even;
//   - lowered: float32(acc) * float32(s_x * s_w[c] / s_y), then round half to
//     even (kernels/requant.h).
// With power-of-two scales and |acc| < 2^24 neither path rounds anything
// before the final rounding, so both give round_half_even(r) + zero point to
// the bit, ties included: there any difference is a lowering bug, and the
// test requires none. With other scales the two can land on different sides
// of a rounding boundary when r lies within their float32 rounding error of
// it; the test then allows a difference of one step only where the exact r
// (computed here in double from the integer accumulator) is within a
// forward-error bound of a boundary, and requires such cases to be rare. (None
// occurred: with the scales below, and over 60 seeds - about 260 000 outputs
// of the non-power-of-two cases - when this test was written.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "libquant/interp/session.h"
#include "libquant/passes/graph_edit.h"
#include "libquant/passes/lower_qdq.h"
#include "tests/passes/qdq_graph.h"

using quant::DType;
using quant::testing::run_graph;
using quant::Tensor;
using quant::ir::Graph;
using quant::ir::Node;
using quant::ir::Value;
using quant::testing::QdqGraph;
namespace passes = quant::passes;

namespace {

struct QRange {
  int32_t lo, hi;
};
QRange range_of(DType t) { return t == DType::UInt8 ? QRange{0, 255} : QRange{-128, 127}; }
// The integer outputs a Q (after a Relu: from Q(0) = zero point up) can write.
QRange output_range(DType t, int32_t zp, bool relu) {
  const QRange r = range_of(t);
  return relu ? QRange{std::max(r.lo, zp), r.hi} : r;
}

// A weight or bias as qconvert writes it: integer constant -> DequantizeLinear
// with a scale and a zero point per tensor or per channel along `axis`.
Value* dequantized_constant(QdqGraph& b, const std::string& name, Tensor q, const std::vector<float>& scales,
                            const std::vector<int32_t>& zero_points, int64_t axis) {
  const int64_t n = static_cast<int64_t>(scales.size());
  const DType t = q.dtype();
  Value* qv = passes::add_constant(b.g, name + "_quantized", std::move(q));
  Value* s = passes::add_constant(b.g, name + "_scale",
                                  n == 1 ? Tensor::scalar<float>(scales[0]) : Tensor::from_vector<float>({n}, scales));
  Tensor zt(t, n == 1 ? quant::Dims{} : quant::Dims{n});
  for (int64_t i = 0; i < n; ++i) {
    const int32_t z = zero_points[static_cast<size_t>(i)];
    if (t == DType::UInt8) zt.data<uint8_t>()[i] = static_cast<uint8_t>(z);
    if (t == DType::Int8) zt.data<int8_t>()[i] = static_cast<int8_t>(z);
    if (t == DType::Int32) zt.data<int32_t>()[i] = z;
  }
  Value* z = passes::add_constant(b.g, name + "_zero_point", std::move(zt));
  Value* d = b.value(name + "_dequantized");
  Node* node = b.g.add_node("DequantizeLinear", {qv, s, z}, {d}, name + "_DequantizeLinear");
  if (n > 1) node->attributes["axis"] = quant::ir::Attribute::of_int(axis);
  return d;
}

// QuantizeLinear of `v`; returns the integer tensor (the graph output compared).
Value* quantize(QdqGraph& b, Value* v, float scale, int32_t zp, DType t) {
  Value* s = passes::add_constant(b.g, v->name() + "_scale", Tensor::scalar<float>(scale));
  Value* z = passes::add_constant(b.g, v->name() + "_zero_point", quant::testing::zero_point(t, zp));
  Value* q = b.g.add_value(v->name() + "_quantized");
  q->dtype = t;
  b.g.add_node("QuantizeLinear", {v, s, z}, {q}, v->name() + "_QuantizeLinear");
  return q;
}

// The activation's integer values and a float input that QuantizeLinear maps
// onto them: k - zp uniform in [-spread, spread], a few at the type's limits
// and beyond (saturated by the input's Q), each offset by less than a third of
// a step so that Q(x) is k clamped, far from any rounding tie.
struct Activation {
  std::vector<int32_t> q;  // after saturation
  Tensor x;
};
Activation make_activation(std::mt19937& rng, quant::Dims shape, float scale, int32_t zp, DType t, int32_t spread) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const QRange r = range_of(t);
  std::uniform_int_distribution<int32_t> near(-spread, spread), far(r.lo - 20, r.hi + 20), pick(0, 49);
  std::uniform_real_distribution<float> offset(-0.3f, 0.3f);
  Activation a;
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int32_t k = pick(rng) == 0 ? far(rng) : zp + near(rng);
    a.q.push_back(std::clamp(k, r.lo, r.hi));
    x[static_cast<size_t>(i)] = scale * (static_cast<float>(k - zp) + offset(rng));
  }
  a.x = Tensor::from_vector<float>(shape, x);
  return a;
}

template <class T>
Tensor random_ints(std::mt19937& rng, quant::Dims shape, int32_t lo, int32_t hi, std::vector<int32_t>& values) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::uniform_int_distribution<int32_t> d(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  values.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    values[static_cast<size_t>(i)] = d(rng);
    v[static_cast<size_t>(i)] = static_cast<T>(values[static_cast<size_t>(i)]);
  }
  return Tensor::from_vector<T>(shape, v);
}

// What the comparison found, for the caller's checks and the log.
struct Agreement {
  int64_t outputs = 0;
  int64_t different = 0;  // each one step apart, next to a rounding boundary
  int64_t ties = 0;       // outputs whose exact r is a tie (k + 1/2) inside the range
};

// Compares the lowered output with the reference one, element by element.
// acc[i]: the exact accumulator (bias included) of output i; abs_acc[i]: the
// sum of the magnitudes of its terms (the size of the float32 rounding
// errors); multiplier(i): s_x * s_w[c] / s_y in double for its channel; terms:
// the number of float additions in the reference.
template <class M>
Agreement compare(const Tensor& lowered, const Tensor& reference, const std::vector<int64_t>& acc,
                  const std::vector<double>& abs_acc, M multiplier, int64_t terms, int32_t zp, QRange out,
                  bool exact_scales) {
  REQUIRE(lowered.dtype() == reference.dtype());
  REQUIRE(lowered.shape() == reference.shape());
  REQUIRE(lowered.size() == static_cast<int64_t>(acc.size()));
  Agreement a;
  a.outputs = lowered.size();
  for (int64_t i = 0; i < lowered.size(); ++i) {
    const double r = static_cast<double>(acc[static_cast<size_t>(i)]) * multiplier(i);
    const double lo_edge = out.lo - zp - 0.5, hi_edge = out.hi - zp + 0.5;
    if (r > lo_edge && r < hi_edge && r - std::floor(r) == 0.5) ++a.ties;
    const int64_t l = lowered.as_int64(i), ref = reference.as_int64(i);
    if (l == ref) continue;
    INFO("output " << i << ": lowered " << l << ", reference " << ref << ", exact r " << r << ", acc "
                   << acc[static_cast<size_t>(i)]);
    // Power-of-two scales: nothing is rounded but the result, so nothing may differ.
    REQUIRE_FALSE(exact_scales);
    REQUIRE(std::abs(l - ref) == 1);
    // Float32 summation of `terms` products (each within 2^-24 relative, the
    // sum within terms * 2^-24 of sum |term|), the division by s_y and the
    // multiplier's own roundings: 2^-23 * (terms + 4) * sum |term| / s_y
    // bounds the distance of either path from r, with a factor 2 to spare.
    const double bound = std::ldexp(1.0, -23) * static_cast<double>(terms + 4) * abs_acc[static_cast<size_t>(i)] *
                         multiplier(i);
    const double to_boundary = std::abs(r - (std::floor(r) + 0.5));
    REQUIRE(to_boundary <= bound);
    ++a.different;
  }
  return a;
}

// Outputs strictly inside the type's limits: the data must not be all
// saturated for the comparison to say something.
int64_t not_saturated(const Tensor& y, DType t) {
  const QRange r = range_of(t);
  int64_t n = 0;
  for (int64_t i = 0; i < y.size(); ++i) n += y.as_int64(i) > r.lo && y.as_int64(i) < r.hi;
  return n;
}

// ---- Conv --------------------------------------------------------------------

struct ConvCase {
  std::string name;
  int64_t batch = 1, cin = 3, cout = 4, h = 12, w = 11, k = 3, group = 1, stride = 1, pad = 1;
  DType x_type = DType::UInt8, w_type = DType::Int8, y_type = DType::UInt8;
  int32_t x_zp = 128, w_zp = 0, y_zp = 128;
  float x_scale = 0.03125f, y_scale = 0.0078125f;
  std::vector<float> w_scales;  // one, or one per output channel
  bool relu = false;
  int32_t spread = 8;  // input values near the zero point (see make_activation)
  bool exact_scales = true;
};

void check_conv(const ConvCase& c, bool fold_activations) {
  INFO(c.name << (fold_activations ? ", Relu folded" : ", Relu as an integer Clip"));
  std::mt19937 rng(29);
  const int64_t cin_g = c.cin / c.group, cout_g = c.cout / c.group;
  const Activation x = make_activation(rng, {c.batch, c.cin, c.h, c.w}, c.x_scale, c.x_zp, c.x_type, c.spread);
  std::vector<int32_t> wq, bq;
  const QRange wr = range_of(c.w_type);
  Tensor wt = c.w_type == DType::Int8 ? random_ints<int8_t>(rng, {c.cout, cin_g, c.k, c.k}, -127, 127, wq)
                                      : random_ints<uint8_t>(rng, {c.cout, cin_g, c.k, c.k}, wr.lo, wr.hi, wq);
  Tensor bt = random_ints<int32_t>(rng, {c.cout}, -1000, 1000, bq);
  std::vector<float> bias_scales;
  for (float s : c.w_scales) bias_scales.push_back(c.x_scale * s);  // float32, as qconvert computes it
  auto w_scale = [&](int64_t co) { return c.w_scales[c.w_scales.size() == 1 ? 0 : static_cast<size_t>(co)]; };

  QdqGraph lowered, reference;
  for (QdqGraph* b : {&lowered, &reference}) {
    Value* xd = b->qdq(b->input("x"), c.x_scale, c.x_zp, c.x_type);
    Value* wd = dequantized_constant(*b, "w", wt, c.w_scales, std::vector<int32_t>(c.w_scales.size(), c.w_zp), 0);
    Value* bd = dequantized_constant(*b, "bias", bt, bias_scales, std::vector<int32_t>(bias_scales.size(), 0), 0);
    Value* y = b->op("Conv", {xd, wd, bd}, "c");
    Node* conv = y->producer;
    conv->attributes["kernel_shape"] = quant::ir::Attribute::of_ints({c.k, c.k});
    conv->attributes["pads"] = quant::ir::Attribute::of_ints({c.pad, c.pad, c.pad, c.pad});
    conv->attributes["strides"] = quant::ir::Attribute::of_ints({c.stride, c.stride});
    conv->attributes["group"] = quant::ir::Attribute::of_int(c.group);
    if (c.relu) y = b->op("Relu", {y}, "r");
    b->g.outputs = {quantize(*b, y, c.y_scale, c.y_zp, c.y_type)};
  }
  auto l = passes::lower_qdq(lowered.g, {passes::LowerTarget::Interpreter, nullptr, fold_activations});
  REQUIRE(l.has_value());
  REQUIRE(l->lowered.count("c_node"));
  CHECK_THAT(l->lowered.at("c_node"), Catch::StartsWith("QLinearConv"));
  CHECK(l->float_reasons.empty());

  const auto lo = run_graph(lowered.g, {x.x}), ref = run_graph(reference.g, {x.x});

  // The exact accumulators, for the comparison's bounds.
  const int64_t oh = (c.h + 2 * c.pad - c.k) / c.stride + 1, ow = (c.w + 2 * c.pad - c.k) / c.stride + 1;
  std::vector<int64_t> acc;
  std::vector<double> abs_acc;
  std::vector<int64_t> channel;
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t co = 0; co < c.cout; ++co)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          int64_t sum = bq[static_cast<size_t>(co)];
          double mag = std::abs(static_cast<double>(sum));
          const int64_t g = co / cout_g;
          for (int64_t ci = 0; ci < cin_g; ++ci)
            for (int64_t ky = 0; ky < c.k; ++ky)
              for (int64_t kx = 0; kx < c.k; ++kx) {
                const int64_t iy = oy * c.stride - c.pad + ky, ix = ox * c.stride - c.pad + kx;
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;  // padding: real 0, q = zero point
                const int64_t xi = ((n * c.cin + g * cin_g + ci) * c.h + iy) * c.w + ix;
                const int64_t wi = ((co * cin_g + ci) * c.k + ky) * c.k + kx;
                const int64_t term = static_cast<int64_t>(x.q[static_cast<size_t>(xi)] - c.x_zp) *
                                     (wq[static_cast<size_t>(wi)] - c.w_zp);
                sum += term;
                mag += std::abs(static_cast<double>(term));
              }
          acc.push_back(sum);
          abs_acc.push_back(mag);
          channel.push_back(co);
        }
  auto multiplier = [&](int64_t i) {
    const int64_t co = channel[static_cast<size_t>(i)];
    return static_cast<double>(c.x_scale) * static_cast<double>(w_scale(co)) / static_cast<double>(c.y_scale);
  };
  const QRange yr = output_range(c.y_type, c.y_zp, c.relu);
  const Agreement a = compare(lo[0], ref[0], acc, abs_acc, multiplier, cin_g * c.k * c.k + 1, c.y_zp, yr, c.exact_scales);
  INFO(a.outputs << " outputs, " << a.ties << " exact ties, " << a.different << " one step apart");
  if (c.exact_scales) CHECK(a.ties > 0);  // round half to even is exercised
  CHECK(a.different * 1000 <= a.outputs);
  CHECK(not_saturated(ref[0], c.y_type) * 5 > ref[0].size());
}

// ---- Gemm --------------------------------------------------------------------

struct GemmCase {
  std::string name;
  int64_t m = 64, k = 37, n = 6;
  bool trans_b = false;
  DType a_type = DType::UInt8, b_type = DType::Int8, y_type = DType::UInt8;
  int32_t a_zp = 128, b_zp = 0, y_zp = 100;
  float a_scale = 0.0625f, y_scale = 0.125f;
  std::vector<float> b_scales;  // one, or one per output column
  bool relu = false;
  int32_t spread = 3;
  bool exact_scales = true;
};

void check_gemm(const GemmCase& c) {
  INFO(c.name);
  std::mt19937 rng(2929);
  const Activation a = make_activation(rng, {c.m, c.k}, c.a_scale, c.a_zp, c.a_type, c.spread);
  std::vector<int32_t> bq, cq;
  const QRange br = range_of(c.b_type);
  const quant::Dims b_shape = c.trans_b ? quant::Dims{c.n, c.k} : quant::Dims{c.k, c.n};
  Tensor bt = c.b_type == DType::Int8 ? random_ints<int8_t>(rng, b_shape, -127, 127, bq)
                                      : random_ints<uint8_t>(rng, b_shape, br.lo, br.hi, bq);
  Tensor ct = random_ints<int32_t>(rng, {c.n}, -1000, 1000, cq);
  std::vector<float> c_scales;
  for (float s : c.b_scales) c_scales.push_back(c.a_scale * s);
  auto b_scale = [&](int64_t col) { return c.b_scales[c.b_scales.size() == 1 ? 0 : static_cast<size_t>(col)]; };

  QdqGraph lowered, reference;
  for (QdqGraph* g : {&lowered, &reference}) {
    Value* ad = g->qdq(g->input("a"), c.a_scale, c.a_zp, c.a_type);
    // Per column of op(B): axis 1 of B, axis 0 of B transposed.
    Value* bd = dequantized_constant(*g, "b", bt, c.b_scales, std::vector<int32_t>(c.b_scales.size(), c.b_zp),
                                     c.trans_b ? 0 : 1);
    Value* cd = dequantized_constant(*g, "c", ct, c_scales, std::vector<int32_t>(c_scales.size(), 0), 0);
    Value* y = g->op("Gemm", {ad, bd, cd}, "y");
    y->producer->attributes["transB"] = quant::ir::Attribute::of_int(c.trans_b ? 1 : 0);
    if (c.relu) y = g->op("Relu", {y}, "r");
    g->g.outputs = {quantize(*g, y, c.y_scale, c.y_zp, c.y_type)};
  }
  auto l = passes::lower_qdq(lowered.g, {passes::LowerTarget::Interpreter, nullptr, true});
  REQUIRE(l.has_value());
  REQUIRE(l->lowered.count("y_node"));
  CHECK_THAT(l->lowered.at("y_node"), Catch::StartsWith("com.microsoft.QGemm"));
  CHECK(l->float_reasons.empty());

  const auto lo = run_graph(lowered.g, {a.x}), ref = run_graph(reference.g, {a.x});

  std::vector<int64_t> acc;
  std::vector<double> abs_acc;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      int64_t sum = cq[static_cast<size_t>(j)];
      double mag = std::abs(static_cast<double>(sum));
      for (int64_t t = 0; t < c.k; ++t) {
        const int64_t bi = c.trans_b ? j * c.k + t : t * c.n + j;
        const int64_t term = static_cast<int64_t>(a.q[static_cast<size_t>(i * c.k + t)] - c.a_zp) *
                             (bq[static_cast<size_t>(bi)] - c.b_zp);
        sum += term;
        mag += std::abs(static_cast<double>(term));
      }
      acc.push_back(sum);
      abs_acc.push_back(mag);
    }
  auto multiplier = [&](int64_t i) {
    return static_cast<double>(c.a_scale) * static_cast<double>(b_scale(i % c.n)) / static_cast<double>(c.y_scale);
  };
  const QRange yr = output_range(c.y_type, c.y_zp, c.relu);
  const Agreement ag = compare(lo[0], ref[0], acc, abs_acc, multiplier, c.k + 1, c.y_zp, yr, c.exact_scales);
  INFO(ag.outputs << " outputs, " << ag.ties << " exact ties, " << ag.different << " one step apart");
  if (c.exact_scales) CHECK(ag.ties > 0);
  CHECK(ag.different * 1000 <= ag.outputs);
  CHECK(not_saturated(ref[0], c.y_type) * 5 > ref[0].size());
}

}  // namespace

TEST_CASE("lowered QLinearConv equals the QDQ Conv run in float, bit for bit", "[passes][lower][exact]") {
  std::vector<ConvCase> cases;
  {
    ConvCase c;
    c.name = "uint8 in/out, int8 weights per channel, bias, pads";
    c.w_scales = {0.00390625f, 0.0078125f, 0.001953125f, 0.0078125f};
    cases.push_back(c);
  }
  {
    ConvCase c;
    c.name = "int8 in/out, per-tensor weights, stride 2, batch 2";
    c.x_type = DType::Int8, c.x_zp = -5, c.y_type = DType::Int8, c.y_zp = 7;
    c.batch = 2, c.stride = 2, c.h = 9, c.w = 8;
    c.w_scales = {0.0078125f};
    cases.push_back(c);
  }
  {
    ConvCase c;
    c.name = "uint8 weights with a zero point (ort-x86)";
    c.w_type = DType::UInt8, c.w_zp = 131;
    c.w_scales = {0.0078125f};
    cases.push_back(c);
  }
  {
    ConvCase c;
    c.name = "depthwise (group = channels)";
    c.cin = c.cout = c.group = 4;
    c.y_zp = 120;
    c.spread = 30;
    c.w_scales = {0.001953125f, 0.00390625f, 0.0078125f, 0.00390625f};
    cases.push_back(c);
  }
  {
    ConvCase c;
    c.name = "uint8 output at zero point 0 after a Relu (implied by saturation)";
    c.relu = true, c.y_zp = 0;
    c.w_scales = {0.00390625f, 0.0078125f, 0.001953125f, 0.0078125f};
    cases.push_back(c);
  }
  {
    ConvCase c;
    c.name = "int8 output after a Relu (output clamp)";
    c.relu = true, c.y_type = DType::Int8, c.y_zp = -3;
    c.w_scales = {0.00390625f, 0.0078125f, 0.001953125f, 0.0078125f};
    cases.push_back(c);
  }
  {
    ConvCase c;
    c.name = "scales that are not powers of two";
    c.exact_scales = false;
    c.x_scale = 0.0173f, c.y_scale = 0.0217f, c.y_zp = 131;
    c.spread = 40;
    c.w_scales = {0.00311f, 0.0047f, 0.0029f, 0.0066f};
    c.batch = 3, c.h = c.w = 10;
    cases.push_back(c);
  }
  {
    ConvCase c;
    c.name = "scales that are not powers of two, int8 output after a Relu";
    c.exact_scales = false, c.relu = true;
    c.x_scale = 0.0213f, c.y_scale = 0.0119f, c.y_type = DType::Int8, c.y_zp = -9;
    c.spread = 40;
    c.w_scales = {0.0041f, 0.0023f, 0.0057f, 0.0019f};
    c.batch = 3, c.h = c.w = 10;
    cases.push_back(c);
  }
  for (const ConvCase& c : cases) {
    DYNAMIC_SECTION(c.name) {
      check_conv(c, true);
      if (c.relu) check_conv(c, false);
    }
  }
}

TEST_CASE("lowered QGemm equals the QDQ Gemm run in float, bit for bit", "[passes][lower][exact]") {
  std::vector<GemmCase> cases;
  for (bool trans_b : {false, true}) {
    const std::string t = trans_b ? "transB 1" : "transB 0";
    {
      GemmCase c;
      c.name = t + ", per-tensor weights";
      c.trans_b = trans_b;
      c.b_scales = {0.125f};
      cases.push_back(c);
    }
    {
      GemmCase c;
      c.name = t + ", per-column weights, int8 activations";
      c.trans_b = trans_b;
      c.a_type = DType::Int8, c.a_zp = 3, c.y_type = DType::Int8, c.y_zp = -4;
      c.b_scales = {0.125f, 0.0625f, 0.25f, 0.125f, 0.03125f, 0.125f};
      cases.push_back(c);
    }
    {
      GemmCase c;
      c.name = t + ", uint8 weights with a zero point, Relu";
      c.trans_b = trans_b;
      c.b_type = DType::UInt8, c.b_zp = 126;
      c.relu = true, c.y_zp = 0;
      c.b_scales = {0.125f};
      cases.push_back(c);
    }
    {
      GemmCase c;
      c.name = t + ", int8 output after a Relu (integer Clip)";
      c.trans_b = trans_b;
      c.relu = true, c.y_type = DType::Int8, c.y_zp = -20;
      c.b_scales = {0.125f, 0.0625f, 0.25f, 0.125f, 0.03125f, 0.125f};
      cases.push_back(c);
    }
    {
      GemmCase c;
      c.name = t + ", scales that are not powers of two";
      c.trans_b = trans_b;
      c.exact_scales = false;
      c.spread = 60;
      c.a_scale = 0.0191f, c.y_scale = 0.0377f, c.y_zp = 120;
      c.b_scales = {0.0031f, 0.0067f, 0.0043f, 0.0029f, 0.0052f, 0.0011f};
      cases.push_back(c);
    }
  }
  for (const GemmCase& c : cases) {
    DYNAMIC_SECTION(c.name) { check_gemm(c); }
  }
}
