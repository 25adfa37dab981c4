// BatchNormalization, LayerNormalization, InstanceNormalization, LRN,
// MeanVarianceNormalization, Dropout.
#include <cstring>
#include <string>
#include <vector>

#include "libquant/interp/dispatch.h"
#include "libquant/interp/ops.h"
#include "libquant/kernels/norm.h"
#include "libquant/kernels/random.h"

namespace quant::interp {
namespace {

// The product of the dims after the first two ([N, C, spatial...] layout).
int64_t spatial_size(const Tensor& x) {
  int64_t s = 1;
  for (int64_t d = 2; d < x.rank(); ++d) s *= x.dim(d);
  return s;
}

Status require_same_float(const ir::Node& node, const Tensor& x, const Tensor& p, const char* what, int64_t count) {
  if (p.dtype() != x.dtype())
    return Status::bad_input(node.op_type + " " + what + " has type " + std::string(dtype_name(p.dtype())) +
                             ", the input has " + std::string(dtype_name(x.dtype())));
  if (p.size() != count)
    return Status::bad_input(node.op_type + " " + what + " must have " + std::to_string(count) + " values, got " +
                             dims_to_string(p.shape()));
  return Status::ok();
}

// A scalar attribute-as-input (Dropout ratio / training_mode) as double.
Expected<double> scalar_input(const ir::Node& node, const Tensor& t, const char* what) {
  if (t.size() != 1) return Status::bad_input(node.op_type + " " + what + " must be a scalar, got " + dims_to_string(t.shape()));
  if (t.dtype() == DType::Bool) return static_cast<double>(t.data<uint8_t>()[0] != 0);
  if (t.dtype() == DType::Float16 || t.dtype() == DType::BFloat16)
    return Status::bad_input(node.op_type + " " + what + " of type " + std::string(dtype_name(t.dtype())) + " is not supported");
  return t.as_double(0);
}

}  // namespace

// BatchNormalization. Training mode is training_mode=1 from opset 14, more
// than one output in opsets 7-13 (the spec's "output case #1"), is_test=0
// before 7. In training mode Y uses the batch mean and population variance
// and the running statistics are mean * momentum + batch * (1 - momentum)
// (the ONNX reference); opsets < 14 also output the batch mean and variance as
// saved_mean / saved_var. spatial=0 (opsets < 9) takes per-(C, D...) parameters.
KernelResult make_batchnorm(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const double eps = node.attr_float("epsilon", 1e-5f);
  const double momentum = node.attr_float("momentum", 0.9f);
  const bool per_element = ctx.opset < 9 && node.attr_int("spatial", 1) == 0;
  size_t requested_outputs = 0;
  for (const ir::Value* v : node.outputs) requested_outputs += v != nullptr;
  bool training;
  if (ctx.opset >= 14) training = node.attr_int("training_mode", 0) != 0;
  else if (ctx.opset >= 7) training = requested_outputs > 1;
  else training = node.attr_int("is_test", 0) == 0;
  if (ctx.opset >= 14 && !training && requested_outputs > 1)
    return Status::bad_input("BatchNormalization outputs running_mean/running_var only with training_mode=1");
  return make_kernel([&node, eps, momentum, per_element, training](std::span<const Tensor* const> in,
                                                                   std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 5));
    const Tensor& x = *in[0];
    if (x.rank() < 2) return Status::bad_input("BatchNormalization input must have rank >= 2, got " + dims_to_string(x.shape()));
    const int64_t N = x.dim(0), C = x.dim(1), spatial = spatial_size(x);
    const int64_t count = per_element ? C * spatial : C;
    static const char* names[] = {"", "scale", "B", "input_mean", "input_var"};
    for (size_t k = 1; k < 5; ++k) QT_RETURN_IF_ERROR(require_same_float(node, x, *in[k], names[k], count));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), x.shape()));
    return dispatch_float(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* mean = in[3]->data<T>();
      const T* var = in[4]->data<T>();
      Tensor batch_mean, batch_var;
      if (training) {
        QT_ASSIGN_OR_RETURN(batch_mean, Tensor::create(x.dtype(), in[3]->shape()));
        QT_ASSIGN_OR_RETURN(batch_var, Tensor::create(x.dtype(), in[4]->shape()));
        kernels::batch_stats<T>(x.data<T>(), N, C, spatial, per_element, batch_mean.data<T>(), batch_var.data<T>());
        mean = batch_mean.data<T>();
        var = batch_var.data<T>();
      }
      kernels::batchnorm<T>(x.data<T>(), N, C, spatial, per_element, in[1]->data<T>(), in[2]->data<T>(), mean, var, eps,
                            out[0].data<T>());
      if (!training) return Status::ok();
      for (size_t k = 1; k <= 2 && k < out.size(); ++k) {
        const Tensor& running = *in[k + 2];
        const T* batch = (k == 1 ? batch_mean : batch_var).data<T>();
        QT_ASSIGN_OR_RETURN(out[k], Tensor::create(x.dtype(), running.shape()));
        for (int64_t i = 0; i < count; ++i)
          out[k].data<T>()[i] = static_cast<T>(running.data<T>()[i] * momentum + batch[i] * (1 - momentum));
      }
      if (out.size() > 3) out[3] = std::move(batch_mean);
      if (out.size() > 4) out[4] = std::move(batch_var);
      return Status::ok();
    });
  });
}

// LayerNormalization-17: normalizes over the dims from `axis` on; Scale and
// the optional B broadcast to those dims; optional outputs Mean and
// InvStdDev have X's shape with 1 from `axis` on and type float (the
// stash_type the spec defaults to and constrains U to).
KernelResult make_layer_norm(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t axis_attr = node.attr_int("axis", -1);
  const double eps = node.attr_float("epsilon", 1e-5f);
  if (node.attr_int("stash_type", 1) != 1)
    return Status::bad_input("LayerNormalization stash_type other than 1 (float) is not supported");
  return make_kernel([&node, axis_attr, eps](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    if (x.rank() == 0) return Status::bad_input("LayerNormalization input must have rank >= 1");
    QT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, axis_attr, x.rank()));
    const Dims norm_shape(x.shape().begin() + axis, x.shape().end());
    const int64_t inner = element_count(norm_shape), outer = inner == 0 ? 0 : x.size() / inner;
    // Scale and B expanded to `inner` values (unidirectional broadcast).
    std::vector<const Tensor*> params{in[1], in.size() > 2 ? in[2] : nullptr};
    std::vector<Tensor> expanded(2);
    for (size_t k = 0; k < 2; ++k) {
      const Tensor* p = params[k];
      if (!p) continue;
      const char* what = k == 0 ? "Scale" : "B";
      if (p->dtype() != x.dtype())
        return Status::bad_input(std::string("LayerNormalization ") + what + " type differs from the input's");
      auto b = kernels::broadcast_shapes(p->shape(), norm_shape);
      if (!b || *b != norm_shape || p->rank() > static_cast<int64_t>(norm_shape.size()))
        return Status::bad_input(std::string("LayerNormalization ") + what + " " + dims_to_string(p->shape()) +
                                 " does not broadcast to the normalized shape " + dims_to_string(norm_shape));
      if (p->size() == inner) continue;
      QT_ASSIGN_OR_RETURN(expanded[k], Tensor::create(x.dtype(), norm_shape));
      const Dims strides = kernels::broadcast_strides(p->shape(), norm_shape);
      const size_t esize = dtype_size(x.dtype());
      Dims counter(norm_shape.size(), 0);
      for (int64_t i = 0; i < inner; ++i) {
        int64_t src = 0;
        for (size_t d = 0; d < counter.size(); ++d) src += counter[d] * strides[d];
        std::memcpy(static_cast<char*>(expanded[k].raw()) + i * esize, static_cast<const char*>(p->raw()) + src * esize, esize);
        for (size_t d = counter.size(); d-- > 0;) {
          if (++counter[d] < norm_shape[d]) break;
          counter[d] = 0;
        }
      }
      params[k] = &expanded[k];
    }
    Dims stat_shape = x.shape();
    for (size_t d = static_cast<size_t>(axis); d < stat_shape.size(); ++d) stat_shape[d] = 1;
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), x.shape()));
    float* mean_out = nullptr;
    float* inv_std_out = nullptr;
    if (out.size() > 1) {
      QT_ASSIGN_OR_RETURN(out[1], Tensor::create(DType::Float32, stat_shape));
      mean_out = out[1].data<float>();
    }
    if (out.size() > 2) {
      QT_ASSIGN_OR_RETURN(out[2], Tensor::create(DType::Float32, stat_shape));
      inv_std_out = out[2].data<float>();
    }
    return dispatch_float(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      kernels::layer_norm<T>(x.data<T>(), outer, inner, params[0]->data<T>(), params[1] ? params[1]->data<T>() : nullptr,
                             eps, out[0].data<T>(), mean_out, inv_std_out);
      return Status::ok();
    });
  });
}

// InstanceNormalization-6: input [N, C, D...], scale [C], B [C].
KernelResult make_instance_norm(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const double eps = node.attr_float("epsilon", 1e-5f);
  return make_kernel([&node, eps](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const Tensor& x = *in[0];
    if (x.rank() < 2) return Status::bad_input("InstanceNormalization input must have rank >= 2, got " + dims_to_string(x.shape()));
    QT_RETURN_IF_ERROR(require_same_float(node, x, *in[1], "scale", x.dim(1)));
    QT_RETURN_IF_ERROR(require_same_float(node, x, *in[2], "B", x.dim(1)));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), x.shape()));
    return dispatch_float(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      kernels::instance_norm<T>(x.data<T>(), x.dim(0), x.dim(1), spatial_size(x), in[1]->data<T>(), in[2]->data<T>(), eps,
                                out[0].data<T>());
      return Status::ok();
    });
  });
}

// LRN-13: size is required; alpha 1e-4, beta 0.75, bias 1 by default.
KernelResult make_lrn(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t size = node.attr_int("size", 0);
  if (size < 1) return Status::bad_input("LRN needs a size attribute >= 1");
  const double alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f),
               bias = node.attr_float("bias", 1.0f);
  return make_kernel([&node, size, alpha, beta, bias](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    if (x.rank() < 2) return Status::bad_input("LRN input must have rank >= 2, got " + dims_to_string(x.shape()));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), x.shape()));
    return dispatch_float(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      kernels::lrn<T>(x.data<T>(), x.dim(0), x.dim(1), spatial_size(x), size, alpha, beta, bias, out[0].data<T>());
      return Status::ok();
    });
  });
}

// MeanVarianceNormalization-9/13: axes default [0, 2, 3].
KernelResult make_mean_variance_norm(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Dims axes = node.attr_ints("axes", {0, 2, 3});
  return make_kernel([&node, axes](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    std::unique_ptr<bool[]> reduced(new bool[static_cast<size_t>(x.rank()) + 1]());
    for (int64_t a : axes) {
      QT_ASSIGN_OR_RETURN(int64_t ax, normalize_axis(node, a, x.rank()));
      if (x.rank() > 0) reduced[static_cast<size_t>(ax)] = true;
    }
    int64_t kept = 1;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (!reduced[static_cast<size_t>(d)]) kept *= x.dim(d);
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), x.shape()));
    if (x.size() == 0) return dispatch_float(x.dtype(), [](auto) { return Status::ok(); });
    std::vector<double> scratch(static_cast<size_t>(2 * kept));
    return dispatch_float(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      kernels::mean_variance_norm<T>(x.data<T>(), x.shape(), std::span<const bool>(reduced.get(), static_cast<size_t>(x.rank())),
                                     out[0].data<T>(), scratch.data());
      return Status::ok();
    });
  });
}

// Dropout. Inference (every opset's default since 7) is the identity with an
// all-true mask. Training mode (is_test=0 before opset 7, the training_mode
// input from 12) keeps x / (1 - ratio) where a uniform draw is >= ratio,
// drawing from a generator seeded by the `seed` attribute (0 when absent, so
// runs are reproducible). The mask is T before opset 10 and bool after.
KernelResult make_dropout(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool inputs_control = ctx.opset >= 12;
  const double ratio_attr = node.attr_float("ratio", 0.5f);
  const bool training_attr = ctx.opset < 7 && node.attr_int("is_test", 0) == 0;
  const bool bool_mask = ctx.opset >= 10;
  const uint32_t seed = static_cast<uint32_t>(node.attr_int("seed", 0));
  return make_kernel([&node, inputs_control, ratio_attr, training_attr, bool_mask, seed](
                         std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    double ratio = ratio_attr;
    bool training = training_attr;
    if (inputs_control) {
      ratio = 0.5;
      if (in.size() > 1 && in[1]) {
        QT_ASSIGN_OR_RETURN(ratio, scalar_input(node, *in[1], "ratio"));
      }
      training = false;
      if (in.size() > 2 && in[2]) {
        QT_ASSIGN_OR_RETURN(double t, scalar_input(node, *in[2], "training_mode"));
        training = t != 0;
      }
    }
    if (training && !(ratio >= 0 && ratio < 1))
      return Status::bad_input("Dropout ratio must be in [0, 1), got " + std::to_string(ratio));
    const bool want_mask = out.size() > 1;
    const DType mask_type = bool_mask ? DType::Bool : x.dtype();
    if (!training || ratio == 0) {
      out[0] = x;
      if (want_mask) {
        QT_ASSIGN_OR_RETURN(out[1], Tensor::create(mask_type, x.shape()));
        if (mask_type == DType::Bool) {
          std::memset(out[1].raw(), 1, out[1].byte_size());
        } else {
          QT_RETURN_IF_ERROR(dispatch_numeric(mask_type, [&](auto tag) -> Status {
            using T = decltype(tag);
            for (T& v : out[1].values<T>()) v = T(1);
            return Status::ok();
          }));
        }
      }
      return Status::ok();
    }
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(x.dtype(), x.shape()));
    if (want_mask) {
      QT_ASSIGN_OR_RETURN(out[1], Tensor::create(mask_type, x.shape()));
    }
    return dispatch_float(x.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      kernels::NumpyUniform uniform(seed);
      const double scale = 1.0 / (1.0 - ratio);
      for (int64_t i = 0; i < x.size(); ++i) {
        const bool keep = uniform.next() >= ratio;
        out[0].data<T>()[i] = keep ? static_cast<T>(x.data<T>()[i] * scale) : T(0);
        if (!want_mask) continue;
        if (mask_type == DType::Bool) out[1].data<uint8_t>()[i] = keep;
        else out[1].data<T>()[i] = keep ? T(1) : T(0);
      }
      return Status::ok();
    });
  });
}

}  // namespace quant::interp
