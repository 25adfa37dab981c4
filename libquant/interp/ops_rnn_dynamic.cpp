// ONNX Runtime's com.microsoft DynamicQuantizeLSTM (contrib op version 1,
// schema in core/graph/contrib_ops/quantization_defs.cc; CPU kernel
// contrib_ops/cpu/quantization/dynamic_quantize_lstm.cc, ONNX Runtime 1.20):
// LSTM's attributes (no layout: time-major only) and inputs, with W
// [D, input_size, 4*hidden] and R [D, hidden, 4*hidden] as 8-bit constants
// (the ONNX LSTM weights transposed) followed by W_scale, W_zero_point,
// R_scale, R_zero_point ([D] per tensor or [D, 4*hidden] per column). The
// maths is in kernels/rnn_dynamic.h.
#include <algorithm>

#include "libquant/interp/dot_target.h"
#include "libquant/interp/ops.h"
#include "libquant/interp/rnn_attrs.h"
#include "libquant/kernels/rnn_dynamic.h"

namespace quant::interp {
namespace {

bool is_8bit(DType t) { return t == DType::UInt8 || t == DType::Int8; }

// One of W / R with its scale and zero point inputs, checked as ONNX
// Runtime's kernel checks them (WeightCheck, ZeroPointCheck): scales and zero
// points [D] or [D, 4*hidden]; int8 weights need zero points of 0, uint8
// weights one zero point for the whole tensor (the kernel reads the first of
// each direction).
struct QuantizedMatrix {
  const Tensor* q;
  const Tensor* scale;
  const Tensor* zero_point;
  const char* name;
};

Status check_matrix(const QuantizedMatrix& m, const Dims& shape, int64_t D, int64_t G) {
  const std::string what = m.name;
  if (!is_8bit(m.q->dtype()))
    return Status::bad_input(what + " must be int8 or uint8, got " + std::string(dtype_name(m.q->dtype())));
  if (m.q->shape() != shape)
    return Status::bad_input(what + " has shape " + dims_to_string(m.q->shape()) + ", expected " + dims_to_string(shape));
  for (const Tensor* t : {m.scale, m.zero_point}) {
    const bool per_tensor = t->shape() == Dims{D}, per_column = t->shape() == Dims{D, G};
    if (!per_tensor && !per_column)
      return Status::bad_input(what + "'s scale and zero point must have shape " + dims_to_string(Dims{D}) + " or " +
                               dims_to_string(Dims{D, G}) + ", got " + dims_to_string(t->shape()));
  }
  if (m.scale->dtype() != DType::Float32) return Status::bad_input(what + "_scale must be float32");
  if (m.zero_point->dtype() != m.q->dtype()) return Status::bad_input(what + "_zero_point must have the type of " + m.name);
  const int64_t first = m.zero_point->as_int64(0);
  for (int64_t i = 0; i < m.zero_point->size(); ++i) {
    const int64_t z = m.zero_point->as_int64(i);
    if (m.q->dtype() == DType::Int8 ? z != 0 : z != first)
      return Status::bad_input(what + "_zero_point: " +
                               (m.q->dtype() == DType::Int8 ? "int8 weights need zero points of 0"
                                                            : "uint8 weights need one zero point for the whole tensor"));
  }
  return Status::ok();
}

// Direction d of m packed (KxN, its one zero point) with its scales.
kernels::PackedQB pack_direction(const QuantizedMatrix& m, int64_t d, int64_t K, int64_t G) {
  const int64_t per_dir = m.zero_point->size() / m.q->dim(0);
  if (m.q->dtype() == DType::Int8) {
    const int8_t zp = m.zero_point->data<int8_t>()[d * per_dir];
    return kernels::PackedQB::pack<int8_t>(m.q->data<int8_t>() + d * K * G, G, kernels::BLayout::KxN, K, G, &zp, 1);
  }
  const uint8_t zp = m.zero_point->data<uint8_t>()[d * per_dir];
  return kernels::PackedQB::pack<uint8_t>(m.q->data<uint8_t>() + d * K * G, G, kernels::BLayout::KxN, K, G, &zp, 1);
}

// Direction d of int8 weights m reordered for the saturating emulation
// (their zero points are 0, check_matrix).
kernels::Sat16Weights sat_direction(const QuantizedMatrix& m, int64_t d, int64_t K, int64_t G) {
  const int8_t zp = 0;
  return kernels::Sat16Weights::from_matrix(m.q->data<int8_t>() + d * K * G, G, kernels::BLayout::KxN, K, G, &zp, 1);
}

kernels::QRnnWeights direction_weights(const QuantizedMatrix& m, const kernels::PackedQB& packed,
                                       const kernels::Sat16Weights* sat, int64_t d) {
  const int64_t per_dir = m.scale->size() / m.q->dim(0);
  return {&packed, sat, m.scale->data<float>() + d * per_dir, per_dir};
}

// `dot`: the target's arithmetic; X and Ht-1 are quantized to uint8 at run
// time, so W and R take the saturating emulation where they are int8 and
// the target saturates (DotTarget::applies).
Status run(const ir::Node& node, const RnnAttrs& a, int threads, const DotTarget& dot, std::span<const Tensor* const> in,
           std::vector<Tensor>& out) {
  QT_RETURN_IF_ERROR(require_inputs(node, in, 3));
  for (size_t i : {size_t{8}, size_t{9}, size_t{10}, size_t{11}})
    if (i >= in.size() || !in[i])
      return Status::bad_input("DynamicQuantizeLSTM input " + std::to_string(i) + " (W/R scale or zero point) is missing");
  const Tensor& x = *in[0];
  QT_RETURN_IF_ERROR(require_dtype(node, x, DType::Float32, "X"));
  if (x.rank() != 3) return Status::bad_input(std::string("DynamicQuantizeLSTM X must be 3-D, got ") + dims_to_string(x.shape()));
  const QuantizedMatrix w{in[1], in[8], in[9], "W"}, r{in[2], in[10], in[11], "R"};
  if (r.q->rank() != 3) return Status::bad_input(std::string("DynamicQuantizeLSTM R must be 3-D, got ") + dims_to_string(r.q->shape()));
  const int64_t D = a.directions, S = x.dim(0), N = x.dim(1), I = x.dim(2);
  const int64_t H = a.hidden_size > 0 ? a.hidden_size : r.q->dim(1), G = 4 * H;
  QT_RETURN_IF_ERROR(check_matrix(w, {D, I, G}, D, G));
  QT_RETURN_IF_ERROR(check_matrix(r, {D, H, G}, D, G));
  QT_ASSIGN_OR_RETURN(const RnnOptionalInputs opt, rnn_optional_inputs(node, a, in, S, N, H));
  const bool want_y = !out.empty() && node.outputs[0] != nullptr;
  const bool want_h = out.size() > 1 && node.outputs[1] != nullptr;
  const bool want_c = out.size() > 2 && node.outputs[2] != nullptr;
  QT_ASSIGN_OR_RETURN(Tensor y, Tensor::create(DType::Float32, want_y ? Dims{S, D, N, H} : Dims{0}));
  QT_ASSIGN_OR_RETURN(Tensor y_h, Tensor::create(DType::Float32, want_h ? Dims{D, N, H} : Dims{0}));
  QT_ASSIGN_OR_RETURN(Tensor y_c, Tensor::create(DType::Float32, want_c ? Dims{D, N, H} : Dims{0}));
  const kernels::RnnDims dims{S, N, I, H};
  const int64_t per_dir = static_cast<int64_t>(a.activations.size()) / D;
  kernels::QLstmScratch scratch;
  const bool sat_w = dot.applies(DType::UInt8, w.q->dtype(), false), sat_r = dot.applies(DType::UInt8, r.q->dtype(), false);
  for (int64_t d = 0; d < D; ++d) {
    const kernels::PackedQB pw = pack_direction(w, d, I, G), pr = pack_direction(r, d, H, G);
    kernels::Sat16Weights sw, sr;
    if (sat_w) sw = sat_direction(w, d, I, G);
    if (sat_r) sr = sat_direction(r, d, H, G);
    kernels::RnnDirection io;
    io.x = x.data<float>();
    io.wb = opt.bias ? opt.bias->data<float>() + d * 2 * G : nullptr;
    io.rb = opt.bias ? io.wb + G : nullptr;
    io.seq_lens = opt.lens ? opt.lens->data<int32_t>() : nullptr;
    io.h0 = opt.h0 ? opt.h0->data<float>() + d * N * H : nullptr;
    io.c0 = opt.c0 ? opt.c0->data<float>() + d * N * H : nullptr;
    io.y = want_y ? y.data<float>() + d * N * H : nullptr;
    io.y_time_stride = D * N * H;
    io.y_h = want_h ? y_h.data<float>() + d * N * H : nullptr;
    io.y_c = want_c ? y_c.data<float>() + d * N * H : nullptr;
    io.reverse = a.reverse || d == 1;
    const kernels::RnnActivation* act = a.activations.data() + d * per_dir;
    const kernels::LstmCell cell{act[0], act[1], act[2], a.input_forget,
                                 opt.peephole ? opt.peephole->data<float>() + d * 3 * H : nullptr, a.clip};
    kernels::lstm_dynamic_q8(dims, io, direction_weights(w, pw, sat_w ? &sw : nullptr, d),
                             direction_weights(r, pr, sat_r ? &sr : nullptr, d), cell, scratch, threads);
  }
  if (sat_w || sat_r) dot.record(scratch.saturation);
  if (want_y) out[0] = std::move(y);
  if (want_h) out[1] = std::move(y_h);
  if (want_c) out[2] = std::move(y_c);
  return Status::ok();
}

}  // namespace

KernelResult make_dynamic_quantize_lstm(const KernelContext& ctx) {
  QT_ASSIGN_OR_RETURN(RnnAttrs attrs, parse_rnn_attrs(ctx, Cell::Lstm));
  const ir::Node& node = ctx.node;
  if (node.find_attribute("layout"))
    return Status::bad_input("DynamicQuantizeLSTM has no layout attribute (time-major only)");
  const int threads = ctx.options.threads;
  const DotTarget dot = dot_target(ctx);
  return make_kernel([&node, attrs, threads, dot](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    return run(node, attrs, threads, dot, in, out);
  });
}

}  // namespace quant::interp
