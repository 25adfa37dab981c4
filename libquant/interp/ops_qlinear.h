// Helpers shared by the QLinear* kernels (ops_qlinear_*.cpp): reading scales
// and zero points, and building the per-node parameters (requantization
// multipliers, lookup tables) once at prepare time when the scales and zero
// points are constants of the graph (the usual case), or per run otherwise
// (the ONNX node tests feed them as graph inputs).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "libquant/interp/ops.h"
#include "libquant/kernels/requant.h"

namespace quant::interp {

// With QTOOL_PAIR_REPORT=1 in the environment, one line on stderr per 8-bit
// Conv / Gemm / MatMul layer whose weights are packed at prepare time: whether
// every pair of its packed weight bytes fits VPMADDUBSW's int16 (the packed
// weights' pairs_bounded(), kernels/qgemm_ukernel.h), so that the AVX2
// kernels run it with VPMADDUBSW ("K tap major": bounded in that K order,
// ONNX Runtime's); depthwise convolutions take their own kernel whatever the
// pairs. For counting qualifying layers (DESIGN "Kernels"); the tap-major
// packing is tried only for an ISA with a pairs kernel (QTOOL_ISA=avx2 on a
// wider host).
inline void report_weight_pairs(const ir::Node& node, bool bounded, bool depthwise, bool tap_major = false) {
  static const bool on = [] {
    const char* v = std::getenv("QTOOL_PAIR_REPORT");
    return v && *v && std::string(v) != "0";
  }();
  if (!on) return;
  std::fprintf(stderr, "weight pairs: %s %s: %s%s%s\n", node.op_type.c_str(), node.name.c_str(),
               bounded ? "bounded" : "not bounded", tap_major ? " (K tap major)" : "",
               depthwise ? " (depthwise kernel, not a GEMM)" : "");
}

// A per-tensor scale: float32, one element, positive and finite.
[[gnu::noinline]] inline Expected<float> scalar_scale(const Tensor* t, const char* what) {
  if (!t) return Status::bad_input(std::string(what) + " is missing");
  if (t->dtype() != DType::Float32 || t->size() != 1)
    return Status::bad_input(std::string(what) + " must be one float32 value, got " + std::string(dtype_name(t->dtype())) +
                             " " + dims_to_string(t->shape()));
  const float s = t->data<float>()[0];
  if (!(s > 0) || !std::isfinite(s)) return Status::bad_input(std::string(what) + " must be positive and finite, got " + std::to_string(s));
  return s;
}

// A per-tensor zero point of type `want` (one element); absent means 0.
[[gnu::noinline]] inline Expected<int32_t> scalar_zero_point(const Tensor* t, DType want, const char* what) {
  if (!t) return 0;
  if (t->dtype() != want || t->size() != 1)
    return Status::bad_input(std::string(what) + " must be one " + std::string(dtype_name(want)) + " value, got " +
                             std::string(dtype_name(t->dtype())) + " " + dims_to_string(t->shape()));
  return static_cast<int32_t>(t->as_int64(0));
}

// The requantization of an integer product: multipliers in_scale * w_scale[i]
// / out_scale, in that order; every w_scale must be positive and finite.
// Float mode computes them in float32, as ONNX Runtime's QLinearConv and
// QLinearMatMul do; FixedPoint in double, as TFLite does before splitting
// them into multiplier and shift (tensorflow/lite/kernels/kernel_util.cc,
// PopulateConvolutionQuantizationParams) and as ExecuTorch's Arm backend
// does for TOSA RESCALE (Python floats).
[[gnu::noinline]] inline Expected<kernels::Requantizer> product_requantizer(kernels::RequantMode mode, float in_scale, const Tensor& w_scale,
                                                         const char* what, float out_scale, int32_t out_zero_point) {
  std::vector<float> multipliers;
  std::vector<double> exact;
  for (float s : w_scale.values<float>()) {
    if (!(s > 0) || !std::isfinite(s)) return Status::bad_input(std::string(what) + " must be positive and finite, got " + std::to_string(s));
    const float m = in_scale * s / out_scale;
    if (!std::isfinite(m)) return Status::bad_input("requantization multiplier " + std::string(what) + " * input scale / output scale overflows float32");
    multipliers.push_back(m);
    exact.push_back(static_cast<double>(in_scale) * static_cast<double>(s) / static_cast<double>(out_scale));
  }
  if (mode == kernels::RequantMode::FixedPoint) return kernels::make_requantizer(mode, std::span<const double>(exact), out_zero_point);
  return kernels::make_requantizer(mode, std::span<const float>(multipliers), out_zero_point);
}

// A Relu/Clip that qrun's lowering folded into a QLinearConv / QLinearMatMul
// (passes/lower_qdq.h) arrives as the attributes activation_min /
// activation_max, the Clip's bounds in the integer output domain; they narrow
// the requantization's saturation (Requantizer::clamp_lo / clamp_hi).
inline void apply_folded_activation(const ir::Node& node, kernels::Requantizer& r) {
  if (const ir::Attribute* a = node.find_attribute("activation_min")) r.clamp_lo = static_cast<int32_t>(a->i);
  if (const ir::Attribute* a = node.find_attribute("activation_max")) r.clamp_hi = static_cast<int32_t>(a->i);
}

// Every element of an integer tensor as int32 (zero points).
inline std::vector<int32_t> int32_values(const Tensor& t) {
  std::vector<int32_t> v;
  for (int64_t i = 0; i < t.size(); ++i) v.push_back(static_cast<int32_t>(t.as_int64(i)));
  return v;
}

inline bool is_8bit(DType t) { return t == DType::UInt8 || t == DType::Int8; }
inline bool is_16bit(DType t) { return t == DType::UInt16 || t == DType::Int16; }

inline kernels::RequantMode requant_mode(const KernelContext& ctx) {
  return ctx.options.requant == Requant::FixedPoint ? kernels::RequantMode::FixedPoint : kernels::RequantMode::Float;
}

// Parameters built from some of a node's inputs (scales, zero points).
// `build(inputs)` reads only the inputs listed in `param_inputs`. When all of
// them are constants of the graph, it runs once here, at prepare time (errors
// surface when the model is loaded); otherwise `get` runs it on each run's
// inputs.
template <class Params, class Build>
class PreparedParams {
 public:
  static Expected<PreparedParams> create(const ir::Node& node, std::vector<size_t> param_inputs, Build build) {
    PreparedParams p(std::move(build));
    for (size_t i : param_inputs) p.needed_ = std::max(p.needed_, i + 1);
    std::vector<const Tensor*> constants(std::max(node.inputs.size(), p.needed_), nullptr);
    for (size_t i : param_inputs) {
      const ir::Value* v = node.input(i);
      if (!v) continue;  // omitted optional input
      const Tensor* c = ir::constant_data(v);
      if (!c) return p;
      constants[i] = c;
    }
    QT_ASSIGN_OR_RETURN(Params params, p.build_(std::span<const Tensor* const>(constants)));
    p.fixed_ = std::move(params);
    return p;
  }

  // The parameters for this run's inputs: the prepared ones, or `scratch`
  // filled from `inputs` (padded with nullptr up to the highest parameter
  // input, so that builders may index omitted trailing inputs).
  Expected<const Params*> get(std::span<const Tensor* const> inputs, std::optional<Params>& scratch) const {
    if (fixed_) return &*fixed_;
    std::vector<const Tensor*> padded(inputs.begin(), inputs.end());
    if (padded.size() < needed_) padded.resize(needed_, nullptr);
    QT_ASSIGN_OR_RETURN(Params params, build_(std::span<const Tensor* const>(padded)));
    scratch = std::move(params);
    return &*scratch;
  }

 private:
  explicit PreparedParams(Build build) : build_(std::move(build)) {}
  Build build_;
  size_t needed_ = 0;
  std::optional<Params> fixed_;
};

template <class Params, class Build>
Expected<PreparedParams<Params, Build>> prepare_params(const ir::Node& node, std::vector<size_t> param_inputs, Build build) {
  return PreparedParams<Params, Build>::create(node, std::move(param_inputs), std::move(build));
}

// bad_input naming the first of `indices` that is missing from a run's inputs.
inline Status require_present(const ir::Node& node, std::span<const Tensor* const> in, std::initializer_list<size_t> indices) {
  for (size_t i : indices)
    if (i >= in.size() || !in[i]) return Status::bad_input(node.op_type + " needs input " + std::to_string(i) + ", which is missing");
  return Status::ok();
}

// Input i of a run, or nullptr when omitted.
inline const Tensor* optional_input(std::span<const Tensor* const> in, size_t i) { return i < in.size() ? in[i] : nullptr; }

// "<what> must be <want>, got <t>". Not inlined, as the checks above are
// not: GCC 12 at -O2 and -O3 took their string concatenations, inlined
// into a caller, for writes past a std::string (-Warray-bounds, a false
// positive like GCC bug 105329), depending on what else that caller
// inlined (ops_qlinear_conv.cpp's kernel lambda did once the AMX kernels
// came in). They run once per node, not per element.
[[gnu::noinline]] inline Status wrong_type(const char* what, const char* want, DType t) {
  std::string message = what;
  message += " must be ";
  message += want;
  message += ", got ";
  message += dtype_name(t);
  return Status::bad_input(message);
}

// Calls f(T{}) for T = uint8_t or int8_t.
template <class F>
Status dispatch_8bit(DType t, const char* what, F&& f) {
  switch (t) {
    case DType::UInt8: return f(uint8_t{});
    case DType::Int8: return f(int8_t{});
    default: return wrong_type(what, "uint8 or int8", t);
  }
}

// Calls f(T{}) for T = uint16_t or int16_t.
template <class F>
Status dispatch_16bit(DType t, const char* what, F&& f) {
  switch (t) {
    case DType::UInt16: return f(uint16_t{});
    case DType::Int16: return f(int16_t{});
    default: return wrong_type(what, "uint16 or int16", t);
  }
}

// Whether a product of x (activation) and w (weights) types with output type
// y runs on the 16-bit kernels (kernels/qwide.h): 16-bit x and y of one type,
// 8-bit w. Beyond ONNX's QLinearConv / QLinearMatMul / QGemm, which take
// 8-bit tensors only: qrun's lowering writes these for 16-bit targets.
inline bool is_wide_product(DType x, DType w, DType y) { return is_16bit(x) && x == y && is_8bit(w); }

}  // namespace quant::interp
