// qconvert --dynamic on LSTM: the node becomes com.microsoft
// DynamicQuantizeLSTM with int8 W/R transposed to [D, K, 4H], and qrun's
// integer kernel for it stays close to the float LSTM (SNR). ONNX Runtime
// itself runs the same models in tests/interop/test_dynamic_lstm_ort.sh.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "libquant/interp/saturation.h"
#include "libquant/interp/session.h"
#include "libquant/passes/dynamic.h"

namespace {

using quant::Dims;
using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;
using quant::ir::Graph;

struct LstmCase {
  std::string direction = "forward";
  bool bias = false, lens = false, initial = false, peephole = false;
  int64_t S = 6, N = 3, I = 8, H = 16;
  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
};

Tensor random_tensor(Dims shape, float scale, std::mt19937& rng) {
  Tensor t(DType::Float32, std::move(shape));
  std::normal_distribution<float> dist(0.0f, scale);
  for (float& v : t.values<float>()) v = dist(rng);
  return t;
}

quant::ir::Value* constant(Graph& g, const std::string& name, Tensor t) {
  quant::ir::Value* v = g.add_value(name);
  v->dtype = t.dtype();
  v->has_shape = true;
  v->shape = t.shape();
  v->constant = std::make_unique<Tensor>(std::move(t));
  return v;
}

// X [S, N, I] -> LSTM -> Y, Y_h, Y_c, weights N(0, 0.3).
std::unique_ptr<Graph> lstm_graph(const LstmCase& c, const std::string& op = "LSTM") {
  std::mt19937 rng(42);
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 14;
  const int64_t D = c.dirs(), G = (op == "GRU" ? 3 : 4) * c.H;
  quant::ir::Value* x = g->add_value("x");
  x->dtype = DType::Float32;
  x->has_shape = true;
  x->shape = {c.S, c.N, c.I};
  g->inputs.push_back(x);
  std::vector<quant::ir::Value*> in = {x, constant(*g, "W", random_tensor({D, G, c.I}, 0.3f, rng)),
                                       constant(*g, "R", random_tensor({D, G, c.H}, 0.3f, rng))};
  auto optional = [&](bool on, const std::string& name, Tensor t) { in.push_back(on ? constant(*g, name, std::move(t)) : nullptr); };
  optional(c.bias, "B", random_tensor({D, 2 * G}, 0.2f, rng));
  std::vector<int32_t> lens(static_cast<size_t>(c.N));
  for (int64_t b = 0; b < c.N; ++b) lens[static_cast<size_t>(b)] = static_cast<int32_t>(std::max<int64_t>(c.S - 2 * b, 0));
  optional(c.lens, "lens", Tensor::from_vector<int32_t>({c.N}, lens));
  optional(c.initial, "h0", random_tensor({D, c.N, c.H}, 0.5f, rng));
  if (op == "LSTM") {
    optional(c.initial, "c0", random_tensor({D, c.N, c.H}, 0.5f, rng));
    optional(c.peephole, "P", random_tensor({D, 3 * c.H}, 0.2f, rng));
  }
  while (!in.empty() && !in.back()) in.pop_back();
  std::vector<quant::ir::Value*> out;
  for (const char* name : {"Y", "Y_h", "Y_c"})
    if (op == "LSTM" || std::string(name) != "Y_c") out.push_back(g->add_value(name));
  quant::ir::Node* n = g->add_node(op, in, out, "rnn");
  n->attributes["hidden_size"] = Attribute::of_int(c.H);
  n->attributes["direction"] = Attribute::of_string(c.direction);
  g->outputs = out;
  return g;
}

std::vector<Tensor> run(const Graph& g, const Tensor& x) {
  auto session = quant::interp::Session::create(g);
  INFO(session.status().message());
  REQUIRE(session.has_value());
  auto out = (*session)->run(std::vector<Tensor>{x});
  INFO(out.status().message());
  REQUIRE(out.has_value());
  return *out;
}

double snr_db(const Tensor& ref, const Tensor& got) {
  double signal = 0, noise = 0;
  for (int64_t i = 0; i < ref.size(); ++i) {
    const double r = ref.data<float>()[i], d = r - got.data<float>()[i];
    signal += r * r;
    noise += d * d;
  }
  return noise == 0 ? 300.0 : 10 * std::log10(signal / noise);
}

const quant::ir::Node* only_node(const Graph& g) {
  REQUIRE(g.nodes().size() == 1);
  return g.nodes().front().get();
}

}  // namespace

TEST_CASE("Dynamic quantization turns LSTM into DynamicQuantizeLSTM and stays close to the float LSTM", "[passes][dynamic][lstm]") {
  // forward without bias; bidirectional with bias, sequence_lens and
  // initial_h/c; reverse with sequence_lens and peepholes.
  const int variant = GENERATE(0, 1, 2);
  LstmCase c;
  if (variant == 1) {
    c.direction = "bidirectional";
    c.bias = c.lens = c.initial = true;
  } else if (variant == 2) {
    c.direction = "reverse";
    c.lens = c.peephole = true;
  }
  INFO("direction " << c.direction);
  for (const bool u8 : {false, true}) {
    INFO("uint8 weights " << u8);
    auto g = lstm_graph(c);
    const auto float_graph = lstm_graph(c);
    quant::passes::DynamicOptions opt;
    opt.uint8_weights = u8;
    auto report = quant::passes::quantize_dynamic(*g, opt);
    INFO(report.status().message());
    REQUIRE(report.has_value());
    const quant::ir::Node* q = only_node(*g);
    CHECK(q->op_type == "DynamicQuantizeLSTM");
    CHECK(q->domain == "com.microsoft");
    CHECK(g->opset_imports.at("com.microsoft") == 1);
    CHECK(q->attr_int("hidden_size", -1) == c.H);
    REQUIRE(q->inputs.size() == 12);
    const int64_t D = c.dirs(), G = 4 * c.H;
    const Tensor* wq = quant::ir::constant_data(q->inputs[1]);
    const Tensor* ws = quant::ir::constant_data(q->inputs[8]);
    const Tensor* wz = quant::ir::constant_data(q->inputs[9]);
    REQUIRE((wq && ws && wz));
    CHECK(wq->shape() == Dims{D, c.I, G});
    CHECK(wq->dtype() == (u8 ? DType::UInt8 : DType::Int8));
    CHECK(ws->shape() == Dims{D, G});
    CHECK(wz->shape() == Dims{D, G});
    CHECK(quant::ir::constant_data(q->inputs[2])->shape() == Dims{D, c.H, G});
    // Dequantized W[d, k, n] is the float W[d, n, k] within half a step.
    const Tensor& w = *quant::ir::constant_data(float_graph->nodes().front()->inputs[1]);
    for (int64_t d = 0; d < D; ++d)
      for (int64_t n = 0; n < G; ++n)
        for (int64_t k = 0; k < c.I; ++k) {
          const int64_t at = (d * c.I + k) * G + n;
          const float s = ws->data<float>()[d * G + n];
          const int32_t code = u8 ? wq->data<uint8_t>()[at] - 128 : wq->data<int8_t>()[at];
          CHECK(std::abs(code * s - w.data<float>()[(d * G + n) * c.I + k]) <= 0.5001f * s);
          CHECK(wz->as_int64(d * G + n) == (u8 ? 128 : 0));
        }
    REQUIRE(report->nodes.size() == 1);
    CHECK(report->nodes[0].quantized);
    CHECK(report->tensors.size() == 2);
    const auto cov = quant::passes::weight_coverage(*report);
    CHECK(cov.total == static_cast<int64_t>((D * G * (c.I + c.H)) * sizeof(float)));
    CHECK(cov.fraction() == 1.0);

    std::mt19937 rng(5);
    const Tensor x = random_tensor({c.S, c.N, c.I}, 1.0f, rng);
    const auto ref = run(*float_graph, x);
    const auto got = run(*g, x);
    REQUIRE(got.size() == 3);
    for (size_t k = 0; k < 3; ++k) {
      INFO("output " << k);
      REQUIRE(got[k].shape() == ref[k].shape());
      CHECK(snr_db(ref[k], got[k]) > 30.0);
    }
    if (c.lens) {  // steps past an entry's length are zeros in Y, as in the float LSTM
      for (int64_t i = 0; i < ref[0].size(); ++i)
        if (ref[0].data<float>()[i] == 0.0f) CHECK(got[0].data<float>()[i] == 0.0f);
    }
  }
}

TEST_CASE("Dynamic quantization keeps GRU and batch-major LSTM float and says why", "[passes][dynamic][lstm]") {
  LstmCase c;
  auto gru = lstm_graph(c, "GRU");
  auto report = quant::passes::quantize_dynamic(*gru, {});
  REQUIRE(report.has_value());
  CHECK(only_node(*gru)->op_type == "GRU");
  REQUIRE(report->nodes.size() == 1);
  CHECK_FALSE(report->nodes[0].quantized);
  CHECK_THAT(report->nodes[0].reason, Catch::Contains("no quantized GRU"));
  const auto cov = quant::passes::weight_coverage(*report);
  CHECK(cov.quantized == 0);
  CHECK(cov.total == static_cast<int64_t>(3 * c.H * (c.I + c.H) * sizeof(float)));
  REQUIRE(cov.float_by_reason.size() == 1);
  CHECK(cov.float_by_reason.begin()->first.rfind("GRU: ", 0) == 0);

  auto batch_major = lstm_graph(c);
  batch_major->nodes().front()->attributes["layout"] = Attribute::of_int(1);
  report = quant::passes::quantize_dynamic(*batch_major, {});
  REQUIRE(report.has_value());
  CHECK(only_node(*batch_major)->op_type == "LSTM");
  CHECK_THAT(report->nodes[0].reason, Catch::Contains("time-major only"));
}

TEST_CASE("DynamicQuantizeLSTM refuses int8 weights with a non-zero zero point", "[passes][dynamic][lstm]") {
  LstmCase c;
  auto g = lstm_graph(c);
  REQUIRE(quant::passes::quantize_dynamic(*g, {}).has_value());
  Tensor& zp = *g->nodes().front()->inputs[9]->constant;
  zp.data<int8_t>()[3] = 1;
  std::mt19937 rng(5);
  auto session = quant::interp::Session::create(*g);
  REQUIRE(session.has_value());
  auto out = (*session)->run(std::vector<Tensor>{random_tensor({c.S, c.N, c.I}, 1.0f, rng)});
  REQUIRE_FALSE(out.has_value());
  CHECK(out.status().code() == quant::StatusCode::kBadInput);
  CHECK_THAT(out.status().message(), Catch::Contains("zero points of 0"));
}

TEST_CASE("A static conversion's LSTM takes the target's weight type", "[passes][dynamic][lstm]") {
  // ort-x86 (the default) gives weights as uint8 so that ONNX Runtime's
  // u8 x s8 GEMMs, which saturate on x86 without VNNI, are never used;
  // DynamicQuantizeLSTM's W and R follow (uint8 + 128), as with --dynamic.
  LstmCase c;
  for (const DType type : {DType::UInt8, DType::Int8}) {
    INFO("weights " << quant::dtype_name(type));
    auto g = lstm_graph(c);
    quant::passes::QuantizeOptions o;
    o.weights = type;
    auto report = quant::passes::quantize_lstms(*g, o);
    INFO(report.status().message());
    REQUIRE(report.has_value());
    const quant::ir::Node* q = only_node(*g);
    REQUIRE(q->op_type == "DynamicQuantizeLSTM");
    for (size_t i : {size_t{1}, size_t{2}}) {
      CHECK(quant::ir::constant_data(q->inputs[i])->dtype() == type);
      const Tensor* zp = quant::ir::constant_data(q->inputs[i == 1 ? 9 : 11]);  // W_ / R_zero_point
      CHECK(zp->as_int64(0) == (type == DType::UInt8 ? 128 : 0));
    }
  }
}

TEST_CASE("DynamicQuantizeLSTM computes as a saturating target where its weights are int8", "[passes][dynamic][lstm]") {
  // X and Ht-1 quantized to uint8 at run time times int8 W and R: MLAS's
  // AVX2 U8S8 GEMM adds neighbouring products into a saturating int16
  // (kernels/qdot_sat16.h); uint8 weights multiply exactly everywhere.
  // tests/interop/test_ort_avx2_view.sh compares the bits with ONNX Runtime.
  LstmCase c;
  c.I = 32;
  std::mt19937 rng(11);
  // Inputs of one sign: their uint8 codes sit near 255, where two products
  // of int8 weights near +-127 leave int16.
  Tensor x = random_tensor({c.S, c.N, c.I}, 1.0f, rng);
  for (float& v : x.values<float>()) v = std::fabs(v) + 2.0f;
  for (const bool u8 : {false, true}) {
    INFO("uint8 weights " << u8);
    auto g = lstm_graph(c);
    quant::passes::DynamicOptions opt;
    opt.uint8_weights = u8;
    REQUIRE(quant::passes::quantize_dynamic(*g, opt).has_value());
    const std::vector<Tensor> exact = run(*g, x);
    quant::interp::SessionOptions so;
    so.dot = quant::kernels::DotArithmetic::U8S8PairsSaturateInt16;
    so.saturation = std::make_shared<quant::interp::SaturationLog>();
    auto session = quant::interp::Session::create(*g, so);
    REQUIRE(session.has_value());
    auto out = (*session)->run(std::vector<Tensor>{x});
    REQUIRE(out.has_value());
    const auto log = so.saturation->by_node();
    double worst = 0;
    for (int64_t i = 0; i < exact[0].size(); ++i)
      worst = std::max(worst, std::fabs(double{exact[0].data<float>()[i]} - (*out)[0].data<float>()[i]));
    if (u8) {
      CHECK(log.empty());
      CHECK(worst == 0);
    } else {
      REQUIRE(log.size() == 1);
      const quant::kernels::SaturationStats& s = log.begin()->second;
      // X*W once over S*N rows, Ht-1*R at each of S steps over N rows; pairs of K.
      CHECK(s.pairs == c.S * c.N * (c.I / 2) * 4 * c.H + c.S * c.N * (c.H / 2) * 4 * c.H);
      CHECK(s.saturated > 0);
      CHECK(worst > 1e-3);
    }
  }
}
