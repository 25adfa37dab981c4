// Cast (opset 6/9/13) and CastLike (15) between the numeric types, bool,
// float16, bfloat16 and string; the numeric conversion rules are in
// kernels/cast.h. The float8 types and the saturate attribute of opset 19
// are not supported.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "libquant/interp/elementwise_util.h"

namespace quant::interp {
namespace {

constexpr TypeSet kCastTypes = kNumericTypes | TypeSet{DType::Bool};

// A number as numpy's str() writes it (what the ONNX Cast reference does with
// astype(str)): the shortest text that reads back to the same value, with
// ".0" on integral values and an exponent of at least two digits.
template <class F>
std::string float_text(F v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  const double mag = std::fabs(static_cast<double>(v));
  // numpy switches to scientific form below 1e-4 and from 1e16 on.
  const bool sci = mag != 0 && (mag < 1e-4 || mag >= 1e16);
  auto r = std::to_chars(buf, buf + sizeof buf, v, sci ? std::chars_format::scientific : std::chars_format::fixed);
  std::string s(buf, r.ptr);
  if (!sci && s.find('.') == std::string::npos) s += ".0";
  return s;
}

// Cast to string (opset 9+): numbers as numpy's str(), bool as "True"/"False".
Status cast_to_string(const Tensor& x, Tensor& y) {
  std::vector<std::string> out(static_cast<size_t>(x.size()));
  QT_RETURN_IF_ERROR(dispatch_cast_type(x.dtype(), [&](auto src_tag) {
    using Src = decltype(src_tag);
    const auto* p = static_cast<const kernels::storage_t<Src>*>(x.raw());
    for (int64_t i = 0; i < x.size(); ++i) {
      const auto v = kernels::load_value<Src>(p[i]);
      std::string& o = out[static_cast<size_t>(i)];
      if constexpr (std::is_same_v<decltype(v), const bool>) o = v ? "True" : "False";
      else if constexpr (std::is_floating_point_v<std::remove_const_t<decltype(v)>>) o = float_text(v);
      else o = std::to_string(v);
    }
    return Status::ok();
  }));
  y = Tensor::strings(x.shape(), std::move(out));
  return Status::ok();
}

// Cast from string (opset 9+): each string read as a number (strtod: decimal,
// "NaN", "INF", "+INF", "-INF" in any case), then converted as a double is.
Status cast_from_string(const ir::Node& node, const Tensor& x, DType to, Tensor& y) {
  QT_ASSIGN_OR_RETURN(y, Tensor::create(to, x.shape()));
  return dispatch_cast_type(to, [&](auto dst_tag) {
    using Dst = decltype(dst_tag);
    auto* q = static_cast<kernels::storage_t<Dst>*>(y.raw());
    for (int64_t i = 0; i < x.size(); ++i) {
      const std::string& s = x.string_values()[static_cast<size_t>(i)];
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size())
        return Status::bad_input(node.op_type + " cannot read '" + s + "' as a number");
      q[i] = kernels::store_value<Dst>(v);
    }
    return Status::ok();
  });
}

Status run_cast(const ir::Node& node, const Tensor& x, DType to, Tensor& y) {
  if (x.dtype() == to) {
    y = x;
    return Status::ok();
  }
  if (to == DType::String) {
    QT_RETURN_IF_ERROR(require_type_in(node, x.dtype(), kCastTypes, "input"));
    return cast_to_string(x, y);
  }
  QT_RETURN_IF_ERROR(require_type_in(node, to, kCastTypes, "target"));
  if (x.dtype() == DType::String) return cast_from_string(node, x, to, y);
  QT_RETURN_IF_ERROR(require_type_in(node, x.dtype(), kCastTypes, "input"));
  QT_ASSIGN_OR_RETURN(y, Tensor::create(to, x.shape()));
  return dispatch_cast_type(x.dtype(), [&](auto src_tag) {
    using Src = decltype(src_tag);
    return dispatch_cast_type(to, [&](auto dst_tag) {
      using Dst = decltype(dst_tag);
      kernels::cast_array<Src, Dst>(static_cast<const kernels::storage_t<Src>*>(x.raw()),
                                    static_cast<kernels::storage_t<Dst>*>(y.raw()), x.size());
      return Status::ok();
    });
  });
}

}  // namespace

KernelResult make_cast(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  if (!node.find_attribute("to")) return Status::bad_input("Cast needs a 'to' attribute");
  const int64_t to_number = node.attr_int("to", 0);
  const auto to = dtype_from_onnx(static_cast<int>(to_number));
  if (!to) return Status::bad_input("Cast 'to' is " + std::to_string(to_number) + ", not an element type qtool knows");
  if (*to != DType::String) QT_RETURN_IF_ERROR(require_type_in(node, *to, kCastTypes, "target"));
  return make_kernel([&node, to = *to](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    return run_cast(node, *in[0], to, out[0]);
  });
}

// CastLike: the target type is input 1's (its values are not read).
KernelResult make_castlike(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    return run_cast(node, *in[0], in[1]->dtype(), out[0]);
  });
}

}  // namespace quant::interp
