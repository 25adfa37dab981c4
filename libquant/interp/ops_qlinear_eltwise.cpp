// ONNX Runtime's com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid,
// QLinearLeakyRelu and QLinearConcat (opset 1) on 8-bit data.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "libquant/interp/ops_qlinear.h"
#include "libquant/interp/output.h"
#include "libquant/kernels/broadcast.h"
#include "libquant/kernels/lookup_table.h"
#include "libquant/kernels/qlinear_eltwise.h"
#include "libquant/kernels/threadpool.h"

namespace quant::interp {
namespace {

// ---- QLinearAdd / QLinearMul ---------------------------------------------------

enum : size_t { kA, kAScale, kAZero, kB, kBScale, kBZero, kCScale, kCZero };

struct BinaryParams {
  DType type = DType::UInt8;
  kernels::QLinearBinaryParams p;
};

// Inputs A, A_scale, A_zero_point (optional), B, B_scale, B_zero_point
// (optional), C_scale, C_zero_point (optional); all per tensor, as ONNX
// Runtime requires. The type is the zero points' (uint8 when all are omitted;
// checked against the data at run time).
Expected<BinaryParams> binary_params(std::span<const Tensor* const> in) {
  BinaryParams b;
  for (size_t i : {kAZero, kBZero, kCZero})
    if (optional_input(in, i)) b.type = in[i]->dtype();
  if (!is_8bit(b.type)) return Status::bad_input("zero points must be uint8 or int8");
  QT_ASSIGN_OR_RETURN(b.p.a_scale, scalar_scale(in[kAScale], "A_scale"));
  QT_ASSIGN_OR_RETURN(b.p.b_scale, scalar_scale(in[kBScale], "B_scale"));
  QT_ASSIGN_OR_RETURN(b.p.c_scale, scalar_scale(optional_input(in, kCScale), "C_scale"));
  if (!std::isfinite(b.p.a_scale / b.p.c_scale) || !std::isfinite(b.p.b_scale / b.p.c_scale) ||
      !std::isfinite(b.p.a_scale * b.p.b_scale / b.p.c_scale))
    return Status::bad_input("A_scale, B_scale and C_scale are too far apart: their ratios overflow float32");
  QT_ASSIGN_OR_RETURN(b.p.a_zero_point, scalar_zero_point(optional_input(in, kAZero), b.type, "A_zero_point"));
  QT_ASSIGN_OR_RETURN(b.p.b_zero_point, scalar_zero_point(optional_input(in, kBZero), b.type, "B_zero_point"));
  QT_ASSIGN_OR_RETURN(b.p.c_zero_point, scalar_zero_point(optional_input(in, kCZero), b.type, "C_zero_point"));
  return b;
}

// The operands with their parameters swapped, for ONNX Runtime's convention of
// passing the broadcast scalar as the kernel's second operand.
kernels::QLinearBinaryParams swapped(const kernels::QLinearBinaryParams& p) {
  kernels::QLinearBinaryParams s = p;
  std::swap(s.a_scale, s.b_scale);
  std::swap(s.a_zero_point, s.b_zero_point);
  return s;
}

enum class BinaryOp { Add, Mul };

// Broadcasting as ONNX Runtime's BroadcastLooper presents it to MLAS: equal
// shapes run as one vector-vector call; otherwise each run of the output
// (below) is vector-vector, or vector-scalar when one operand is held along
// it (the scalar always the kernel's second operand, see qlinear_eltwise.h).
template <class T>
void run_binary(BinaryOp op, const kernels::QLinearBinaryParams& p, const Tensor& a, const Tensor& b, Tensor& c,
                int threads) {
  auto call = [op](const T* x, const T* y, bool y_scalar, T* z, int64_t n, const kernels::QLinearBinaryParams& q) {
    if (op == BinaryOp::Add) kernels::qlinear_add<T>(x, y, y_scalar, z, n, q);
    else kernels::qlinear_mul<T>(x, y, y_scalar, z, n, q);
  };
  const T* ad = a.data<T>();
  const T* bd = b.data<T>();
  T* cd = c.data<T>();
  // Runs of the output over which each operand is read whole or held
  // (kernels::BroadcastRuns: a squeeze-excitation's [N, C, H, W] x [N, C,
  // 1, 1] is N * C runs of H * W, not N * C * H rows of W, mostly the
  // kernels' scalar tails), in pieces on the threads. The SIMD path gives the scalar
  // definition's bits for every element (tests), so where a piece starts
  // changes nothing.
  const kernels::BroadcastRuns<2> runs({a.shape(), b.shape()}, c.shape());
  kernels::in_pieces(runs.size(), threads, [&](int64_t first, int64_t count) {
    runs.visit(first, count, [&](const int64_t* off, const int64_t* step, int64_t y_off, int64_t n) {
      if (step[0] && step[1]) call(ad + off[0], bd + off[1], false, cd + y_off, n, p);
      else if (step[0]) call(ad + off[0], bd + off[1], true, cd + y_off, n, p);
      else call(bd + off[1], ad + off[0], true, cd + y_off, n, swapped(p));
    });
  });
}

KernelResult make_qlinear_binary(const KernelContext& ctx, BinaryOp op) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(auto params, (prepare_params<BinaryParams>(node, {kAScale, kAZero, kBScale, kBZero, kCScale, kCZero},
                                                                 binary_params)));
  const int threads = ctx.options.threads;
  return make_kernel([&node, op, params, threads](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_present(node, in, {kA, kAScale, kB, kBScale, kCScale}));
    std::optional<BinaryParams> scratch;
    QT_ASSIGN_OR_RETURN(const BinaryParams* p, params.get(in, scratch));
    const Tensor& a = *in[kA];
    const Tensor& b = *in[kB];
    if (a.dtype() != p->type || b.dtype() != p->type)
      return Status::bad_input("A and B must both be " + std::string(dtype_name(p->type)));
    auto shape = kernels::broadcast_shapes(a.shape(), b.shape());
    if (!shape) return Status::bad_input("shapes " + dims_to_string(a.shape()) + " and " + dims_to_string(b.shape()) + " do not broadcast");
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], p->type, *shape));
    return dispatch_8bit(p->type, "A", [&](auto t) {
      run_binary<decltype(t)>(op, p->p, a, b, out[0], threads);
      return Status::ok();
    });
  });
}

// ---- lookup-table ops: QLinearSigmoid, QLinearLeakyRelu ------------------------

enum : size_t { kX, kXScale, kXZero, kYScale, kYZero };

struct TableParams {
  DType type = DType::UInt8;
  std::array<uint8_t, 256> table{};  // entries of type `type`, stored as bytes
};

enum class TableOp { Sigmoid, LeakyRelu };

// X, X_scale, X_zero_point (optional), Y_scale, Y_zero_point (optional), per
// tensor. The table is built as ONNX Runtime's QlinearBuildLookupTable does
// (lookup_table.h), with MLAS's logistic for QLinearSigmoid and
// x >= 0 ? x : alpha * x for QLinearLeakyRelu (alpha default 0.01).
Expected<TableParams> table_params(std::span<const Tensor* const> in, TableOp op, float alpha) {
  TableParams t;
  if (optional_input(in, kXZero)) t.type = in[kXZero]->dtype();
  else if (optional_input(in, kYZero)) t.type = in[kYZero]->dtype();
  if (!is_8bit(t.type)) return Status::bad_input("zero points must be uint8 or int8");
  QT_ASSIGN_OR_RETURN(float x_scale, scalar_scale(in[kXScale], "X_scale"));
  QT_ASSIGN_OR_RETURN(float y_scale, scalar_scale(optional_input(in, kYScale), "Y_scale"));
  QT_ASSIGN_OR_RETURN(int32_t x_zero, scalar_zero_point(optional_input(in, kXZero), t.type, "X_zero_point"));
  QT_ASSIGN_OR_RETURN(int32_t y_zero, scalar_zero_point(optional_input(in, kYZero), t.type, "Y_zero_point"));
  QT_RETURN_IF_ERROR(dispatch_8bit(t.type, "X", [&](auto tag) {
    using T = decltype(tag);
    std::array<float, 256> values{}, results{};
    kernels::lookup_table_inputs<T>(x_scale, static_cast<T>(x_zero), values.data());
    if (op == TableOp::Sigmoid) kernels::logistic_mlas(values.data(), results.data(), 256);
    else kernels::leaky_relu_values(values.data(), results.data(), 256, alpha);
    kernels::lookup_table_from_outputs<T>(results.data(), y_scale, static_cast<T>(y_zero), reinterpret_cast<T*>(t.table.data()));
    return Status::ok();
  }));
  return t;
}

KernelResult make_qlinear_table(const KernelContext& ctx, TableOp op) {
  const ir::Node& node = ctx.node;
  const float alpha = node.attr_float("alpha", 0.01f);
  auto build = [op, alpha](std::span<const Tensor* const> in) { return table_params(in, op, alpha); };
  QT_ASSIGN_OR_RETURN(auto params, (prepare_params<TableParams>(node, {kXScale, kXZero, kYScale, kYZero}, build)));
  const int threads = ctx.options.threads;
  return make_kernel([&node, params, threads](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_present(node, in, {kX, kXScale, kYScale}));
    std::optional<TableParams> scratch;
    QT_ASSIGN_OR_RETURN(const TableParams* p, params.get(in, scratch));
    const Tensor& x = *in[kX];
    if (x.dtype() != p->type) return Status::bad_input("X must be " + std::string(dtype_name(p->type)));
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], p->type, x.shape()));
    return dispatch_8bit(p->type, "X", [&](auto tag) {
      using T = decltype(tag);
      kernels::apply_lookup_table<T>(x.data<T>(), reinterpret_cast<const T*>(p->table.data()), out[0].data<T>(), x.size(),
                                     threads);
      return Status::ok();
    });
  });
}

// ---- QLinearConcat ------------------------------------------------------------

// Inputs Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input.
// As in ONNX Runtime, an input whose scale and zero point equal the output's
// is copied; any other goes through an identity lookup table (dequantize,
// QuantizeLinear with the output's parameters).
struct ConcatParams {
  DType type = DType::UInt8;
  std::vector<bool> copy;                          // per input
  std::vector<std::array<uint8_t, 256>> tables;    // per input (unused when copied)
};

Expected<ConcatParams> concat_params(std::span<const Tensor* const> in) {
  ConcatParams c;
  if (in.size() < 5 || (in.size() - 2) % 3 != 0)
    return Status::bad_input("QLinearConcat takes Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples");
  if (!in[1]) return Status::bad_input("Y_zero_point is missing");
  c.type = in[1]->dtype();
  if (!is_8bit(c.type)) return Status::bad_input("zero points must be uint8 or int8");
  QT_ASSIGN_OR_RETURN(float y_scale, scalar_scale(in[0], "Y_scale"));
  QT_ASSIGN_OR_RETURN(int32_t y_zero, scalar_zero_point(in[1], c.type, "Y_zero_point"));
  for (size_t i = 2; i < in.size(); i += 3) {
    QT_ASSIGN_OR_RETURN(float x_scale, scalar_scale(in[i + 1], "X_scale"));
    QT_ASSIGN_OR_RETURN(int32_t x_zero, scalar_zero_point(in[i + 2], c.type, "X_zero_point"));
    c.copy.push_back(x_scale == y_scale && x_zero == y_zero);
    c.tables.emplace_back();
    QT_RETURN_IF_ERROR(dispatch_8bit(c.type, "X", [&](auto tag) {
      using T = decltype(tag);
      std::array<float, 256> values{};
      kernels::lookup_table_inputs<T>(x_scale, static_cast<T>(x_zero), values.data());
      kernels::lookup_table_from_outputs<T>(values.data(), y_scale, static_cast<T>(y_zero),
                                            reinterpret_cast<T*>(c.tables.back().data()));
      return Status::ok();
    }));
  }
  return c;
}

}  // namespace

KernelResult make_qlinear_add(const KernelContext& ctx) { return make_qlinear_binary(ctx, BinaryOp::Add); }
KernelResult make_qlinear_mul(const KernelContext& ctx) { return make_qlinear_binary(ctx, BinaryOp::Mul); }
KernelResult make_qlinear_sigmoid(const KernelContext& ctx) { return make_qlinear_table(ctx, TableOp::Sigmoid); }
KernelResult make_qlinear_leaky_relu(const KernelContext& ctx) { return make_qlinear_table(ctx, TableOp::LeakyRelu); }

KernelResult make_qlinear_concat(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t axis_attr = node.attr_int("axis", 0);
  std::vector<size_t> param_inputs = {0, 1};
  for (size_t i = 2; i + 2 < node.inputs.size(); i += 3) param_inputs.insert(param_inputs.end(), {i + 1, i + 2});
  QT_ASSIGN_OR_RETURN(auto params, (prepare_params<ConcatParams>(node, param_inputs, concat_params)));
  return make_kernel([&node, axis_attr, params](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    std::optional<ConcatParams> scratch;
    QT_ASSIGN_OR_RETURN(const ConcatParams* p, params.get(in, scratch));
    const size_t count = (in.size() - 2) / 3;
    const Tensor* first = in[2];
    if (!first) return Status::bad_input("QLinearConcat input 0 is missing");
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, first->rank()));
    Dims shape = first->shape();
    shape[static_cast<size_t>(axis)] = 0;
    for (size_t k = 0; k < count; ++k) {
      const Tensor* x = in[2 + 3 * k];
      if (!x || x->dtype() != p->type || x->rank() != first->rank())
        return Status::bad_input("QLinearConcat input " + std::to_string(k) + " must be " + std::string(dtype_name(p->type)) +
                                 " of rank " + std::to_string(first->rank()));
      for (int64_t d = 0; d < x->rank(); ++d)
        if (d != axis && x->dim(d) != first->dim(d))
          return Status::bad_input("QLinearConcat input shapes " + dims_to_string(first->shape()) + " and " +
                                   dims_to_string(x->shape()) + " differ off the axis");
      shape[static_cast<size_t>(axis)] += x->dim(axis);
    }
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], p->type, shape));
    const int64_t outer = kernels::element_count(std::span(shape).first(static_cast<size_t>(axis)));
    const int64_t inner = kernels::element_count(std::span(shape).subspan(static_cast<size_t>(axis) + 1));
    const int64_t out_pitch = shape[static_cast<size_t>(axis)] * inner;
    // Inputs the memory plan computed into their slices of this output are
    // not copied (output.h's inputs_in_slices); a table requantizes them in
    // place, element by element.
    std::vector<const Tensor*> data(count);
    for (size_t k = 0; k < count; ++k) data[k] = in[2 + 3 * k];
    QT_ASSIGN_OR_RETURN(std::vector<char> in_slice, inputs_in_slices(out[0], p->type, shape, data, outer));
    auto* y = static_cast<uint8_t*>(out[0].raw());
    int64_t offset = 0;
    for (size_t k = 0; k < count; ++k) {
      const Tensor& x = *in[2 + 3 * k];
      const int64_t pitch = x.dim(axis) * inner;
      const auto* xd = static_cast<const uint8_t*>(x.raw());
      for (int64_t o = 0; o < outer; ++o) {
        const uint8_t* src = xd + o * pitch;
        uint8_t* dst = y + o * out_pitch + offset;
        if (p->copy[k]) {
          if (!in_slice[k]) std::copy(src, src + pitch, dst);
        } else {
          kernels::apply_lookup_table<uint8_t>(src, p->tables[k].data(), dst, pitch);
        }
      }
      offset += pitch;
    }
    return Status::ok();
  });
}

}  // namespace quant::interp
