// Einsum, Det, Trilu, and Gemm / MatMul for element types other than float32.
#include <string>
#include <vector>

#include "libquant/interp/dispatch.h"
#include "libquant/interp/ops.h"
#include "libquant/kernels/einsum.h"
#include "libquant/kernels/linalg.h"
#include "libquant/kernels/matmul.h"

namespace quant::interp {
namespace {

// The numeric types Gemm-9+/MatMul-9+/Einsum-12 allow (float16 aside).
template <class F>
Status dispatch_linalg(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Int32: return f(int32_t{});
    case DType::UInt32: return f(uint32_t{});
    case DType::Int64: return f(int64_t{});
    case DType::UInt64: return f(uint64_t{});
    default: return Status::bad_input("element type " + std::string(dtype_name(t)) + " is not supported here");
  }
}

// Refuses loops whose iteration count is absurd for a reference kernel.
constexpr double kMaxEinsumSteps = 1e11;

}  // namespace

Status run_gemm_any_type(const ir::Node& node, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
                         const Tensor& a, const Tensor& b, double beta, const Tensor* c, int64_t c_rows, int64_t c_cols,
                         Tensor& y) {
  if (b.dtype() != a.dtype() || (c && c->dtype() != a.dtype()))
    return Status::bad_input(node.op_type + " inputs must share one element type");
  QT_ASSIGN_OR_RETURN(y, Tensor::create(a.dtype(), {M, N}));
  return dispatch_linalg(a.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    kernels::gemm<T>(trans_a, trans_b, M, N, K, alpha, a.data<T>(), b.data<T>(), beta, c ? c->data<T>() : nullptr, c_rows,
                     c_cols, y.data<T>());
    return Status::ok();
  });
}

Status run_matmul_any_type(const ir::Node& node, const Tensor& a, const Tensor& b, Tensor& y) {
  if (b.dtype() != a.dtype()) return Status::bad_input(node.op_type + " inputs must share one element type");
  auto shape = kernels::matmul_output_shape(a.shape(), b.shape());
  if (!shape) return Status::bad_input("MatMul shapes " + dims_to_string(a.shape()) + " and " + dims_to_string(b.shape()) + " do not fit");
  QT_ASSIGN_OR_RETURN(y, Tensor::create(a.dtype(), *shape));
  return dispatch_linalg(a.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    kernels::matmul<T>(a.data<T>(), a.shape(), b.data<T>(), b.shape(), y.data<T>());
    return Status::ok();
  });
}

// Einsum-12: any number of inputs of one numeric type.
KernelResult make_einsum(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const std::string equation = node.attr_string("equation", "");
  if (equation.empty()) return Status::bad_input("Einsum needs an equation attribute");
  return make_kernel([&node, equation](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, std::max<size_t>(in.size(), 1)));
    std::vector<std::vector<int64_t>> shapes;
    for (const Tensor* t : in) {
      if (t->dtype() != in[0]->dtype()) return Status::bad_input("Einsum inputs must share one element type");
      shapes.push_back(t->shape());
    }
    std::string error;
    auto plan = kernels::plan_einsum(equation, shapes, &error);
    if (!plan) return Status::bad_input(error);
    double steps = static_cast<double>(in.size());
    for (int64_t s : plan->sizes) steps *= static_cast<double>(s);
    if (steps > kMaxEinsumSteps) return Status::bad_input("Einsum '" + equation + "' is too large for the reference kernel");
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(in[0]->dtype(), plan->output_shape));
    return dispatch_linalg(in[0]->dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      std::vector<const T*> ptrs;
      for (const Tensor* t : in) ptrs.push_back(t->data<T>());
      kernels::einsum<T>(*plan, ptrs, out[0].data<T>());
      return Status::ok();
    });
  });
}

// Det-11: input [*, M, M] -> output [*].
KernelResult make_det(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2))
      return Status::bad_input("Det input must be [*, M, M], got " + dims_to_string(x.shape()));
    const int64_t M = x.dim(x.rank() - 1);
    const Dims shape(x.shape().begin(), x.shape().end() - 2);
    const int64_t batch = element_count(shape);
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), shape));
    std::vector<double> scratch(static_cast<size_t>(M * M));
    return dispatch_float(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      kernels::det<T>(x.data<T>(), batch, M, out[0].data<T>(), scratch.data());
      return Status::ok();
    });
  });
}

// Trilu-14: keeps the upper (default) or lower triangle of the last two dims,
// shifted by the optional scalar input k. Any element type.
KernelResult make_trilu(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool upper = node.attr_int("upper", 1) != 0;
  return make_kernel([&node, upper](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    if (x.rank() < 2) return Status::bad_input("Trilu input must have rank >= 2, got " + dims_to_string(x.shape()));
    int64_t k = 0;
    if (in.size() > 1 && in[1]) {
      const Tensor& kt = *in[1];
      if (kt.dtype() != DType::Int64 || kt.size() != 1)
        return Status::bad_input("Trilu k must be one int64 value, got " + std::string(dtype_name(kt.dtype())) + " " +
                                 dims_to_string(kt.shape()));
      k = kt.data<int64_t>()[0];
    }
    const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
    const int64_t batch = rows * cols == 0 ? 0 : x.size() / (rows * cols);
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), x.shape()));
    kernels::trilu(x.raw(), batch, rows, cols, k, upper, dtype_size(x.dtype()), out[0].raw());
    return Status::ok();
  });
}

}  // namespace quant::interp
