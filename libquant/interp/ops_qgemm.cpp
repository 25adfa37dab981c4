// com.microsoft QGemm (ONNX Runtime contrib op, version 1) on qgemm +
// requantize: what passes/lower_qdq.h lowers DQ -> Gemm [-> Q] to.
//
//   inputs: A, a_scale, a_zero_point, B, b_scale, b_zero_point, C?, y_scale?, y_zero_point?
//   attrs:  alpha (1), beta (1), transA (0), transB (0)
//   Y = alpha * (A' - za)(B' - zb) + C, C int32 at scale alpha / beta * a_scale * b_scale
//
// As ONNX Runtime's CPU kernel (contrib_ops/cpu/quantization/qgemm.cc): C is
// added to the int32 accumulator (broadcast to [M, N]); the multiplier per
// column n is alpha * a_scale * b_scale[n] / y_scale in float32, in that
// order; without y_scale the output is float32: float(acc) * alpha * a_scale *
// b_scale[n]. b_scale / b_zero_point are per tensor or per column (N values).
//
// B, when constant (the weights), is packed once at prepare time for the fast
// integer GEMM (kernels/qgemm_packed.h); without C and with an integer output
// the requantization runs in the GEMM's output stage.
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "libquant/interp/dot_target.h"
#include "libquant/interp/ops_qlinear.h"
#include "libquant/kernels/qgemm_packed.h"
#include "libquant/kernels/qwide.h"
#include "libquant/kernels/threadpool.h"

namespace quant::interp {
namespace {

enum : size_t { kA, kAScale, kAZero, kB, kBScale, kBZero, kC, kYScale, kYZero };

struct QGemmParams {
  int32_t a_zero_point = 0;
  DType a_type = DType::UInt8, b_type = DType::Int8, y_type = DType::Float32;
  std::vector<int32_t> b_zero_points;  // 1 or N
  std::vector<float> float_scale;      // float output: alpha * a_scale * b_scale[n]
  kernels::Requantizer requant;        // integer output
};

Expected<QGemmParams> qgemm_params(std::span<const Tensor* const> in, float alpha, kernels::RequantMode mode) {
  QGemmParams p;
  QT_ASSIGN_OR_RETURN(float a_scale, scalar_scale(in[kAScale], "a_scale"));
  const Tensor* az = in[kAZero];
  const Tensor* bs = in[kBScale];
  const Tensor* bz = in[kBZero];
  if (!az || !bs || !bz) return Status::bad_input("QGemm needs a_zero_point, b_scale and b_zero_point");
  p.a_type = az->dtype(), p.b_type = bz->dtype();
  const bool wide = is_16bit(p.a_type) && is_8bit(p.b_type);  // kernels/qwide.h
  if ((!is_8bit(p.a_type) || !is_8bit(p.b_type)) && !wide)
    return Status::bad_input("QGemm zero points must be uint8 or int8 (or a 16-bit a with an 8-bit b)");
  QT_ASSIGN_OR_RETURN(p.a_zero_point, scalar_zero_point(az, p.a_type, "a_zero_point"));
  if (bs->dtype() != DType::Float32 || bs->rank() > 1 || bs->size() < 1 || bz->size() != bs->size())
    return Status::bad_input("QGemm b_scale must be float32 with one value or one per column, b_zero_point as many");
  p.b_zero_points = int32_values(*bz);
  const float scaled_a = alpha * a_scale;
  if (!in[kYScale]) {
    for (float s : bs->values<float>()) p.float_scale.push_back(scaled_a * s);
    return p;
  }
  QT_ASSIGN_OR_RETURN(float y_scale, scalar_scale(in[kYScale], "y_scale"));
  const Tensor* yz = in[kYZero];
  p.y_type = yz ? yz->dtype() : DType::UInt8;
  if (wide ? p.y_type != p.a_type : !is_8bit(p.y_type))
    return Status::bad_input(wide ? "QGemm with a 16-bit a needs y_zero_point of a's type" : "QGemm y_zero_point must be uint8 or int8");
  QT_ASSIGN_OR_RETURN(int32_t y_zero_point, scalar_zero_point(yz, p.y_type, "y_zero_point"));
  QT_ASSIGN_OR_RETURN(p.requant, product_requantizer(mode, scaled_a, *bs, "b_scale", y_scale, y_zero_point));
  return p;
}

// C broadcast to [M, N] (numpy rules: [], [N], [1, N], [M, 1], [M, N]) added
// to acc: int32 accumulators wrap as in ONNX Runtime, int64 ones (16-bit a)
// cannot overflow.
template <class Acc>
Status add_c(const Tensor& c, int64_t m, int64_t n, std::vector<Acc>& acc) {
  if (c.dtype() != DType::Int32) return Status::bad_input("QGemm C must be int32");
  Dims shape = c.shape();
  if (shape.size() > 2) return Status::bad_input("QGemm C " + dims_to_string(shape) + " has rank > 2");
  while (shape.size() < 2) shape.insert(shape.begin(), 1);
  if ((shape[0] != 1 && shape[0] != m) || (shape[1] != 1 && shape[1] != n))
    return Status::bad_input("QGemm C " + dims_to_string(c.shape()) + " does not broadcast to [" + std::to_string(m) + ", " +
                             std::to_string(n) + "]");
  const int32_t* cv = c.data<int32_t>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const int32_t add = cv[(shape[0] == 1 ? 0 : i) * shape[1] + (shape[1] == 1 ? 0 : j)];
      Acc& a = acc[static_cast<size_t>(i * n + j)];
      if constexpr (std::is_same_v<Acc, int32_t>) a = static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(add));
      else a += add;
    }
  return Status::ok();
}

// B constant (with its zero point), packed.
struct PackedB {
  const Tensor* b = nullptr;
  const Tensor* bz = nullptr;
  kernels::PackedQB packed;
};

std::shared_ptr<PackedB> pack_constant_b(const ir::Node& node, bool trans_b) {
  auto p = std::make_shared<PackedB>();
  const ir::Value* bv = node.input(kB);
  const ir::Value* zv = node.input(kBZero);
  const Tensor* b = bv ? ir::constant_data(bv) : nullptr;
  const Tensor* bz = zv ? ir::constant_data(zv) : nullptr;
  const Tensor* az = node.input(kAZero) ? ir::constant_data(node.input(kAZero)) : nullptr;
  if (az && is_16bit(az->dtype())) return p;  // the 16-bit kernel reads B as it is
  if (!b || !bz || b->rank() != 2 || b->dtype() != bz->dtype() || !is_8bit(b->dtype())) return p;
  const int64_t n = trans_b ? b->dim(0) : b->dim(1), k = trans_b ? b->dim(1) : b->dim(0);
  if (bz->size() != 1 && bz->size() != n) return p;
  (void)dispatch_8bit(b->dtype(), "B", [&](auto tb) {
    using TB = decltype(tb);
    p->packed = kernels::PackedQB::pack(b->data<TB>(), b->dim(1), trans_b ? kernels::BLayout::NxK : kernels::BLayout::KxN,
                                        k, n, bz->data<TB>(), bz->size());
    return Status::ok();
  });
  p->b = b, p->bz = bz;
  report_weight_pairs(node, p->packed.pairs_bounded(), false);
  return p;
}

// (A' - za)(B' - zb) into `out` (int32 accumulators, or requantized when out
// says so), with the packed B when given. `dot` non-null: int32 accumulators
// computed as its saturating target does.
template <class TA, class TB>
void accumulate(const QGemmParams& p, const Tensor& a, const Tensor& b, const kernels::PackedQB* packed, bool trans_a,
                bool trans_b, int64_t m, int64_t n, int64_t k, const kernels::QGemmOutput& out, int threads,
                const DotTarget* dot) {
  std::vector<TA> a_rows;
  const TA* a_data = a.data<TA>();
  if (trans_a) {  // A is [K, M]: the kernel reads rows of K
    a_rows.resize(static_cast<size_t>(m * k));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk) a_rows[static_cast<size_t>(i * k + kk)] = a_data[kk * m + i];
    a_data = a_rows.data();
  }
  const TA za = static_cast<TA>(p.a_zero_point);
  threads = kernels::threads_for_product(threads, m * n * k, (m + n) * k);
  if constexpr (std::is_same_v<TB, int8_t>) {
    if (dot) {
      const std::vector<int8_t> zb(p.b_zero_points.begin(), p.b_zero_points.end());
      const auto w = kernels::Sat16Weights::from_matrix(b.data<int8_t>(), trans_b ? k : n,
                                                        trans_b ? kernels::BLayout::NxK : kernels::BLayout::KxN, k, n,
                                                        zb.data(), static_cast<int64_t>(zb.size()));
      dot->record(kernels::qgemm_sat16<TA>(m, a_data, k, za, w, 0, n, static_cast<int32_t*>(out.y), out.ldy));
      return;
    }
  }
  if (packed) {
    kernels::qgemm_packed<TA>(m, a_data, k, za, *packed, nullptr, out, threads);
    return;
  }
  const std::vector<TB> b_zero_points(p.b_zero_points.begin(), p.b_zero_points.end());
  const kernels::PackedQB local =
      kernels::PackedQB::pack(b.data<TB>(), trans_b ? k : n, trans_b ? kernels::BLayout::NxK : kernels::BLayout::KxN, k, n,
                              b_zero_points.data(), static_cast<int64_t>(b_zero_points.size()));
  kernels::qgemm_packed<TA>(m, a_data, k, za, local, nullptr, out, threads);
}

// The float output of a QGemm without y_scale: float(acc) * alpha * a_scale * b_scale[n].
template <class Acc>
Status write_float(const QGemmParams& p, const std::vector<Acc>& acc, int64_t m, int64_t n, Tensor& y) {
  QT_ASSIGN_OR_RETURN(y, Tensor::create(DType::Float32, {m, n}));
  float* out = y.data<float>();
  const bool per_column = p.float_scale.size() > 1;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      out[i * n + j] = static_cast<float>(acc[static_cast<size_t>(i * n + j)]) * p.float_scale[per_column ? static_cast<size_t>(j) : 0];
  return Status::ok();
}

// 16-bit A (and Y), 8-bit B: int64 accumulators (kernels/qwide.h).
template <class TA, class TB>
Status run_wide(const QGemmParams& p, const Tensor& a, const Tensor& b, const Tensor* c, bool trans_a, bool trans_b,
                int64_t m, int64_t n, int64_t k, Tensor& y) {
  std::vector<TA> a_rows;
  const TA* a_data = a.data<TA>();
  if (trans_a) {
    a_rows.resize(static_cast<size_t>(m * k));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk) a_rows[static_cast<size_t>(i * k + kk)] = a_data[kk * m + i];
    a_data = a_rows.data();
  }
  const std::vector<TB> zb(p.b_zero_points.begin(), p.b_zero_points.end());
  kernels::WideGemmArgs<TA, TB> q;
  q.m = m, q.n = n, q.k = k, q.a = a_data, q.lda = k, q.a_zero_point = p.a_zero_point;
  q.b = b.data<TB>(), q.ldb = trans_b ? k : n, q.b_nxk = trans_b;
  q.b_zero_point = zb.data(), q.b_zero_point_count = static_cast<int64_t>(zb.size());
  std::vector<int64_t> acc(static_cast<size_t>(m * n));
  kernels::qgemm_wide(q, acc.data());
  if (c) QT_RETURN_IF_ERROR(add_c(*c, m, n, acc));
  if (!p.float_scale.empty()) return write_float(p, acc, m, n, y);
  QT_ASSIGN_OR_RETURN(y, Tensor::create(p.y_type, {m, n}));
  kernels::requantize_wide<TA>(acc.data(), m, n, n, nullptr, p.requant, 0, y.data<TA>(), n, 1);
  return Status::ok();
}

}  // namespace

KernelResult make_qgemm(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const float alpha = node.attr_float("alpha", 1.0f);
  const bool trans_a = node.attr_int("transA", 0) != 0, trans_b = node.attr_int("transB", 0) != 0;
  const kernels::RequantMode mode = requant_mode(ctx);
  auto build = [alpha, mode](std::span<const Tensor* const> in) { return qgemm_params(in, alpha, mode); };
  QT_ASSIGN_OR_RETURN(auto params, (prepare_params<QGemmParams>(node, {kAScale, kAZero, kBScale, kBZero, kYScale, kYZero}, build)));
  const std::shared_ptr<PackedB> packed = pack_constant_b(node, trans_b);
  const int threads = ctx.options.threads;
  const DotTarget dot = dot_target(ctx);
  const bool b_activation = !node.input(kB) || !ir::constant_data(node.input(kB));
  return make_kernel([&node, params, trans_a, trans_b, packed, threads, dot, b_activation](
                         std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_present(node, in, {kA, kAScale, kB, kBScale, kBZero}));
    std::optional<QGemmParams> scratch;
    QT_ASSIGN_OR_RETURN(const QGemmParams* p, params.get(in, scratch));
    const Tensor& a = *in[kA];
    const Tensor& b = *in[kB];
    if (a.dtype() != p->a_type || b.dtype() != p->b_type) return Status::bad_input("QGemm A / B types differ from their zero points'");
    if (a.rank() != 2 || b.rank() != 2)
      return Status::bad_input("QGemm A and B must be 2-D, got " + dims_to_string(a.shape()) + " and " + dims_to_string(b.shape()));
    const int64_t m = trans_a ? a.dim(1) : a.dim(0), k = trans_a ? a.dim(0) : a.dim(1);
    const int64_t n = trans_b ? b.dim(0) : b.dim(1), kb = trans_b ? b.dim(1) : b.dim(0);
    if (k != kb) return Status::bad_input("QGemm shapes " + dims_to_string(a.shape()) + " and " + dims_to_string(b.shape()) + " do not fit");
    if (p->b_zero_points.size() != 1 && static_cast<int64_t>(p->b_zero_points.size()) != n)
      return Status::bad_input("QGemm b_scale has " + std::to_string(p->b_zero_points.size()) + " values for " + std::to_string(n) + " columns");
    const Tensor* c = optional_input(in, kC);
    if (is_16bit(p->a_type))
      return dispatch_16bit(p->a_type, "A", [&](auto ta) {
        return dispatch_8bit(p->b_type, "B", [&](auto tb) {
          return run_wide<decltype(ta), decltype(tb)>(*p, a, b, c, trans_a, trans_b, m, n, k, out[0]);
        });
      });
    const kernels::PackedQB* pb = &b == packed->b && in[kBZero] == packed->bz ? &packed->packed : nullptr;
    const DotTarget* sat = dot.applies(a.dtype(), b.dtype(), b_activation) ? &dot : nullptr;
    if (!c && p->float_scale.empty() && !sat) {  // requantized in the GEMM's output stage
      QT_ASSIGN_OR_RETURN(out[0], Tensor::create(p->y_type, {m, n}));
      kernels::QGemmOutput o;
      o.requant = &p->requant;
      o.type = p->y_type == DType::UInt8 ? kernels::detail::QOutType::U8 : kernels::detail::QOutType::S8;
      o.y = out[0].raw(), o.ldy = n;
      return dispatch_8bit(a.dtype(), "A", [&](auto ta) {
        return dispatch_8bit(b.dtype(), "B", [&](auto tb) {
          accumulate<decltype(ta), decltype(tb)>(*p, a, b, pb, trans_a, trans_b, m, n, k, o, threads, nullptr);
          return Status::ok();
        });
      });
    }
    std::vector<int32_t> acc(static_cast<size_t>(m * n));
    kernels::QGemmOutput o;
    o.y = acc.data(), o.ldy = n;
    QT_RETURN_IF_ERROR(dispatch_8bit(a.dtype(), "A", [&](auto ta) {
      return dispatch_8bit(b.dtype(), "B", [&](auto tb) {
        accumulate<decltype(ta), decltype(tb)>(*p, a, b, pb, trans_a, trans_b, m, n, k, o, threads, sat);
        return Status::ok();
      });
    }));
    if (c) QT_RETURN_IF_ERROR(add_c(*c, m, n, acc));
    if (p->float_scale.size()) return write_float(*p, acc, m, n, out[0]);
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(p->y_type, {m, n}));
    return dispatch_8bit(p->y_type, "Y", [&](auto ty) {
      using TY = decltype(ty);
      kernels::requantize<TY>(acc.data(), m, n, n, nullptr, p->requant, 0, out[0].data<TY>(), n, 1);
      return Status::ok();
    });
  });
}

}  // namespace quant::interp
