// QLinearMatMul (ONNX opset 10 and 21) on the fast integer GEMM
// (kernels/qgemm_packed.h): a constant 2-D b (the weights) is packed once at
// prepare time and the requantization is fused into the GEMM's output stage;
// any other b is packed per product and requantized after it. With 16-bit a
// and y (qrun's 16-bit targets) it runs kernels/qwide.h's int64 kernel.
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "libquant/interp/dot_target.h"
#include "libquant/interp/ops_qlinear.h"
#include "libquant/interp/output.h"
#include "libquant/kernels/matmul.h"
#include "libquant/kernels/qgemm_packed.h"
#include "libquant/kernels/qwide.h"
#include "libquant/kernels/threadpool.h"

namespace quant::interp {
namespace {

enum : size_t { kA, kAScale, kAZero, kB, kBScale, kBZero, kYScale, kYZero };

struct MatMulParams {
  int32_t a_zero_point = 0;
  DType a_type = DType::UInt8, b_type = DType::Int8, y_type = DType::UInt8;
  Dims b_param_shape;                  // shape of b_scale (b_zero_point has as many values)
  std::vector<int32_t> b_zero_points;  // as many as b_scale
  kernels::Requantizer requant;        // multiplier a_scale * b_scale[i] / y_scale
};

// QLinearMatMul-10/21: a_scale, y_scale per tensor (per-row `a` parameters are
// refused, as ONNX Runtime does); b_scale and b_zero_point per tensor or per
// column: N values, or b's batch dims followed by [1, N] (one row of column
// parameters per matrix of b). Opset 21 only widens the types (float16 /
// bfloat16 scales, which are refused here). The multiplier is
// a_scale * b_scale[i] / y_scale in float32, as ONNX Runtime computes it.
Expected<MatMulParams> matmul_params(std::span<const Tensor* const> in, kernels::RequantMode mode) {
  MatMulParams p;
  QT_ASSIGN_OR_RETURN(float a_scale, scalar_scale(in[kAScale], "a_scale"));
  QT_ASSIGN_OR_RETURN(float y_scale, scalar_scale(in[kYScale], "y_scale"));
  const Tensor* az = in[kAZero];
  const Tensor* bz = in[kBZero];
  const Tensor* yz = in[kYZero];
  const Tensor* bs = in[kBScale];
  if (!az || !bz || !yz || !bs) return Status::bad_input("QLinearMatMul needs every scale and zero point");
  p.a_type = az->dtype(), p.b_type = bz->dtype(), p.y_type = yz->dtype();
  if ((!is_8bit(p.a_type) || !is_8bit(p.b_type) || !is_8bit(p.y_type)) && !is_wide_product(p.a_type, p.b_type, p.y_type))
    return Status::bad_input("QLinearMatMul zero points must be uint8 or int8 (or a and y both uint16 or int16 with 8-bit b)");
  QT_ASSIGN_OR_RETURN(p.a_zero_point, scalar_zero_point(az, p.a_type, "a_zero_point"));
  QT_ASSIGN_OR_RETURN(int32_t y_zero_point, scalar_zero_point(yz, p.y_type, "y_zero_point"));
  if (bs->dtype() != DType::Float32 || bs->size() < 1) return Status::bad_input("b_scale must be float32");
  if (bz->size() != bs->size())  // [1] and [] are the same per-tensor parameter
    return Status::bad_input("b_zero_point " + dims_to_string(bz->shape()) + " does not match b_scale " + dims_to_string(bs->shape()));
  p.b_param_shape = bs->shape();
  p.b_zero_points = int32_values(*bz);
  QT_ASSIGN_OR_RETURN(p.requant, product_requantizer(mode, a_scale, *bs, "b_scale", y_scale, y_zero_point));
  return p;
}

// How b's parameters are laid out for a b of shape b_shape (rank >= 2 after
// promotion): 0 = per tensor, N = per column, b_batches * N = per matrix and column.
Expected<int64_t> b_param_stride(const Dims& param_shape, int64_t count, const Dims& b_shape) {
  const int64_t n = b_shape.back();
  if (count == 1) return int64_t{0};
  if (count == n && (param_shape.size() <= 1 || param_shape[param_shape.size() - 2] == 1)) return int64_t{0};
  Dims want(b_shape.begin(), b_shape.end() - 2);
  want.insert(want.end(), {1, n});
  if (param_shape == want) return n;
  return Status::bad_input("b_scale " + dims_to_string(param_shape) + " is neither per tensor nor per column of b " +
                           dims_to_string(b_shape));
}

// The batch dims of a and b broadcast against each other (numpy.matmul):
// for product i, the index of the a matrix and of the b matrix it reads.
class MatMulBatches {
 public:
  MatMulBatches(const Dims& a_shape, const Dims& b_shape) {
    const Dims a_batch(a_shape.begin(), a_shape.end() - 2), b_batch(b_shape.begin(), b_shape.end() - 2);
    batch_ = *kernels::broadcast_shapes(a_batch, b_batch);
    a_strides_ = kernels::broadcast_strides(a_batch, batch_), b_strides_ = kernels::broadcast_strides(b_batch, batch_);
  }
  int64_t count() const { return kernels::element_count(batch_); }
  std::pair<int64_t, int64_t> operator()(int64_t i) const {
    int64_t a_index = 0, b_index = 0;
    for (size_t d = 0, rest = static_cast<size_t>(i); d < batch_.size(); ++d) {
      const int64_t size_after = kernels::element_count(std::span(batch_).subspan(d + 1));
      const int64_t idx = static_cast<int64_t>(rest) / size_after;
      rest %= static_cast<size_t>(size_after);
      a_index += idx * a_strides_[d], b_index += idx * b_strides_[d];
    }
    return {a_index, b_index};
  }

 private:
  Dims batch_, a_strides_, b_strides_;
};

// `dot` non-null: the products compute as its saturating target does.
template <class TA, class TB, class TY>
void run_typed(const MatMulParams& p, const Tensor& a, const Dims& a_shape, const Tensor& b, const Dims& b_shape,
               int64_t param_stride, Tensor& y, int threads, const DotTarget* dot = nullptr) {
  const int64_t m = a_shape[a_shape.size() - 2], k = a_shape.back(), n = b_shape.back();
  const MatMulBatches batches(a_shape, b_shape);
  const std::vector<TB> b_zero_points(p.b_zero_points.begin(), p.b_zero_points.end());
  // Batch i into y, its int32 sums in `acc` (m x n), its product on
  // `gemm_threads` threads.
  const auto run = [&](int64_t i, std::vector<int32_t>& acc, int gemm_threads) {
    if (!dot && p.requant.count() == 1 && b_zero_points.size() == 1) {
      // One scale (activations on both sides, attention's products): the
      // product's output stage requantizes in registers, as run_packed's
      // does (requantize_one's bits), instead of int32 sums then a pass.
      const auto [a_index, b_index] = batches(i);
      const TB zb = b_zero_points[0];
      const kernels::PackedQB packed =
          kernels::PackedQB::pack(b.data<TB>() + b_index * k * n, n, kernels::BLayout::KxN, k, n, &zb, 1);
      kernels::QGemmOutput out;
      out.requant = &p.requant;
      out.type = std::is_same_v<TY, uint8_t> ? kernels::detail::QOutType::U8 : kernels::detail::QOutType::S8;
      out.y = y.data<TY>() + i * m * n, out.ldy = n;
      kernels::qgemm_packed<TA>(m, a.data<TA>() + a_index * m * k, k, static_cast<TA>(p.a_zero_point), packed, nullptr,
                                out, gemm_threads);
      return;
    }
    acc.resize(static_cast<size_t>(m * n));
    kernels::QGemmArgs<TA, TB> q;
    q.m = m, q.n = n, q.k = k, q.lda = k, q.a_zero_point = static_cast<TA>(p.a_zero_point), q.ldb = n, q.c = acc.data(), q.ldc = n;
    const auto [a_index, b_index] = batches(i);
    q.a = a.data<TA>() + a_index * m * k;
    q.b = b.data<TB>() + b_index * k * n;
    const int64_t first = param_stride * b_index;
    q.b_zero_point = b_zero_points.data() + first;
    q.b_zero_point_count = p.requant.count() == 1 ? 1 : n;
    if constexpr (std::is_same_v<TB, int8_t>) {
      if (dot) {
        const auto w = kernels::Sat16Weights::from_matrix(q.b, n, kernels::BLayout::KxN, k, n, q.b_zero_point,
                                                          q.b_zero_point_count);
        dot->record(kernels::qgemm_sat16<TA>(m, q.a, k, q.a_zero_point, w, 0, n, acc.data(), n));
      } else {
        kernels::qgemm_fast(q, gemm_threads);
      }
    } else {
      kernels::qgemm_fast(q, gemm_threads);
    }
    kernels::requantize<TY>(acc.data(), m, n, n, nullptr, p.requant, p.requant.count() == 1 ? 0 : first,
                            y.data<TY>() + i * m * n, n, 1);
  };
  // As matmul_f32 splits them: whole batches on the threads where there are
  // enough (attention's heads), each on one; small products on one thread.
  // The saturating target's record stays on the caller's thread.
  const int64_t macs = m * n * k, bytes = m * k + k * n, count = batches.count();
  const int split = dot ? 1 : kernels::threads_for_product(threads, count * macs, count * bytes);
  if (split > 1 && count >= split) {
    kernels::parallel_for(split, count, [&](int64_t i) {
      thread_local std::vector<int32_t> acc;
      run(i, acc, 1);
    });
    return;
  }
  std::vector<int32_t> acc;
  for (int64_t i = 0; i < count; ++i) run(i, acc, kernels::threads_for_product(split, macs, bytes));
}

// 16-bit a and y, 8-bit b: the int64-accumulating kernel (kernels/qwide.h).
template <class TA, class TB>
void run_wide(const MatMulParams& p, const Tensor& a, const Dims& a_shape, const Tensor& b, const Dims& b_shape,
              int64_t param_stride, Tensor& y) {
  const int64_t m = a_shape[a_shape.size() - 2], k = a_shape.back(), n = b_shape.back();
  const MatMulBatches batches(a_shape, b_shape);
  const std::vector<TB> b_zero_points(p.b_zero_points.begin(), p.b_zero_points.end());
  std::vector<int64_t> acc(static_cast<size_t>(m * n));
  kernels::WideGemmArgs<TA, TB> q;
  q.m = m, q.n = n, q.k = k, q.lda = k, q.a_zero_point = p.a_zero_point, q.ldb = n;
  q.b_zero_point_count = p.requant.count() == 1 ? 1 : n;
  for (int64_t i = 0; i < batches.count(); ++i) {
    const auto [a_index, b_index] = batches(i);
    const int64_t first = param_stride * b_index;
    q.a = a.data<TA>() + a_index * m * k;
    q.b = b.data<TB>() + b_index * k * n;
    q.b_zero_point = b_zero_points.data() + first;
    kernels::qgemm_wide(q, acc.data());
    kernels::requantize_wide<TA>(acc.data(), m, n, n, nullptr, p.requant, p.requant.count() == 1 ? 0 : first,
                                 y.data<TA>() + i * m * n, n, 1);
  }
}

// A constant 2-D b with its zero points (per tensor or per column), packed.
struct PackedB {
  const Tensor* b = nullptr;
  const Tensor* bz = nullptr;
  kernels::PackedQB packed;
};

std::shared_ptr<PackedB> pack_constant_b(const ir::Node& node) {
  auto p = std::make_shared<PackedB>();
  const ir::Value* bv = node.input(kB);
  const ir::Value* zv = node.input(kBZero);
  const Tensor* b = bv ? ir::constant_data(bv) : nullptr;
  const Tensor* bz = zv ? ir::constant_data(zv) : nullptr;
  const Tensor* az = node.input(kAZero) ? ir::constant_data(node.input(kAZero)) : nullptr;
  if (az && is_16bit(az->dtype())) return p;  // the 16-bit kernel reads b as it is
  if (!b || !bz || b->rank() != 2 || b->dtype() != bz->dtype() || !is_8bit(b->dtype()) ||
      (bz->size() != 1 && bz->size() != b->dim(1)))
    return p;
  (void)dispatch_8bit(b->dtype(), "b", [&](auto tb) {
    using TB = decltype(tb);
    p->packed = kernels::PackedQB::pack(b->data<TB>(), b->dim(1), kernels::BLayout::KxN, b->dim(0), b->dim(1),
                                        bz->data<TB>(), bz->size());
    return Status::ok();
  });
  p->b = b, p->bz = bz;
  report_weight_pairs(node, p->packed.pairs_bounded(), false);
  return p;
}

// y = requantize((a - za)(b - zb)) for every row of a at once with the packed b.
template <class TA, class TY>
void run_packed(const MatMulParams& p, const Tensor& a, const kernels::PackedQB& b, Tensor& y, int threads) {
  kernels::QGemmOutput out;
  out.requant = &p.requant;
  out.type = std::is_same_v<TY, uint8_t> ? kernels::detail::QOutType::U8 : kernels::detail::QOutType::S8;
  out.y = y.data<TY>(), out.ldy = b.n();
  const int64_t rows = b.k() == 0 ? y.size() / std::max<int64_t>(b.n(), 1) : a.size() / b.k();
  kernels::qgemm_packed<TA>(rows, a.data<TA>(), b.k(), static_cast<TA>(p.a_zero_point), b, nullptr, out,
                            kernels::threads_for_product(threads, rows * b.n() * b.k(), (rows + b.n()) * b.k()));
}

}  // namespace

KernelResult make_qlinear_matmul(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const kernels::RequantMode mode = requant_mode(ctx);
  auto build = [mode, &node](std::span<const Tensor* const> in) -> Expected<MatMulParams> {
    QT_ASSIGN_OR_RETURN(MatMulParams p, matmul_params(in, mode));
    apply_folded_activation(node, p.requant);
    return p;
  };
  QT_ASSIGN_OR_RETURN(auto params, (prepare_params<MatMulParams>(node, {kAScale, kAZero, kBScale, kBZero, kYScale, kYZero}, build)));
  const std::shared_ptr<PackedB> packed = pack_constant_b(node);
  const int threads = ctx.options.threads;
  const DotTarget dot = dot_target(ctx);
  const bool b_activation = !node.input(kB) || !ir::constant_data(node.input(kB));
  return make_kernel([&node, params, packed, threads, dot, b_activation](std::span<const Tensor* const> in,
                                                                         std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 8));
    std::optional<MatMulParams> scratch;
    QT_ASSIGN_OR_RETURN(const MatMulParams* p, params.get(in, scratch));
    const Tensor& a = *in[kA];
    const Tensor& b = *in[kB];
    if (a.dtype() != p->a_type || b.dtype() != p->b_type)
      return Status::bad_input("QLinearMatMul a / b types differ from their zero points'");
    auto shape = kernels::matmul_output_shape(a.shape(), b.shape());
    if (!shape) return Status::bad_input("QLinearMatMul shapes " + dims_to_string(a.shape()) + " and " + dims_to_string(b.shape()) + " do not fit");
    // numpy.matmul promotion: 1-D a is [1, K], 1-D b is [K, 1].
    Dims a_shape = a.shape(), b_shape = b.shape();
    if (a_shape.size() == 1) a_shape.insert(a_shape.begin(), 1);
    if (b_shape.size() == 1) b_shape.push_back(1);
    QT_ASSIGN_OR_RETURN(int64_t param_stride, b_param_stride(p->b_param_shape, static_cast<int64_t>(p->requant.count()), b_shape));
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], p->y_type, *shape));
    if (is_16bit(p->a_type))
      return dispatch_16bit(p->a_type, "a", [&](auto ta) {
        return dispatch_8bit(p->b_type, "b", [&](auto tb) {
          run_wide<decltype(ta), decltype(tb)>(*p, a, a_shape, b, b_shape, param_stride, out[0]);
          return Status::ok();
        });
      });
    const bool saturating = dot.applies(a.dtype(), b.dtype(), b_activation);
    if (&b == packed->b && !saturating && in[kBZero] == packed->bz && param_stride == 0)
      return dispatch_8bit(a.dtype(), "a", [&](auto ta) {
        return dispatch_8bit(p->y_type, "y", [&](auto ty) {
          run_packed<decltype(ta), decltype(ty)>(*p, a, packed->packed, out[0], threads);
          return Status::ok();
        });
      });
    return dispatch_8bit(a.dtype(), "a", [&](auto ta) {
      return dispatch_8bit(b.dtype(), "b", [&](auto tb) {
        return dispatch_8bit(p->y_type, "y", [&](auto ty) {
          run_typed<decltype(ta), decltype(tb), decltype(ty)>(*p, a, a_shape, b, b_shape, param_stride, out[0], threads,
                                                              saturating ? &dot : nullptr);
          return Status::ok();
        });
      });
    });
  });
}

}  // namespace quant::interp
