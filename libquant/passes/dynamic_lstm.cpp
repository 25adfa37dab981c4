#include "libquant/passes/dynamic_lstm.h"

#include "libquant/calib/params.h"
#include "libquant/kernels/quantize.h"

namespace quant::passes {
namespace {

// A constant float [D, 4H, K] LSTM weight quantized per gate row and stored
// transposed, [D, K, 4H], as DynamicQuantizeLSTM reads it.
struct QuantizedWeight {
  Tensor q, scale, zero_point;
  QuantParams params;
};

QuantizedWeight quantize_transposed(const Tensor& w, bool uint8_weights) {
  const int64_t D = w.dim(0), G = w.dim(1), K = w.dim(2);
  Tensor rows = w;
  rows.reshape({D * G, K});
  QuantParams p = calib::choose_weight_params(rows, 0, DType::Int8, calib::Schema::Symmetric);
  std::vector<int8_t> codes(static_cast<size_t>(D * G * K));
  kernels::quantize_linear<int8_t>(rows.data<float>(), codes.data(), 1, D * G, K, p.scale.data(), nullptr, 0, D * G);
  QuantizedWeight out;
  out.q = Tensor(uint8_weights ? DType::UInt8 : DType::Int8, {D, K, G});
  for (int64_t d = 0; d < D; ++d)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t k = 0; k < K; ++k) {
        const int8_t c = codes[static_cast<size_t>((d * G + g) * K + k)];
        const int64_t at = (d * K + k) * G + g;
        if (uint8_weights) out.q.data<uint8_t>()[at] = static_cast<uint8_t>(c + 128);
        else out.q.data<int8_t>()[at] = c;
      }
  out.scale = Tensor::from_vector<float>({D, G}, p.scale);
  out.zero_point = Tensor(out.q.dtype(), {D, G});
  for (int64_t i = 0; i < D * G; ++i) {
    if (uint8_weights) out.zero_point.data<uint8_t>()[i] = 128;
    else out.zero_point.data<int8_t>()[i] = 0;
  }
  p.qtype = out.q.dtype();
  p.zero_point.assign(static_cast<size_t>(D * G), uint8_weights ? 128 : 0);
  p.axis = 2;
  out.params = std::move(p);
  return out;
}

std::string why_not(const ir::Node& n) {
  for (size_t i : {size_t{1}, size_t{2}}) {
    const Tensor* t = n.inputs.size() > i ? ir::constant_data(n.inputs[i]) : nullptr;
    if (!t || t->dtype() != DType::Float32 || t->rank() != 3)
      return std::string(i == 1 ? "W" : "R") + " is not a constant 3-D float tensor";
  }
  if (n.attr_int("layout", 0) != 0) return "layout 1 (batch-major): DynamicQuantizeLSTM is time-major only";
  const Tensor* r = ir::constant_data(n.inputs[2]);
  if (r->dim(1) != 4 * r->dim(2)) return "R is not [directions, 4*hidden, hidden]";
  const Tensor* w = ir::constant_data(n.inputs[1]);
  if (w->dim(0) != r->dim(0) || w->dim(1) != r->dim(1)) return "W and R do not fit each other";
  return "";
}

}  // namespace

std::string rewrite_lstm_dynamic(ir::Graph& g, ir::Node* n, bool uint8_weights, const ConstantMaker& constant,
                                 std::vector<TensorDecision>& tensors) {
  if (std::string why = why_not(*n); !why.empty()) return why;
  const std::string base = n->name.empty() ? n->outputs[0]->name() : n->name;
  std::vector<ir::Value*> inputs(12, nullptr);
  for (size_t i = 0; i < n->inputs.size() && i < 8; ++i) inputs[i] = n->inputs[i];
  const char* method = uint8_weights ? "absmax per gate row, int8 symmetric stored as uint8 + 128, transposed to [D, K, 4H]"
                                     : "absmax per gate row, int8 symmetric, transposed to [D, K, 4H]";
  for (size_t i : {size_t{1}, size_t{2}}) {
    const std::string& name = n->inputs[i]->name();
    QuantizedWeight qw = quantize_transposed(*ir::constant_data(n->inputs[i]), uint8_weights);
    inputs[i] = constant(name + "_quantized", std::move(qw.q));
    inputs[6 + 2 * i] = constant(name + "_scale", std::move(qw.scale));
    inputs[7 + 2 * i] = constant(name + "_zero_point", std::move(qw.zero_point));
    tensors.push_back({name, "weight", method, {0, 0}, std::move(qw.params)});
  }
  ir::Node* q = g.insert_node(n, "DynamicQuantizeLSTM", inputs, n->outputs, g.unique_name(base + "_DynamicQuantizeLSTM"),
                              "com.microsoft");
  for (const auto& [key, attr] : n->attributes)
    if (key != "layout") q->attributes[key] = attr;
  // ONNX Runtime's LSTMBase requires hidden_size (ONNX LSTM may infer it).
  if (!q->find_attribute("hidden_size"))
    q->attributes["hidden_size"] = ir::Attribute::of_int(ir::constant_data(n->inputs[2])->dim(2));
  g.opset_imports.try_emplace("com.microsoft", 1);
  return "";
}

}  // namespace quant::passes
