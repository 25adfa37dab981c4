// ai.qtool QLinearLookup (qtool-private, version 1): a unary float op on a
// quantized tensor as a table, Glow's approach to Sigmoid/Tanh/... on 8 bits.
//
//   inputs:  X (uint8/int8/uint16/int16), x_scale, x_zero_point, y_scale,
//            y_zero_point, then the float op's inputs after its first
//            (Clip's min and max), all constant
//   attrs:   op_type (the ai.onnx op), and that op's own attributes
//   output:  Y of y_zero_point's type, X's shape:
//            Y = QuantizeLinear(op(DequantizeLinear(X)), y_scale, y_zero_point)
//
// The table has one entry per value of X's type (256 or 65536) and is built
// at prepare time by running the interpreter's own float kernel for op_type on
// every dequantized value and quantizing the results, so a lookup gives
// exactly what DequantizeLinear -> op -> QuantizeLinear gives in float.
#include <cmath>
#include <cstdint>
#include <vector>

#include "libquant/interp/ops.h"
#include "libquant/interp/output.h"
#include "libquant/kernels/lookup_table.h"
#include "libquant/kernels/quantize.h"

namespace quant::interp {
namespace {

// The constant per-tensor parameters at inputs `at`, `at + 1`.
Status read_params(const ir::Node& node, size_t at, float& scale, Tensor& zero_point) {
  const Tensor* s = ir::constant_data(node.input(at));
  const Tensor* z = ir::constant_data(node.input(at + 1));
  if (!s || !z) return Status::bad_input("QLinearLookup scale and zero point (inputs " + std::to_string(at) + ", " +
                                         std::to_string(at + 1) + ") must be constants");
  if (s->dtype() != DType::Float32 || s->size() != 1 || z->size() != 1)
    return Status::bad_input("QLinearLookup needs a float32 scalar scale and a scalar zero point");
  scale = s->data<float>()[0];
  if (!(scale > 0) || !std::isfinite(scale)) return Status::bad_input("QLinearLookup scale must be positive and finite");
  const DType t = z->dtype();
  if (t != DType::UInt8 && t != DType::Int8 && t != DType::UInt16 && t != DType::Int16)
    return Status::bad_input("QLinearLookup takes uint8, int8, uint16 or int16 tensors, got " + std::string(dtype_name(t)));
  zero_point = *z;
  return Status::ok();
}

template <class F>
Status dispatch_quantized(DType t, F&& f) {
  switch (t) {
    case DType::UInt8: return f(uint8_t{});
    case DType::Int8: return f(int8_t{});
    case DType::UInt16: return f(uint16_t{});
    case DType::Int16: return f(int16_t{});
    default: return Status::bad_input("element type " + std::string(dtype_name(t)) + " is not a quantized type");
  }
}

// Every value of X's type, dequantized: entry i holds min + i.
Expected<Tensor> dequantized_domain(float scale, const Tensor& zero_point) {
  const IntRange r = *int_range(zero_point.dtype());
  const int64_t n = r.max - r.min + 1;
  Tensor x(DType::Float32, {n});
  QT_RETURN_IF_ERROR(dispatch_quantized(zero_point.dtype(), [&](auto tag) {
    using Q = decltype(tag);
    std::vector<Q> q(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) q[static_cast<size_t>(i)] = static_cast<Q>(r.min + i);
    kernels::dequantize_linear<Q>(q.data(), x.data<float>(), 1, n, 1, &scale, zero_point.data<Q>(), 0, 1);
    return Status::ok();
  }));
  return x;
}

}  // namespace

KernelResult make_qlinear_lookup(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  if (node.inputs.size() < 5) return Status::bad_input("QLinearLookup needs 5 inputs, has " + std::to_string(node.inputs.size()));
  float x_scale = 0, y_scale = 0;
  Tensor x_zp, y_zp;
  QT_RETURN_IF_ERROR(read_params(node, 1, x_scale, x_zp));
  QT_RETURN_IF_ERROR(read_params(node, 3, y_scale, y_zp));
  const std::string op = node.attr_string("op_type", "");
  KernelFactory factory = find_kernel_factory("", op);
  if (!factory) return Status::bad_input("QLinearLookup op_type '" + op + "' is not an operator the interpreter runs");

  // The float op as its own node: same attributes (minus op_type), its first
  // input the table domain, the rest the constant inputs after the parameters.
  ir::Node fn;
  fn.name = node.name;
  fn.op_type = op;
  fn.attributes = node.attributes;
  fn.attributes.erase("op_type");
  fn.inputs.push_back(node.input(0));
  fn.outputs = node.outputs;
  std::vector<const Tensor*> ins;
  QT_ASSIGN_OR_RETURN(Tensor domain, dequantized_domain(x_scale, x_zp));
  ins.push_back(&domain);
  for (size_t k = 5; k < node.inputs.size(); ++k) {
    const Tensor* t = node.inputs[k] ? ir::constant_data(node.inputs[k]) : nullptr;
    if (node.inputs[k] && !t) return Status::bad_input("QLinearLookup input '" + node.inputs[k]->name() + "' must be a constant");
    fn.inputs.push_back(node.inputs[k]);
    ins.push_back(t);
  }
  const int64_t opset = ctx.graph ? ctx.graph->opset("") : 0;
  if (opset <= 0) return Status::bad_input("QLinearLookup needs the model's ai.onnx opset for " + op);
  QT_ASSIGN_OR_RETURN(auto kernel, factory(KernelContext{fn, opset, ctx.graph, ctx.options}));
  std::vector<Tensor> outs(1);
  QT_RETURN_IF_ERROR(kernel->run(ins, outs).with_context("QLinearLookup table for " + op));
  const Tensor& values = outs[0];
  if (values.dtype() != DType::Float32 || values.size() != domain.size())
    return Status::bad_input("QLinearLookup op_type " + op + " is not an element-wise float op");

  const DType x_type = x_zp.dtype();
  Tensor table(y_zp.dtype(), {domain.size()});
  QT_RETURN_IF_ERROR(dispatch_quantized(y_zp.dtype(), [&](auto tag) {
    using Q = decltype(tag);
    kernels::quantize_linear<Q>(values.data<float>(), table.data<Q>(), 1, domain.size(), 1, &y_scale, y_zp.data<Q>(), 0, 1);
    return Status::ok();
  }));
  const int64_t x_min = int_range(x_type)->min;
  // 8 bits in and out: the table indexed by X's byte pattern, for
  // kernels::apply_lookup_table (vectors, threads).
  std::vector<uint8_t> by_bytes;
  if (domain.size() == 256 && table.byte_size() == 256) {
    by_bytes.resize(256);
    for (int64_t b = 0; b < 256; ++b) {
      const int64_t value = x_type == DType::Int8 ? static_cast<int8_t>(b) : b;
      by_bytes[static_cast<size_t>(b)] = static_cast<const uint8_t*>(table.raw())[value - x_min];
    }
  }
  const int threads = ctx.options.threads;
  return make_kernel([&node, table = std::move(table), by_bytes = std::move(by_bytes), x_type, x_min, threads](
                         std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    QT_RETURN_IF_ERROR(require_dtype(node, x, x_type, "input"));
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], table.dtype(), x.shape()));
    if (!by_bytes.empty()) {
      kernels::apply_lookup_table<uint8_t>(static_cast<const uint8_t*>(x.raw()), by_bytes.data(),
                                           static_cast<uint8_t*>(out[0].raw()), x.size(), threads);
      return Status::ok();
    }
    return dispatch_quantized(x_type, [&](auto xtag) {
      using X = decltype(xtag);
      const X* src = x.data<X>();
      return dispatch_quantized(table.dtype(), [&](auto ytag) {
        using Y = decltype(ytag);
        const Y* t = table.data<Y>();
        Y* dst = out[0].data<Y>();
        for (int64_t i = 0; i < x.size(); ++i) dst[i] = t[static_cast<int64_t>(src[i]) - x_min];
        return Status::ok();
      });
    });
  });
}

}  // namespace quant::interp
