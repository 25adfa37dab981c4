// Signal-processing ops of opset 17: DFT (and opset 20's axis input), STFT,
// HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix. Float reference
// kernels (libquant/kernels/spectral.h); quantization leaves them float.
#include <string>

#include "libquant/interp/int_args.h"
#include "libquant/interp/ops.h"
#include "libquant/kernels/spectral.h"

namespace quant::interp {
namespace {

// A scalar (rank 0 or one element) int32/int64 input.
Expected<int64_t> read_int_scalar(const ir::Node& node, const Tensor& t, const char* what) {
  QT_ASSIGN_OR_RETURN(Dims v, read_int_list(node, t, what));
  if (v.size() != 1) return Status::bad_input(node.op_type + " " + what + " must be a scalar, got " + dims_to_string(t.shape()));
  return v[0];
}

// A scalar float input.
Expected<double> read_float_scalar(const ir::Node& node, const Tensor& t, const char* what) {
  if (t.dtype() != DType::Float32 && t.dtype() != DType::Float64)
    return Status::bad_input(node.op_type + " " + what + " must be float, got " + std::string(dtype_name(t.dtype())));
  if (t.size() != 1) return Status::bad_input(node.op_type + " " + what + " must be a scalar, got " + dims_to_string(t.shape()));
  return t.as_double(0);
}

// The output_datatype attribute of the generator ops (default float32).
Expected<DType> read_output_datatype(const ir::Node& node) {
  const int64_t code = node.attr_int("output_datatype", 1);
  std::optional<DType> t = dtype_from_onnx(static_cast<int>(code));
  if (!t || *t == DType::Bool || *t == DType::Float16 || *t == DType::BFloat16 || *t == DType::Int4 || *t == DType::UInt4 ||
      *t == DType::String)
    return Status::bad_input(node.op_type + " output_datatype " + std::to_string(code) + " is not supported");
  return *t;
}

// Signals are [batch, ..., 1 | 2] float32: the last axis holds the real part or (re, im).
Status check_signal(const ir::Node& node, const Tensor& x, int64_t min_rank) {
  QT_RETURN_IF_ERROR(require_dtype(node, x, DType::Float32, "input"));
  if (x.rank() < min_rank || (x.shape().back() != 1 && x.shape().back() != 2))
    return Status::bad_input(node.op_type + " input must be [batch, ..., 1 or 2] of rank >= " + std::to_string(min_rank) +
                             ", got " + dims_to_string(x.shape()));
  return Status::ok();
}

}  // namespace

// DFT (opset 17: axis attribute, default 1; opset 20: axis input 2, default
// -2). The transform runs along `axis` of the signal (any axis but the last,
// which holds the components); dft_length pads with zeros or truncates; the
// output is complex (last axis 2). onesided keeps bins [0, n/2] and needs a
// real input (the spec: a complex input has no conjugate symmetry); inverse
// scales by 1/n (the ONNX reference op_dft.py).
KernelResult make_dft(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool axis_input = ctx.opset >= 20;
  const int64_t axis_attr = node.attr_int("axis", 1);
  const bool inverse = node.attr_int("inverse", 0) != 0, onesided = node.attr_int("onesided", 0) != 0;
  return make_kernel([&node, axis_input, axis_attr, inverse, onesided](std::span<const Tensor* const> in,
                                                                       std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    QT_RETURN_IF_ERROR(check_signal(node, x, 2));
    const int64_t r = x.rank();
    int64_t axis = axis_input ? -2 : axis_attr;
    if (axis_input && in.size() > 2 && in[2]) {
      QT_ASSIGN_OR_RETURN(axis, read_int_scalar(node, *in[2], "axis"));
    }
    // The component axis is not a signal axis: the range is [-r, -2] and [0, r - 2].
    if (axis < -r || axis > r - 2 || axis == -1)
      return Status::bad_input("DFT axis " + std::to_string(axis) + " is out of range for input " + dims_to_string(x.shape()));
    if (axis < 0) axis += r;
    const int64_t len = x.dim(axis);
    int64_t n = len;
    if (in.size() > 1 && in[1]) {
      QT_ASSIGN_OR_RETURN(n, read_int_scalar(node, *in[1], "dft_length"));
    }
    if (n < 1) return Status::bad_input("DFT dft_length must be >= 1, got " + std::to_string(n));
    const bool complex_input = x.shape().back() == 2;
    if (onesided && complex_input) return Status::bad_input("DFT onesided needs a real input, got " + dims_to_string(x.shape()));
    const int64_t n_out = onesided ? n / 2 + 1 : n;
    Dims shape = x.shape();
    shape[static_cast<size_t>(axis)] = n_out;
    shape.back() = 2;
    QT_RETURN_IF_ERROR(check_computed_shape(node, shape));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, shape));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int64_t d = axis + 1; d < r - 1; ++d) inner *= x.dim(d);
    const int64_t comp = x.shape().back();
    const kernels::DftTwiddles tw(n);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const float* src = x.data<float>() + (o * len * inner + i) * comp;
        float* dst = out[0].data<float>() + (o * n_out * inner + i) * 2;
        kernels::dft_f32(src, inner * comp, len, complex_input, tw, inverse, dst, inner * 2, n_out);
      }
    return Status::ok();
  });
}

// STFT (opset 17): signal [batch, length, 1 | 2], frame_step, optional window
// [frame_length], optional frame_length. Frame f covers samples [f * step,
// f * step + frame_length), multiplied by the window, then a DFT of length
// frame_length; frames = 1 + (length - frame_length) / step. Output [batch,
// frames, bins, 2] with bins = frame_length / 2 + 1 when onesided (default 1).
KernelResult make_stft(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool onesided = node.attr_int("onesided", 1) != 0;
  return make_kernel([&node, onesided](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    QT_RETURN_IF_ERROR(check_signal(node, x, 3));
    if (x.rank() != 3) return Status::bad_input("STFT signal must be [batch, length, 1 or 2], got " + dims_to_string(x.shape()));
    QT_ASSIGN_OR_RETURN(int64_t step, read_int_scalar(node, *in[1], "frame_step"));
    const Tensor* window = in.size() > 2 ? in[2] : nullptr;
    int64_t n = -1;
    if (in.size() > 3 && in[3]) {
      QT_ASSIGN_OR_RETURN(n, read_int_scalar(node, *in[3], "frame_length"));
    }
    if (window) {
      QT_RETURN_IF_ERROR(require_dtype(node, *window, DType::Float32, "window"));
      if (window->rank() != 1) return Status::bad_input("STFT window must be 1-D, got " + dims_to_string(window->shape()));
      if (n >= 0 && n != window->dim(0))
        return Status::bad_input("STFT frame_length " + std::to_string(n) + " differs from the window length " +
                                 std::to_string(window->dim(0)));
      n = window->dim(0);
    }
    if (n < 0) return Status::bad_input("STFT needs a window or a frame_length");
    const int64_t len = x.dim(1);
    if (step < 1 || n < 1 || n > len)
      return Status::bad_input("STFT needs frame_step >= 1 and 1 <= frame_length <= the signal length " + std::to_string(len) +
                               ", got frame_step " + std::to_string(step) + ", frame_length " + std::to_string(n));
    const bool complex_input = x.dim(2) == 2;
    if (onesided && complex_input) return Status::bad_input("STFT onesided needs a real signal, got " + dims_to_string(x.shape()));
    const int64_t frames = 1 + (len - n) / step, bins = onesided ? n / 2 + 1 : n, comp = x.dim(2);
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, {x.dim(0), frames, bins, 2}));
    const kernels::DftTwiddles tw(n);
    std::vector<float> frame(static_cast<size_t>(n * comp));
    for (int64_t b = 0; b < x.dim(0); ++b)
      for (int64_t f = 0; f < frames; ++f) {
        const float* src = x.data<float>() + (b * len + f * step) * comp;
        for (int64_t t = 0; t < n * comp; ++t)
          frame[static_cast<size_t>(t)] = src[t] * (window ? window->data<float>()[t / comp] : 1.0f);
        float* dst = out[0].data<float>() + (b * frames + f) * bins * 2;
        kernels::dft_f32(frame.data(), comp, n, complex_input, tw, /*inverse=*/false, dst, 2, bins);
      }
    return Status::ok();
  });
}

namespace {

// HannWindow, HammingWindow, BlackmanWindow (opset 17): input size (int
// scalar), attributes periodic (default 1) and output_datatype.
KernelResult make_window(const KernelContext& ctx, double a0, double a1, double a2) {
  const ir::Node& node = ctx.node;
  const bool periodic = node.attr_int("periodic", 1) != 0;
  QT_ASSIGN_OR_RETURN(DType t, read_output_datatype(node));
  return make_kernel([&node, periodic, t, a0, a1, a2](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_ASSIGN_OR_RETURN(int64_t size, read_int_scalar(node, *in[0], "size"));
    QT_RETURN_IF_ERROR(check_computed_shape(node, Dims{size}));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(t, {size}));
    return dispatch_numeric(t, [&](auto tag) {
      using T = decltype(tag);
      T* w = out[0].data<T>();
      for (int64_t i = 0; i < size; ++i) w[i] = static_cast<T>(kernels::cosine_sum_window_value(i, size, periodic, a0, a1, a2));
      return Status::ok();
    });
  });
}

}  // namespace

// The coefficients the opset-17 spec gives: Hann 0.5 - 0.5 cos; Hamming
// alpha = 25/46, beta = 1 - alpha; Blackman 0.42 - 0.5 cos + 0.08 cos(2x).
KernelResult make_hann_window(const KernelContext& ctx) { return make_window(ctx, 0.5, 0.5, 0.0); }
KernelResult make_hamming_window(const KernelContext& ctx) { return make_window(ctx, 25.0 / 46.0, 21.0 / 46.0, 0.0); }
KernelResult make_blackman_window(const KernelContext& ctx) { return make_window(ctx, 0.42, 0.5, 0.08); }

// MelWeightMatrix (opset 17): inputs num_mel_bins, dft_length, sample_rate
// (int scalars), lower_edge_hertz, upper_edge_hertz (float scalars); output
// [dft_length / 2 + 1, num_mel_bins] of output_datatype (kernels/spectral.h).
KernelResult make_mel_weight_matrix(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(DType t, read_output_datatype(node));
  return make_kernel([&node, t](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 5));
    QT_ASSIGN_OR_RETURN(int64_t mel_bins, read_int_scalar(node, *in[0], "num_mel_bins"));
    QT_ASSIGN_OR_RETURN(int64_t dft_length, read_int_scalar(node, *in[1], "dft_length"));
    QT_ASSIGN_OR_RETURN(int64_t sample_rate, read_int_scalar(node, *in[2], "sample_rate"));
    QT_ASSIGN_OR_RETURN(double lower, read_float_scalar(node, *in[3], "lower_edge_hertz"));
    QT_ASSIGN_OR_RETURN(double upper, read_float_scalar(node, *in[4], "upper_edge_hertz"));
    if (mel_bins < 1 || dft_length < 1 || sample_rate < 1 || !(lower >= 0) || !(upper >= lower))
      return Status::bad_input("MelWeightMatrix needs num_mel_bins, dft_length, sample_rate >= 1 and 0 <= lower_edge_hertz "
                               "<= upper_edge_hertz");
    const int64_t rows = dft_length / 2 + 1;
    QT_RETURN_IF_ERROR(check_computed_shape(node, Dims{rows, mel_bins}));
    const std::vector<int64_t> edges = kernels::mel_bin_edges(mel_bins, dft_length, sample_rate, lower, upper);
    for (int64_t e : edges)
      if (e < 0 || e >= rows)
        return Status::bad_input("MelWeightMatrix edge frequencies " + std::to_string(lower) + ".." + std::to_string(upper) +
                                 " Hz fall outside the " + std::to_string(rows) + " bins of dft_length " +
                                 std::to_string(dft_length) + " at sample_rate " + std::to_string(sample_rate));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(t, {rows, mel_bins}));
    return dispatch_numeric(t, [&](auto tag) {
      kernels::mel_weight_matrix(edges, mel_bins, out[0].data<decltype(tag)>());
      return Status::ok();
    });
  });
}

}  // namespace quant::interp
