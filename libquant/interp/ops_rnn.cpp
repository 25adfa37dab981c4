// RNN, GRU, LSTM (ONNX opset 7 and 14; 14 adds `layout`). Attributes are
// parsed once; the cell maths is in kernels/rnn.cpp, one direction at a time
// on time-major buffers.
#include <algorithm>
#include <cctype>

#include "libquant/interp/ops.h"
#include "libquant/interp/rnn_attrs.h"
#include "libquant/kernels/rnn.h"

namespace quant::interp {
namespace {

using kernels::RnnActivation;
using kernels::RnnActivationKind;

struct CellInfo {
  const char* op;
  int64_t gates;                       // weight blocks per direction
  std::vector<std::string> defaults;   // default activations of one direction
};

CellInfo cell_info(Cell c) {
  switch (c) {
    case Cell::Rnn: return {"RNN", 1, {"Tanh"}};
    case Cell::Gru: return {"GRU", 3, {"Sigmoid", "Tanh"}};
    case Cell::Lstm: return {"LSTM", 4, {"Sigmoid", "Tanh", "Tanh"}};
  }
  return {"?", 1, {}};
}

// Activation names and their alpha/beta use, with the defaults of the ONNX
// operators of the same name. Each function that takes alpha (beta) consumes
// the next value of activation_alpha (activation_beta), else its default, as
// ONNX Runtime does (the spec says only "consumed in the order of activation
// functions").
struct ActivationSpec {
  const char* name;
  RnnActivationKind kind;
  bool has_alpha, has_beta;
  float alpha, beta;
};

constexpr ActivationSpec kActivations[] = {
    {"sigmoid", RnnActivationKind::Sigmoid, false, false, 0, 0},
    {"tanh", RnnActivationKind::Tanh, false, false, 0, 0},
    {"relu", RnnActivationKind::Relu, false, false, 0, 0},
    {"affine", RnnActivationKind::Affine, true, true, 1.0f, 0.0f},
    {"leakyrelu", RnnActivationKind::LeakyRelu, true, false, 0.01f, 0},
    {"thresholdedrelu", RnnActivationKind::ThresholdedRelu, true, false, 1.0f, 0},
    {"scaledtanh", RnnActivationKind::ScaledTanh, true, true, 1.0f, 1.0f},
    {"hardsigmoid", RnnActivationKind::HardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", RnnActivationKind::Elu, true, false, 1.0f, 0},
    {"softsign", RnnActivationKind::Softsign, false, false, 0, 0},
    {"softplus", RnnActivationKind::Softplus, false, false, 0, 0},
};


Expected<std::vector<RnnActivation>> parse_activations(const ir::Node& node, const CellInfo& info, int64_t directions) {
  std::vector<std::string> names;
  if (const ir::Attribute* a = node.find_attribute("activations")) names = a->strings;
  const size_t per_dir = info.defaults.size();
  if (names.empty()) {
    for (int64_t d = 0; d < directions; ++d) names.insert(names.end(), info.defaults.begin(), info.defaults.end());
  } else if (names.size() == per_dir && directions == 2) {
    // One set for both directions: ONNX Runtime repeats it.
    std::vector<std::string> twice = names;
    twice.insert(twice.end(), names.begin(), names.end());
    names = twice;
  }
  if (names.size() != per_dir * static_cast<size_t>(directions)) {
    return Status::bad_input(std::string(info.op) + " needs " + std::to_string(per_dir * static_cast<size_t>(directions)) +
                             " activations (" + std::to_string(per_dir) + " per direction), got " +
                             std::to_string(names.size()));
  }
  const std::vector<float> alphas = [&] {
    const ir::Attribute* a = node.find_attribute("activation_alpha");
    return a ? a->floats : std::vector<float>{};
  }();
  const std::vector<float> betas = [&] {
    const ir::Attribute* a = node.find_attribute("activation_beta");
    return a ? a->floats : std::vector<float>{};
  }();
  size_t next_alpha = 0, next_beta = 0;
  std::vector<RnnActivation> out;
  for (const std::string& name : names) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const ActivationSpec* spec = nullptr;
    for (const auto& s : kActivations)
      if (lower == s.name) spec = &s;
    if (!spec) return Status::bad_input(std::string(info.op) + " activation '" + name + "' is not one ONNX defines");
    RnnActivation act{spec->kind, spec->alpha, spec->beta};
    if (spec->has_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (spec->has_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    out.push_back(act);
  }
  return out;
}

}  // namespace

Expected<RnnAttrs> parse_rnn_attrs(const KernelContext& ctx, Cell cell) {
  const ir::Node& node = ctx.node;
  const CellInfo info = cell_info(cell);
  RnnAttrs a{};
  a.cell = cell;
  a.gates = info.gates;
  const std::string direction = node.attr_string("direction", "forward");
  if (direction == "forward" || direction == "reverse") {
    a.directions = 1;
    a.reverse = direction == "reverse";
  } else if (direction == "bidirectional") {
    a.directions = 2;
  } else {
    return Status::bad_input(std::string(info.op) + " direction '" + direction + "' is not forward, reverse or bidirectional");
  }
  a.hidden_size = node.attr_int("hidden_size", -1);
  if (node.find_attribute("hidden_size") && a.hidden_size < 1)
    return Status::bad_input(std::string(info.op) + " hidden_size must be >= 1");
  a.layout = ctx.opset >= 14 ? node.attr_int("layout", 0) : 0;
  if (a.layout != 0 && a.layout != 1) return Status::bad_input(std::string(info.op) + " layout must be 0 or 1");
  a.clip = node.attr_float("clip", 0.0f);
  if (node.find_attribute("clip") && !(a.clip > 0.0f)) return Status::bad_input(std::string(info.op) + " clip must be > 0");
  a.linear_before_reset = node.attr_int("linear_before_reset", 0) != 0;
  a.input_forget = node.attr_int("input_forget", 0) != 0;
  QT_ASSIGN_OR_RETURN(a.activations, parse_activations(node, info, a.directions));
  return a;
}

Status require_rnn_shape(const char* op, const Tensor* t, const Dims& want, const char* what) {
  if (!t) return Status::ok();
  if (t->dtype() != DType::Float32 && std::string(what) != "sequence_lens")
    return Status::bad_input(std::string(op) + " " + what + " must be float32, got " + std::string(dtype_name(t->dtype())));
  if (t->shape() != want)
    return Status::bad_input(std::string(op) + " " + what + " has shape " + dims_to_string(t->shape()) + ", expected " +
                             dims_to_string(want));
  return Status::ok();
}

Expected<RnnOptionalInputs> rnn_optional_inputs(const ir::Node& node, const RnnAttrs& a, std::span<const Tensor* const> in,
                                                int64_t S, int64_t N, int64_t H) {
  const char* op = cell_info(a.cell).op;
  auto input = [&](size_t i) { return i < in.size() ? in[i] : nullptr; };
  const int64_t D = a.directions, GH = a.gates * H;
  RnnOptionalInputs o;
  o.bias = input(3);
  o.lens = input(4);
  o.h0 = input(5);
  o.c0 = a.cell == Cell::Lstm ? input(6) : nullptr;
  o.peephole = a.cell == Cell::Lstm ? input(7) : nullptr;
  const Dims state_shape = a.layout == 0 ? Dims{D, N, H} : Dims{N, D, H};
  QT_RETURN_IF_ERROR(require_rnn_shape(op, o.bias, {D, 2 * GH}, "B"));
  QT_RETURN_IF_ERROR(require_rnn_shape(op, o.lens, {N}, "sequence_lens"));
  QT_RETURN_IF_ERROR(require_rnn_shape(op, o.h0, state_shape, "initial_h"));
  QT_RETURN_IF_ERROR(require_rnn_shape(op, o.c0, state_shape, "initial_c"));
  QT_RETURN_IF_ERROR(require_rnn_shape(op, o.peephole, {D, 3 * H}, "P"));
  if (o.lens) {
    QT_RETURN_IF_ERROR(require_dtype(node, *o.lens, DType::Int32, "sequence_lens"));
    for (int32_t l : o.lens->values<int32_t>())
      if (l < 0 || l > S)
        return Status::bad_input(std::string(op) + " sequence_lens value " + std::to_string(l) + " is outside [0, " +
                                 std::to_string(S) + "]");
  }
  // Refuse sizes whose scratch memory alone would exceed 4 GiB.
  if (static_cast<double>(S + 2) * static_cast<double>(N + 1) * static_cast<double>(GH) > static_cast<double>(int64_t{1} << 30))
    return Status::bad_input(std::string(op) + " is too large: sequence " + std::to_string(S) + " x batch " +
                             std::to_string(N) + " x " + std::to_string(GH) + " gate values");
  return o;
}

namespace {

// dst[b][a][:] = src[a][b][:] for src [A, B, inner].
void swap_leading_axes(const float* src, int64_t A, int64_t B, int64_t inner, float* dst) {
  for (int64_t i = 0; i < A; ++i)
    for (int64_t j = 0; j < B; ++j) std::copy(src + (i * B + j) * inner, src + (i * B + j + 1) * inner, dst + (j * A + i) * inner);
}

// The RNN family's shared run: validates shapes, converts layout 1 to the
// kernels' time-major layout, runs each direction and converts back.
Status run_recurrent(const ir::Node& node, const RnnAttrs& a, std::span<const Tensor* const> in, std::vector<Tensor>& out) {
  const char* op = cell_info(a.cell).op;
  QT_RETURN_IF_ERROR(require_inputs(node, in, 3));
  const Tensor& x = *in[0];
  const Tensor& w = *in[1];
  const Tensor& r = *in[2];
  QT_RETURN_IF_ERROR(require_dtype(node, x, DType::Float32, "X"));
  QT_RETURN_IF_ERROR(require_dtype(node, w, DType::Float32, "W"));
  QT_RETURN_IF_ERROR(require_dtype(node, r, DType::Float32, "R"));
  if (x.rank() != 3) return Status::bad_input(std::string(op) + " X must be 3-D, got " + dims_to_string(x.shape()));
  if (r.rank() != 3) return Status::bad_input(std::string(op) + " R must be 3-D, got " + dims_to_string(r.shape()));
  const int64_t D = a.directions;
  const int64_t H = a.hidden_size > 0 ? a.hidden_size : r.dim(2);
  const int64_t S = a.layout == 0 ? x.dim(0) : x.dim(1);
  const int64_t N = a.layout == 0 ? x.dim(1) : x.dim(0);
  const int64_t I = x.dim(2);
  const int64_t GH = a.gates * H;
  QT_RETURN_IF_ERROR(require_rnn_shape(op, &w, {D, GH, I}, "W"));
  QT_RETURN_IF_ERROR(require_rnn_shape(op, &r, {D, GH, H}, "R"));
  QT_ASSIGN_OR_RETURN(const RnnOptionalInputs opt, rnn_optional_inputs(node, a, in, S, N, H));
  const Tensor* bias = opt.bias;
  const Tensor* lens = opt.lens;
  const Tensor* h0 = opt.h0;
  const Tensor* c0 = opt.c0;
  const Tensor* peep = opt.peephole;
  const kernels::RnnDims dims{S, N, I, H};

  // Time-major copies for layout 1 (transposes of tensors that exist; the
  // outputs below are checked against the size limit).
  Tensor x_tm, h0_tm, c0_tm;
  const float* xp = x.data<float>();
  const float* h0p = h0 ? h0->data<float>() : nullptr;
  const float* c0p = c0 ? c0->data<float>() : nullptr;
  if (a.layout == 1) {
    x_tm = Tensor(DType::Float32, {S, N, I});
    swap_leading_axes(xp, N, S, I, x_tm.data<float>());
    xp = x_tm.data<float>();
    if (h0) {
      h0_tm = Tensor(DType::Float32, {D, N, H});
      swap_leading_axes(h0p, N, D, H, h0_tm.data<float>());
      h0p = h0_tm.data<float>();
    }
    if (c0) {
      c0_tm = Tensor(DType::Float32, {D, N, H});
      swap_leading_axes(c0p, N, D, H, c0_tm.data<float>());
      c0p = c0_tm.data<float>();
    }
  }
  const bool want_y = !out.empty() && node.outputs[0] != nullptr;
  const bool want_h = out.size() > 1 && node.outputs[1] != nullptr;
  const bool want_c = a.cell == Cell::Lstm && out.size() > 2 && node.outputs[2] != nullptr;
  // Time-major results: Y [S, D, N, H], Y_h / Y_c [D, N, H].
  QT_ASSIGN_OR_RETURN(Tensor y, Tensor::create(DType::Float32, want_y ? Dims{S, D, N, H} : Dims{0}));
  QT_ASSIGN_OR_RETURN(Tensor y_h, Tensor::create(DType::Float32, want_h ? Dims{D, N, H} : Dims{0}));
  QT_ASSIGN_OR_RETURN(Tensor y_c, Tensor::create(DType::Float32, want_c ? Dims{D, N, H} : Dims{0}));
  std::vector<float> workspace(static_cast<size_t>(kernels::rnn_workspace_size(dims, a.gates)));
  const int64_t per_dir = static_cast<int64_t>(a.activations.size()) / D;
  for (int64_t d = 0; d < D; ++d) {
    kernels::RnnDirection io;
    io.x = xp;
    io.w = w.data<float>() + d * GH * I;
    io.r = r.data<float>() + d * GH * H;
    io.wb = bias ? bias->data<float>() + d * 2 * GH : nullptr;
    io.rb = bias ? io.wb + GH : nullptr;
    io.peephole = peep ? peep->data<float>() + d * 3 * H : nullptr;
    io.seq_lens = lens ? lens->data<int32_t>() : nullptr;
    io.h0 = h0p ? h0p + d * N * H : nullptr;
    io.c0 = c0p ? c0p + d * N * H : nullptr;
    io.y = want_y ? y.data<float>() + d * N * H : nullptr;
    io.y_time_stride = D * N * H;
    io.y_h = want_h ? y_h.data<float>() + d * N * H : nullptr;
    io.y_c = want_c ? y_c.data<float>() + d * N * H : nullptr;
    io.reverse = a.reverse || d == 1;
    io.clip = a.clip;
    const RnnActivation* act = a.activations.data() + d * per_dir;
    switch (a.cell) {
      case Cell::Rnn: kernels::rnn_cell_f32(dims, io, act[0], workspace.data()); break;
      case Cell::Gru: kernels::gru_cell_f32(dims, io, act[0], act[1], a.linear_before_reset, workspace.data()); break;
      case Cell::Lstm: kernels::lstm_cell_f32(dims, io, act[0], act[1], act[2], a.input_forget, workspace.data()); break;
    }
  }
  if (a.layout == 1) {
    // Y [S, D, N, H] -> [N, S, D, H]; states [D, N, H] -> [N, D, H].
    if (want_y) {
      Tensor y_bm(DType::Float32, {N, S, D, H});
      swap_leading_axes(y.data<float>(), S * D, N, H, y_bm.data<float>());
      y = std::move(y_bm);
    }
    auto to_batch_major = [&](Tensor& t) {
      Tensor bm(DType::Float32, {N, D, H});
      swap_leading_axes(t.data<float>(), D, N, H, bm.data<float>());
      t = std::move(bm);
    };
    if (want_h) to_batch_major(y_h);
    if (want_c) to_batch_major(y_c);
  }
  if (want_y) out[0] = std::move(y);
  if (want_h) out[1] = std::move(y_h);
  if (want_c) out[2] = std::move(y_c);
  return Status::ok();
}

KernelResult make_recurrent(const KernelContext& ctx, Cell cell) {
  QT_ASSIGN_OR_RETURN(RnnAttrs attrs, parse_rnn_attrs(ctx, cell));
  const ir::Node& node = ctx.node;
  return make_kernel([&node, attrs](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    return run_recurrent(node, attrs, in, out);
  });
}

}  // namespace

KernelResult make_rnn(const KernelContext& ctx) { return make_recurrent(ctx, Cell::Rnn); }
KernelResult make_gru(const KernelContext& ctx) { return make_recurrent(ctx, Cell::Gru); }
KernelResult make_lstm(const KernelContext& ctx) { return make_recurrent(ctx, Cell::Lstm); }

}  // namespace quant::interp
