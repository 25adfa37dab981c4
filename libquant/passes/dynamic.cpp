#include "libquant/passes/dynamic.h"


#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <cstdio>
#include <limits>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "libquant/calib/params.h"
#include "libquant/kernels/int4_matmul.h"
#include "libquant/kernels/quantize.h"
#include "libquant/kernels/threadpool.h"
#include "libquant/kernels/weight_quant.h"
#include "libquant/onnx/model_io.h"
#include "libquant/passes/dynamic_lstm.h"
#include "libquant/passes/graph_edit.h"
#include "libquant/passes/k_order.h"

namespace quant::passes {
namespace {

ir::Value* new_value(ir::Graph& g, const std::string& base, DType dtype) {
  ir::Value* v = g.add_value(g.unique_name(base));
  v->dtype = dtype;
  return v;
}

// W [rows, cols] transposed, in 32 x 32 tiles: element by element, every
// write of a large weight missed the cache (most of a 12 GiB model's
// conversion time, DESIGN "Large models").
Tensor transposed(const Tensor& w) {
  constexpr int64_t kTile = 32;
  const int64_t r = w.dim(0), c = w.dim(1);
  Tensor t(DType::Float32, {c, r});
  const float* src = w.data<float>();
  float* dst = t.data<float>();
  for (int64_t i0 = 0; i0 < r; i0 += kTile)
    for (int64_t j0 = 0; j0 < c; j0 += kTile) {
      const int64_t i1 = std::min(r, i0 + kTile), j1 = std::min(c, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j) dst[j * r + i] = src[i * c + j];
    }
  return t;
}

// A MatMul / Gemm reduced to Y = X [.., K] x W [K, N] (+ bias [N]).
struct Linear {
  ir::Value* x = nullptr;
  // [K, N], alpha folded in: the initializer itself for MatMul (not copied: a
  // mapped weight is read once, DESIGN "Large models"), `owned` for Gemm.
  const Tensor* view = nullptr;
  Tensor owned;
  const Tensor& w() const { return view ? *view : owned; }
  std::optional<Tensor> bias;     // [N], beta folded in
  std::string why_not;            // non-empty: stays float
};

Linear as_linear(const ir::Node& n) {
  Linear l;
  const Tensor* w = n.inputs.size() > 1 ? ir::constant_data(n.inputs[1]) : nullptr;
  if (!w || w->dtype() != DType::Float32 || w->rank() != 2) {
    l.why_not = "weight is not a constant 2-D float tensor";
    return l;
  }
  l.x = n.inputs[0];
  if (!l.x || ir::constant_data(l.x)) {
    l.why_not = "input is a constant";
    return l;
  }
  if (n.op_type == "MatMul") {
    if (l.x->has_shape && l.x->shape.size() < 2) {
      l.why_not = "1-D input (MatMulInteger wants rank >= 2)";
      return l;
    }
    l.view = w;
    return l;
  }
  // Gemm (opset 7-13): Y = alpha * A' B' + beta * C.
  if (n.attr_int("transA", 0) != 0) {
    l.why_not = "Gemm with transA";
    return l;
  }
  l.owned = n.attr_int("transB", 0) ? transposed(*w) : *w;
  const float alpha = n.attr_float("alpha", 1.0f), beta = n.attr_float("beta", 1.0f);
  for (float& v : l.owned.values<float>()) v *= alpha;
  const int64_t N = l.owned.dim(1);
  if (n.inputs.size() > 2 && n.inputs[2]) {
    const Tensor* c = ir::constant_data(n.inputs[2]);
    if (!c || c->dtype() != DType::Float32 || (c->size() != N && c->size() != 1) || (c->rank() == 2 && c->dim(0) != 1)) {
      l.why_not = "Gemm C is not a constant broadcast along rows";
      return l;
    }
    Tensor b(DType::Float32, {N});
    for (int64_t i = 0; i < N; ++i) b.data<float>()[i] = beta * c->data<float>()[c->size() == 1 ? 0 : i];
    l.bias = std::move(b);
  }
  return l;
}

// NodeDecision::weight_bytes of n; `counted` holds the constants already
// counted at an earlier reader.
int64_t weight_bytes(const ir::Node& n, std::set<const ir::Value*>& counted) {
  int64_t total = 0;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (const int64_t b = float_weight_bytes(n, i); b > 0 && counted.insert(n.inputs[i]).second) total += b;
  return total;
}

// Why a node other than MatMul / Gemm / Conv / LSTM stays float.
std::string no_dynamic_form(const ir::Node& n, bool int4) {
  if (int4 && n.op_type == "Conv") return "int4 weights are for MatMul/Gemm only";
  if (int4 && n.op_type == "LSTM") return "int4 weights are for MatMul/Gemm only (LSTM takes int8: --weights int8)";
  if (n.domain.empty() && n.op_type == "GRU")
    return "GRU stays float: ONNX Runtime has no quantized GRU op (only DynamicQuantizeLSTM), and int8 weights "
           "dequantized in front of a float GRU would save no computation";
  return "no dynamic form: stays float";
}

class DynamicBuilder {
 public:
  DynamicBuilder(ir::Graph& g, const DynamicOptions& o) : g_(g), o_(o) {}
  Expected<QuantizeReport> run();

 private:
  struct DynamicInput {
    ir::Value *q, *scale, *zero_point;
  };
  DynamicInput quantized_input(ir::Node* before, ir::Value* x);
  void rewrite_int8_linear(ir::Node* n, Linear& l);
  void rewrite_int4_linear(ir::Node* n, Linear& l);
  calib::RoundedWeights round_weights(const ir::Node& n, const Tensor& wt, int64_t group, calib::SymmetricCodes codes,
                                      std::string& how);
  std::string rewrite_conv(ir::Node* n);
  ir::Value* constant(const std::string& base, Tensor t);
  ir::Value* constant_bytes(const std::string& base, DType dtype, const Dims& shape, const void* bytes);
  ir::Value* rescale(ir::Node* before, const std::string& base, ir::Value* acc, const DynamicInput& in,
                     Tensor w_scale, ir::Value* out, const std::optional<Tensor>& bias);
  void release_unused_weights(const std::vector<ir::Value*>& inputs);

  ir::Graph& g_;
  const DynamicOptions& o_;
  QuantizeReport report_;
  std::map<const ir::Value*, DynamicInput> dynamic_inputs_;  // one DynamicQuantizeLinear per activation
  std::multimap<size_t, ir::Value*> constants_by_hash_;     // content hash -> constants made
  Status spill_status_;
  // int8 codes of the weight being rewritten (DynamicOptions::spill_bytes):
  // kept from one weight to the next, so its pages are neither faulted in
  // nor zeroed again per weight (a tenth of an int8 conversion's CPU).
  std::unique_ptr<int8_t[]> codes_;
  size_t codes_size_ = 0;
};

bool same_content(const Tensor& a, DType dtype, const Dims& shape, const void* bytes) {
  return a.dtype() == dtype && a.shape() == shape && std::memcmp(a.raw(), bytes, a.byte_size()) == 0;
}

// Exporters share one initializer between layers with equal weights (PyTorch
// deduplicates them, qconvert's constant folding then copies them through
// Identity); quantized constants with equal content are stored once again.
// They are found by a hash (a map keyed by the bytes would hold a second copy
// of every weight) and compared in full when the hash matches. The hash reads
// the size and the first and last 4 KiB only: hashing every byte of every
// quantized weight was 6% of a large model's int8 conversion, and the full
// comparison decides anyway.
size_t content_hash(const void* raw, size_t n) {
  constexpr size_t kEdge = 4096;
  const auto* bytes = static_cast<const char*>(raw);
  std::hash<std::string_view> h;
  if (n <= 2 * kEdge) return h(std::string_view(bytes, n));
  return h(std::string_view(bytes, kEdge)) ^ (h(std::string_view(bytes + n - kEdge, kEdge)) * 31) ^ (n * 0x9e3779b97f4a7c15ULL);
}

ir::Value* DynamicBuilder::constant(const std::string& base, Tensor t) {
  const size_t hash = content_hash(t.raw(), t.byte_size());
  auto [first, last] = constants_by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it)
    if (same_content(*std::as_const(it->second->constant), t.dtype(), t.shape(), std::as_const(t).raw())) return it->second;
  if (o_.spill && spill_status_.is_ok()) {
    auto spilled = o_.spill(std::move(t));
    if (!spilled) spill_status_ = spilled.status();
    else t = *std::move(spilled);
  }
  ir::Value* v = add_constant(g_, base, std::move(t));
  constants_by_hash_.emplace(hash, v);
  return v;
}

// constant() for bytes in a reused buffer (DynamicOptions::spill_bytes):
// equal constants are found before anything is written, and only a new one
// is copied, straight into the data file.
ir::Value* DynamicBuilder::constant_bytes(const std::string& base, DType dtype, const Dims& shape, const void* bytes) {
  const size_t n = static_cast<size_t>(element_count(shape)) * dtype_size(dtype);
  if (!o_.spill_bytes || !spill_status_.is_ok()) {
    Tensor t(dtype, shape);
    std::memcpy(t.raw(), bytes, n);
    return constant(base, std::move(t));
  }
  const size_t hash = content_hash(bytes, n);
  auto [first, last] = constants_by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it)
    if (same_content(*std::as_const(it->second->constant), dtype, shape, bytes)) return it->second;
  auto spilled = o_.spill_bytes(dtype, shape, bytes);
  if (!spilled) {
    spill_status_ = spilled.status();
    Tensor t(dtype, shape);
    std::memcpy(t.raw(), bytes, n);
    spilled = std::move(t);
  }
  ir::Value* v = add_constant(g_, base, *std::move(spilled));
  constants_by_hash_.emplace(hash, v);
  return v;
}

// Frees the constants among a removed node's `inputs` that nothing reads any
// more, as soon as it is rewritten: a mapped float weight then leaves memory
// before the next layer is read, so the pass holds one layer at a time.
void DynamicBuilder::release_unused_weights(const std::vector<ir::Value*>& inputs) {
  for (ir::Value* v : inputs)
    if (v && v->constant && !g_.is_graph_output(v) && g_.consumers(v).empty()) v->constant.reset();
}

// Hands the heap's free pages back to the system. A layer's temporaries
// (packed codes, scales, Gemm copies) are freed once spilled, but glibc keeps
// freed chunks below its mmap threshold (which grows up to 32 MiB) in the
// heap, and fragments left between them made a streaming conversion's peak
// grow with the number of layers (DESIGN "Large models").
void return_free_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

DynamicBuilder::DynamicInput DynamicBuilder::quantized_input(ir::Node* before, ir::Value* x) {
  auto it = dynamic_inputs_.find(x);
  if (it != dynamic_inputs_.end()) return it->second;
  DynamicInput d{new_value(g_, x->name() + "_quantized", DType::UInt8), new_value(g_, x->name() + "_scale", DType::Float32),
                 new_value(g_, x->name() + "_zero_point", DType::UInt8)};
  d.q->has_shape = x->has_shape;
  d.q->shape = x->shape;
  d.q->dim_names = x->dim_names;
  g_.insert_node(before, "DynamicQuantizeLinear", {x}, {d.q, d.scale, d.zero_point},
                 g_.unique_name(x->name() + "_DynamicQuantizeLinear"));
  dynamic_inputs_[x] = d;
  return d;
}

// y = float(acc) * (x_scale * w_scale) (+ bias), written to `out`.
ir::Value* DynamicBuilder::rescale(ir::Node* before, const std::string& base, ir::Value* acc, const DynamicInput& in,
                                   Tensor w_scale, ir::Value* out, const std::optional<Tensor>& bias) {
  ir::Value* accf = new_value(g_, base + "_float", DType::Float32);
  ir::Node* cast = g_.insert_node(before, "Cast", {acc}, {accf}, g_.unique_name(base + "_Cast"));
  cast->attributes["to"] = ir::Attribute::of_int(static_cast<int64_t>(DType::Float32));
  ir::Value* ws = constant(base + "_weight_scale", std::move(w_scale));
  ir::Value* s = new_value(g_, base + "_output_scale", DType::Float32);
  g_.insert_node(before, "Mul", {in.scale, ws}, {s}, g_.unique_name(base + "_scale_Mul"));
  ir::Value* scaled = bias ? new_value(g_, base + "_scaled", DType::Float32) : out;
  g_.insert_node(before, "Mul", {accf, s}, {scaled}, g_.unique_name(base + "_Mul"));
  if (bias) {
    ir::Value* b = constant(base + "_bias", *bias);
    g_.insert_node(before, "Add", {scaled, b}, {out}, g_.unique_name(base + "_bias_Add"));
  }
  return out;
}

// W^T [N, K] rounded by the chosen method, groups of `group` along K; `how`
// gets the method's part of the report's description.
calib::RoundedWeights DynamicBuilder::round_weights(const ir::Node& n, const Tensor& wt, int64_t group,
                                                    calib::SymmetricCodes codes, std::string& how) {
  const int64_t rows = wt.dim(0), cols = wt.dim(1);
  const float* w = wt.data<float>();
  switch (o_.rounding) {
    case calib::WeightRounding::Rtn: break;
    case calib::WeightRounding::Hqq:
      how += ", hqq scales (lp 0.7 half-quadratic, zero point 0)";
      return calib::hqq_round(w, rows, cols, group, codes);
    case calib::WeightRounding::Gptq: {
      const calib::Hessian* h = nullptr;
      if (o_.hessians)
        if (auto it = o_.hessians->find(n.name); it != o_.hessians->end()) h = &it->second;
      if (!h) {
        report_.notes.push_back("gptq: " + n.describe() + " rounded to nearest: the calibration data never reached its input");
        break;
      }
      calib::GptqResult g = calib::gptq_round(w, rows, cols, group, codes, *h, o_.gptq);
      if (!g.fallback.empty()) {
        report_.notes.push_back("gptq: " + n.describe() + " rounded to nearest: " + g.fallback);
        return std::move(g.weights);
      }
      char buf[160];
      std::snprintf(buf, sizeof buf, ", gptq (damp %g%s, block %lld, %lld input rows)", g.damp,
                    o_.gptq.act_order ? ", act-order" : "", static_cast<long long>(o_.gptq.block),
                    static_cast<long long>(h->rows));
      how += buf;
      if (g.damp != o_.gptq.damp) report_.notes.push_back("gptq: " + n.describe() + ": damping raised to " + std::to_string(g.damp));
      if (g.dead_inputs)
        report_.notes.push_back("gptq: " + n.describe() + ": " + std::to_string(g.dead_inputs) + " inputs always 0 in the data");
      return std::move(g.weights);
    }
  }
  return calib::round_to_nearest(w, rows, cols, group, codes);
}

void DynamicBuilder::rewrite_int8_linear(ir::Node* n, Linear& l) {
  const Tensor& w = l.w();
  const int64_t K = w.dim(0), N = w.dim(1);
  // Symmetric int8 per output column (axis 1 of [K, N]), zero point 0.
  QuantParams p = calib::choose_weight_params(w, 1, DType::Int8, calib::Schema::Symmetric, 0, o_.threads);
  // Rows of codes split over the threads (each row is quantized alone).
  auto quantize_rows = [&](auto* out, const auto* zp) {
    kernels::in_parts(K, o_.threads, [&](int64_t r0, int64_t rows) {
      kernels::quantize_linear(w.data<float>() + r0 * N, out + r0 * N, rows, N, 1, p.scale.data(), zp, 0, N);
    });
  };
  // Streaming round to nearest: the codes go to the reused buffer and from
  // there straight to the data file; the same bytes as the tensor `q`.
  const bool reuse = o_.spill_bytes && o_.rounding == calib::WeightRounding::Rtn && o_.weight_pair_bound <= 0;
  const auto count = static_cast<size_t>(K * N);
  Tensor q(DType::Int8, reuse ? Dims{0} : Dims{K, N});
  int8_t* codes = q.data<int8_t>();
  if (reuse) {
    if (codes_size_ < count) {
      codes_.reset();
      codes_.reset(new int8_t[count]);  // not zero-filled: every byte is written next
      codes_size_ = count;
    }
    codes = codes_.get();
  }
  std::string method = "absmax per column, int8 symmetric";
  if (reuse && o_.uint8_weights) {
    // The uint8 codes at once: saturate(round(w / s) + 128) to [0, 255] is
    // the int8 code's saturate(round(w / s)) to [-128, 127] plus 128, NaN
    // included (zero point 128), so no second pass adds 128.
    const std::vector<uint8_t> zp(static_cast<size_t>(N), 128);
    quantize_rows(reinterpret_cast<uint8_t*>(codes), zp.data());
  } else if (o_.rounding == calib::WeightRounding::Rtn) {
    quantize_rows(codes, static_cast<const int8_t*>(nullptr));
  } else {
    // One group per output column: per channel.
    const calib::RoundedWeights r = round_weights(*n, transposed(w), K, calib::kInt8Symmetric, method);
    p.scale = r.scale;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < N; ++c) codes[k * N + c] = r.q[static_cast<size_t>(c * K + k)];
  }
  if (const int32_t bound = o_.weight_pair_bound; bound > 0) {
    // MatMulInteger's K pairs (2j, 2j + 1) of each column (kernels/qdot_sat16.h).
    const int64_t changed = bound_weight_pairs(KOrder::matrix(K, N), w, p, bound, q);
    if (changed) method += ", " + std::to_string(changed) + " pairs bounded to |w0| + |w1| <= " + std::to_string(bound);
  }
  const std::string base = n->name.empty() ? n->outputs[0]->name() : n->name;
  const std::string qname = n->inputs[1]->name() + "_quantized";
  DynamicInput in = quantized_input(n, l.x);
  std::vector<ir::Value*> inputs = {in.q, nullptr, in.zero_point};
  if (o_.uint8_weights) {
    // The symmetric int8 codes + 128 with zero point 128: the same values.
    if (reuse) {
      inputs[1] = constant_bytes(qname, DType::UInt8, {K, N}, codes);  // made uint8 above
    } else {
      Tensor u(DType::UInt8, {K, N});
      const int8_t* qs = q.data<int8_t>();
      uint8_t* us = u.data<uint8_t>();
      for (int64_t i = 0; i < K * N; ++i) us[i] = static_cast<uint8_t>(qs[i] + 128);
      inputs[1] = constant(qname, std::move(u));
    }
    inputs.push_back(constant(n->inputs[1]->name() + "_zero_point", Tensor::scalar<uint8_t>(128)));
    method += ", stored as uint8 + 128";
    p.qtype = DType::UInt8;
    p.zero_point.assign(static_cast<size_t>(N), 128);
  } else {
    inputs[1] = reuse ? constant_bytes(qname, DType::Int8, {K, N}, codes) : constant(qname, std::move(q));
  }
  ir::Value* acc = new_value(g_, base + "_int32", DType::Int32);
  g_.insert_node(n, "MatMulInteger", inputs, {acc}, g_.unique_name(base + "_MatMulInteger"));
  rescale(n, base, acc, in, Tensor::from_vector<float>({N}, p.scale), n->outputs[0], l.bias);
  report_.tensors.push_back({n->inputs[1]->name(), "weight", method, {0, 0}, p});
}

void DynamicBuilder::rewrite_int4_linear(ir::Node* n, Linear& l) {
  const int64_t K = l.w().dim(0), N = l.w().dim(1), G = o_.group_size;
  const int64_t nb = (K + G - 1) / G;
  Tensor scales(DType::Float32, {N * nb});
  Tensor packed(DType::UInt8, {N, nb, G / 2});
  std::string how;
  if (o_.rounding == calib::WeightRounding::Rtn) {
    // Straight from [K, N] into the blobs, in one pass over the weight: bit
    // for bit round_to_nearest of W^T then pack_int4_blocks, without W^T and
    // the codes in memory (DESIGN "Large models").
    kernels::quantize_int4_blocks_kn(l.w().data<float>(), K, N, G, packed.data<uint8_t>(), scales.data<float>());
  } else {
    const Tensor wt = transposed(l.w());  // [N, K]: groups run along K
    const calib::RoundedWeights r = round_weights(*n, wt, G, calib::kInt4Torchao, how);
    std::copy(r.scale.begin(), r.scale.end(), scales.data<float>());
    kernels::pack_int4_blocks(r.q.data(), N, K, G, packed.data<uint8_t>());
  }
  const std::string base = n->name.empty() ? n->outputs[0]->name() : n->name;
  const std::string wname = n->inputs[1]->name();
  std::vector<ir::Value*> inputs = {l.x, constant(wname + "_int4", std::move(packed)),
                                    constant(wname + "_scale", std::move(scales))};
  if (l.bias) {
    // MatMulNBits inputs: A, B, scales, zero_points, g_idx, bias.
    inputs.push_back(nullptr);
    inputs.push_back(nullptr);
    inputs.push_back(constant(wname + "_bias", *l.bias));
  }
  ir::Node* mm = g_.insert_node(n, "MatMulNBits", inputs, {n->outputs[0]}, g_.unique_name(base + "_MatMulNBits"),
                                "com.microsoft");
  mm->attributes["K"] = ir::Attribute::of_int(K);
  mm->attributes["N"] = ir::Attribute::of_int(N);
  mm->attributes["bits"] = ir::Attribute::of_int(4);
  mm->attributes["block_size"] = ir::Attribute::of_int(G);
  mm->attributes["accuracy_level"] = ir::Attribute::of_int(o_.accuracy_level);
  // The report names the initializer that holds the group scales instead of
  // listing them: N * K / G floats per weight, 1/G of the float model, were
  // most of a large model's int4 conversion memory (DESIGN "Large models").
  QuantParams p;
  p.qtype = DType::Int4;
  p.axis = 0;
  p.block_size = G;
  report_.tensors.push_back({wname, "weight",
                             "int4 symmetric per group of " + std::to_string(G) + " along K (absmax / 7.5)" + how +
                                 ", zero point 0, scales in initializer " + inputs[2]->name(),
                             {0, 0}, p});
}

// Conv -> DynamicQuantizeLinear + ConvInteger + Cast + Mul (+ Add bias).
std::string DynamicBuilder::rewrite_conv(ir::Node* n) {
  const Tensor* w = n->inputs.size() > 1 ? ir::constant_data(n->inputs[1]) : nullptr;
  if (!w || w->dtype() != DType::Float32 || w->rank() < 3) return "weight is not a constant float tensor";
  ir::Value* x = n->inputs[0];
  if (!x || ir::constant_data(x)) return "input is a constant";
  std::optional<Tensor> bias;
  if (n->inputs.size() > 2 && n->inputs[2]) {
    const Tensor* b = ir::constant_data(n->inputs[2]);
    if (!b || b->dtype() != DType::Float32) return "bias is not a constant float tensor";
    if (b->size() != w->dim(0)) return "bias does not have one value per output channel";
    bias = *b;
  }
  const int64_t M = w->dim(0), inner = w->size() / std::max<int64_t>(M, 1);
  QuantParams p = calib::choose_weight_params(*w, 0, DType::Int8, calib::Schema::Symmetric);
  // ONNX Runtime's ConvInteger takes uint8 weights with one zero point: the
  // symmetric int8 codes shifted by 128 (zero point 128) are the same values.
  std::vector<uint8_t> zp(static_cast<size_t>(M), 128);
  Tensor q(DType::UInt8, w->shape());
  kernels::quantize_linear<uint8_t>(w->data<float>(), q.data<uint8_t>(), 1, M, inner, p.scale.data(), zp.data(), 0, M);
  const std::string base = n->name.empty() ? n->outputs[0]->name() : n->name;
  DynamicInput in = quantized_input(n, x);
  ir::Value* wq = constant(n->inputs[1]->name() + "_quantized", std::move(q));
  ir::Value* wz = constant(n->inputs[1]->name() + "_zero_point", Tensor::scalar<uint8_t>(128));
  ir::Value* acc = new_value(g_, base + "_int32", DType::Int32);
  ir::Node* conv = g_.insert_node(n, "ConvInteger", {in.q, wq, in.zero_point, wz}, {acc}, g_.unique_name(base + "_ConvInteger"));
  for (const char* a : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    if (const ir::Attribute* attr = n->find_attribute(a)) conv->attributes[a] = *attr;
  // Per-channel scales and bias broadcast as [M, 1, ...] against [N, M, spatial...].
  Dims col(static_cast<size_t>(w->rank() - 1), 1);
  col[0] = M;
  Tensor scale = Tensor::from_vector<float>(col, p.scale);
  if (bias) bias->reshape(col);
  rescale(n, base, acc, in, std::move(scale), n->outputs[0], bias);
  p.qtype = DType::UInt8;
  p.zero_point.assign(static_cast<size_t>(M), 128);
  report_.tensors.push_back({n->inputs[1]->name(), "weight", "absmax per channel, int8 symmetric stored as uint8 + 128",
                             {0, 0}, p});
  return "";
}

Expected<QuantizeReport> DynamicBuilder::run() {
  const bool int4 = o_.weights == DType::Int4;
  if (const OpsetNeed need = dynamic_opset_need(o_); g_.opset() < need.required)
    return Status::bad_input("dynamic quantization needs opset >= " + std::to_string(need.required) + " (" + need.why +
                             "), the model has " + std::to_string(g_.opset()));
  if (int4) QT_RETURN_IF_ERROR(check_group_size(o_.group_size));
  QT_ASSIGN_OR_RETURN(auto order, g_.topological_order());
  bool rewrote_any = false;
  std::set<const ir::Value*> counted;
  const ConstantMaker make_constant = [this](const std::string& base, Tensor t) { return constant(base, std::move(t)); };
  for (ir::Node* n : order) {
    const bool linear = n->domain.empty() && (n->op_type == "MatMul" || n->op_type == "Gemm");
    const bool conv = n->domain.empty() && n->op_type == "Conv" && o_.conv && !int4;
    const bool lstm = n->domain.empty() && n->op_type == "LSTM" && !int4;
    std::string why;
    if (o_.exclude_nodes.count(n->name)) why = "excluded by --exclude-node";
    else if (o_.exclude_ops.count(n->op_type)) why = "excluded by --exclude-op";
    else if (!linear && !conv && !lstm)
      why = no_dynamic_form(*n, int4);
    if (why.empty() && linear) {
      Linear l = as_linear(*n);
      why = l.why_not;
      if (why.empty()) int4 ? rewrite_int4_linear(n, l) : rewrite_int8_linear(n, l);
    } else if (why.empty() && lstm) {
      why = rewrite_lstm_dynamic(g_, n, o_.uint8_weights, make_constant, report_.tensors);
    } else if (why.empty()) {
      why = rewrite_conv(n);
    }
    const char* form = int4 ? (o_.accuracy_level == 4 ? "MatMulNBits, int8 activations per row at run time x int4 weights"
                                                       : "MatMulNBits, float activations x int4 weights (weight-only)")
                       : lstm ? "com.microsoft DynamicQuantizeLSTM, X and Ht-1 quantized at run time x int8 W and R"
                       : n->op_type == "Conv" ? "DynamicQuantizeLinear + ConvInteger" : "DynamicQuantizeLinear + MatMulInteger";
    report_.nodes.push_back({n->name, n->op_type, why.empty(), why.empty() ? form : why, weight_bytes(*n, counted)});
    if (why.empty()) {
      rewrote_any = true;
      const std::vector<ir::Value*> inputs = n->inputs;
      g_.remove_node(n);
      release_unused_weights(inputs);
      if (o_.spill) return_free_memory();
    }
  }
  QT_RETURN_IF_ERROR(spill_status_);
  if (int4 && rewrote_any) g_.opset_imports.try_emplace("com.microsoft", 1);
  g_.remove_unused_values();
  QT_RETURN_IF_ERROR(g_.sort_topologically());
  QT_RETURN_IF_ERROR(ir::verify(g_));
  return report_;
}

}  // namespace

OpsetNeed dynamic_opset_need(const DynamicOptions& o) {
  if (o.weights == DType::Int4) return {};
  return {11, 11, "DynamicQuantizeLinear", ""};
}

Status check_group_size(int64_t group_size) {
  if (group_size < 16 || group_size > 256 || (group_size & (group_size - 1)) != 0)
    return Status::bad_input("group size " + std::to_string(group_size) +
                             " must be a power of two from 16 to 256 (32, 64, 128, 256 for torchao's scheme)");
  return Status::ok();
}

Expected<QuantizeReport> quantize_dynamic(ir::Graph& graph, const DynamicOptions& options) {
  DynamicBuilder builder(graph, options);
  return builder.run();
}

Expected<QuantizeReport> quantize_lstms(ir::Graph& graph, const QuantizeOptions& options) {
  QuantizeReport out;
  bool any = false;
  for (const auto& n : graph.nodes()) any |= n->domain.empty() && n->op_type == "LSTM";
  if (!any || graph.opset() < 11 || options.exclude_ops.count("LSTM")) return out;
  DynamicOptions o;
  o.conv = false;
  // The target's weight type: uint8 (int8 codes + 128) where ONNX Runtime's
  // u8 x s8 GEMMs would saturate (ort-x86), as qconvert --dynamic does.
  o.uint8_weights = options.weights == DType::UInt8;
  o.exclude_nodes = options.exclude_nodes;
  o.exclude_ops = {"MatMul", "Gemm"};
  QT_ASSIGN_OR_RETURN(QuantizeReport r, quantize_dynamic(graph, o));
  for (NodeDecision& d : r.nodes)
    if (d.quantized) out.nodes.push_back(std::move(d));
  out.tensors = std::move(r.tensors);
  return out;
}

void append_lstm_decisions(QuantizeReport&& lstms, QuantizeReport& report) {
  std::erase_if(report.nodes, [](const NodeDecision& d) { return d.op_type == "DynamicQuantizeLSTM"; });
  report.nodes.insert(report.nodes.end(), lstms.nodes.begin(), lstms.nodes.end());
  report.tensors.insert(report.tensors.end(), lstms.tensors.begin(), lstms.tensors.end());
}

int64_t initializer_bytes(const ir::Graph& graph) {
  int64_t total = 0;
  for (const ir::Value* v : graph.initializers()) {
    const Tensor& t = *v->constant;
    const bool packed = t.dtype() == DType::Int4 || t.dtype() == DType::UInt4;
    total += packed ? (t.size() + 1) / 2 : static_cast<int64_t>(t.byte_size());
  }
  // Control-flow bodies hold their initializers inline (DESIGN "Subgraphs").
  for (const auto& n : graph.nodes())
    for (const auto& [key, a] : n->attributes) {
      std::vector<const std::string*> bodies;
      if (a.kind == ir::Attribute::Kind::Graph) bodies.push_back(&a.s);
      if (a.kind == ir::Attribute::Kind::Graphs)
        for (const auto& s : a.strings) bodies.push_back(&s);
      for (const std::string* b : bodies)
        if (auto sub = onnx_io::import_subgraph(*b, graph.opset_imports)) total += initializer_bytes(*sub->graph);
    }
  return total;
}

}  // namespace quant::passes
