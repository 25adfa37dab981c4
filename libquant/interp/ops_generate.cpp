// Ops that make a tensor from a shape or a few scalars: ConstantOfShape,
// EyeLike, Range.
#include <cmath>
#include <cstring>

#include "libquant/interp/int_args.h"
#include "libquant/interp/ops.h"

namespace quant::interp {

// ConstantOfShape (opset 9-20): a tensor of the given shape filled with the
// one-element `value` attribute (default float32 0).
KernelResult make_constant_of_shape(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  Tensor value = Tensor::scalar<float>(0.0f);
  if (const ir::Attribute* a = node.find_attribute("value")) {
    if (a->kind != ir::Attribute::Kind::Tensor || !a->t) return Status::bad_input("ConstantOfShape value must be a tensor");
    if (a->t->size() != 1) return Status::bad_input("ConstantOfShape value must have exactly one element");
    value = *a->t;
  }
  return make_kernel([&node, value = std::move(value)](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    QT_RETURN_IF_ERROR(require_dtype(node, *in[0], DType::Int64, "shape"));
    QT_ASSIGN_OR_RETURN(Dims shape, read_int_list(node, *in[0], "shape"));
    QT_RETURN_IF_ERROR(check_computed_shape(node, shape));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(value.dtype(), shape));
    const size_t elem = dtype_size(value.dtype());
    auto* y = static_cast<unsigned char*>(out[0].raw());
    for (int64_t i = 0; i < out[0].size(); ++i) std::memcpy(y + static_cast<size_t>(i) * elem, value.raw(), elem);
    return Status::ok();
  });
}

// EyeLike (opset 9-22): a 2-D tensor shaped like the input with ones on the
// k-th diagonal (k > 0 above the main one); type from `dtype`, else the input's.
KernelResult make_eye_like(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t k = node.attr_int("k", 0);
  std::optional<DType> dtype;
  if (node.find_attribute("dtype")) {
    dtype = dtype_from_onnx(static_cast<int>(node.attr_int("dtype", 0)));
    if (!dtype) return Status::bad_input("EyeLike dtype " + std::to_string(node.attr_int("dtype", 0)) + " is not supported");
  }
  return make_kernel([&node, k, dtype](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    if (x.rank() != 2) return Status::bad_input("EyeLike input must be 2-D, got " + dims_to_string(x.shape()));
    const DType t = dtype.value_or(x.dtype());
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(t, x.shape()));
    Tensor& y = out[0];
    return dispatch_numeric_or_bool(t, [&](auto tag) {
      using T = decltype(tag);
      T* p = y.data<T>();
      for (int64_t r = 0; r < y.dim(0); ++r) {
        const int64_t c = r + k;
        if (c >= 0 && c < y.dim(1)) p[r * y.dim(1) + c] = T(1);
      }
      return Status::ok();
    });
  });
}

namespace {

// Number of Range elements: max(ceil((limit - start) / delta), 0) (Range-11).
template <class T>
Expected<int64_t> range_count(T start, T limit, T delta) {
  if (delta == T(0)) return Status::bad_input("Range delta must not be 0");
  double n;
  if constexpr (std::is_integral_v<T>) {
    int64_t span = 0;
    if (__builtin_sub_overflow(static_cast<int64_t>(limit), static_cast<int64_t>(start), &span))
      return Status::bad_input("Range limit - start overflows int64");
    const int64_t d = static_cast<int64_t>(delta);
    // Integer ceil division, exact where a double could round.
    int64_t q = span / d;
    if (span % d != 0 && ((span > 0) == (d > 0))) ++q;
    n = static_cast<double>(q);
  } else {
    n = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
    if (!std::isfinite(n)) return Status::bad_input("Range bounds are not finite");
  }
  if (n > static_cast<double>(kMaxComputedElements)) return Status::bad_input("Range output is too large");
  return n > 0 ? static_cast<int64_t>(n) : int64_t{0};
}

}  // namespace

// Range (opset 11): start, start + delta, ... while short of limit. The value
// is accumulated (prev + delta) as the spec's function body does.
KernelResult make_range(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const DType t = in[0]->dtype();
    for (size_t i = 0; i < 3; ++i) {
      if (in[i]->dtype() != t) return Status::bad_input("Range inputs must share one type");
      if (in[i]->size() != 1) return Status::bad_input("Range inputs must be scalars, got " + dims_to_string(in[i]->shape()));
    }
    if (t != DType::Float32 && t != DType::Float64 && t != DType::Int16 && t != DType::Int32 && t != DType::Int64)
      return Status::bad_input("Range does not take " + std::string(dtype_name(t)));
    return dispatch_numeric(t, [&](auto tag) -> Status {
      using T = decltype(tag);
      const T start = in[0]->data<T>()[0], limit = in[1]->data<T>()[0], delta = in[2]->data<T>()[0];
      QT_ASSIGN_OR_RETURN(int64_t n, range_count(start, limit, delta));
      QT_ASSIGN_OR_RETURN(out[0], Tensor::create(t, {n}));
      T* y = out[0].data<T>();
      T v = start;
      for (int64_t i = 0; i < n; ++i) {
        y[i] = v;
        if (i + 1 < n) v = static_cast<T>(v + delta);  // never steps past the last value (no int64 overflow)
      }
      return Status::ok();
    });
  });
}

}  // namespace quant::interp
