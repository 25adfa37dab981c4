// Conv, Gemm, MatMul (BatchNormalization is in ops_norm.cpp, Softmax in ops_softmax.cpp).
#include <memory>
#include <mutex>

#include "libquant/interp/elementwise_util.h"
#include "libquant/interp/fusion.h"
#include "libquant/interp/ops.h"
#include "libquant/interp/output.h"

#include "libquant/kernels/conv.h"
#include "libquant/kernels/conv_fast.h"
#include "libquant/kernels/elementwise.h"
#include "libquant/kernels/eltwise_f32.h"
#include "libquant/kernels/gemm.h"
#include "libquant/kernels/gemm_packed.h"
#include "libquant/kernels/matmul.h"
#include "libquant/kernels/threadpool.h"

namespace quant::interp {

Expected<kernels::AutoPad> parse_auto_pad(const ir::Node& node) {
  std::string s = node.attr_string("auto_pad", "NOTSET");
  if (s == "NOTSET") return kernels::AutoPad::NotSet;
  if (s == "VALID") return kernels::AutoPad::Valid;
  if (s == "SAME_UPPER") return kernels::AutoPad::SameUpper;
  if (s == "SAME_LOWER") return kernels::AutoPad::SameLower;
  return Status::bad_input("unknown auto_pad '" + s + "'");
}

Expected<ConvAttrs> parse_conv_attrs(const ir::Node& node) {
  QT_ASSIGN_OR_RETURN(auto auto_pad, parse_auto_pad(node));
  ConvAttrs attrs{auto_pad, node.attr_ints("dilations"), node.attr_ints("kernel_shape"), node.attr_ints("pads"),
                  node.attr_ints("strides"), node.attr_int("group", 1)};
  QT_RETURN_IF_ERROR(check_spatial_attribute(node, "dilations", attrs.dilations));
  QT_RETURN_IF_ERROR(check_spatial_attribute(node, "pads", attrs.pads));
  QT_RETURN_IF_ERROR(check_spatial_attribute(node, "strides", attrs.strides));
  return attrs;
}

// Geometry of ONNX Conv (opset 11) for x [N,C,spatial...] and w [M,C/group,k...].
Expected<kernels::ConvGeometry> conv_geometry(const ConvAttrs& a, const Tensor& x, const Tensor& w) {
  const int64_t rank = x.rank();
  const size_t sp = static_cast<size_t>(rank - 2);
  if (rank < 3 || rank > 5) return Status::bad_input("Conv input must have rank 3 to 5, got " + dims_to_string(x.shape()));
  if (w.rank() != rank)
    return Status::bad_input("Conv weight " + dims_to_string(w.shape()) + " does not match input " + dims_to_string(x.shape()));
  kernels::ConvGeometry g;
  g.batch = x.dim(0);
  g.in_channels = x.dim(1);
  g.out_channels = w.dim(0);
  g.group = a.group;
  // Division, not w.dim(1) * group: a hostile group attribute would overflow.
  if (g.group < 1 || g.in_channels % g.group != 0 || g.out_channels % g.group != 0 || w.dim(1) != g.in_channels / g.group) {
    return Status::bad_input("Conv channels do not fit: input " + dims_to_string(x.shape()) + ", weight " +
                             dims_to_string(w.shape()) + ", group " + std::to_string(g.group));
  }
  g.in_spatial.assign(x.shape().begin() + 2, x.shape().end());
  g.kernel.assign(w.shape().begin() + 2, w.shape().end());
  for (int64_t k : g.kernel)
    if (k < 1) return Status::bad_input("Conv weight " + dims_to_string(w.shape()) + " has an empty kernel dimension");
  if (!a.kernel_shape.empty() && a.kernel_shape != g.kernel)
    return Status::bad_input("Conv kernel_shape attribute disagrees with the weight shape");
  g.strides = a.strides.empty() ? Dims(sp, 1) : a.strides;
  g.dilations = a.dilations.empty() ? Dims(sp, 1) : a.dilations;
  if (g.strides.size() != sp || g.dilations.size() != sp) return Status::bad_input("Conv strides/dilations rank mismatch");
  for (size_t i = 0; i < sp; ++i)
    if (g.strides[i] < 1 || g.dilations[i] < 1) return Status::bad_input("Conv strides and dilations must be >= 1");
  if (!a.pads.empty() && a.pads.size() != 2 * sp) return Status::bad_input("Conv pads must have 2 entries per spatial dim");
  g.pads_begin = a.pads.empty() ? Dims(sp, 0) : Dims(a.pads.begin(), a.pads.begin() + static_cast<long>(sp));
  g.pads_end = a.pads.empty() ? Dims(sp, 0) : Dims(a.pads.begin() + static_cast<long>(sp), a.pads.end());
  for (size_t i = 0; i < sp; ++i)
    if (g.pads_begin[i] < 0 || g.pads_end[i] < 0) return Status::bad_input("Conv pads must be >= 0");
  kernels::resolve_conv_pads(a.auto_pad, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end,
                             g.out_spatial);
  for (int64_t o : g.out_spatial)
    if (o < 1) return Status::bad_input("Conv kernel does not fit the padded input " + dims_to_string(x.shape()));
  return g;
}

namespace {

// The constant float32 tensor feeding input `index` of the node (an
// initializer), or null: weights known at prepare time are packed there.
const Tensor* constant_float_input(const ir::Node& node, size_t index) {
  if (node.inputs.size() <= index || !node.inputs[index]) return nullptr;
  const Tensor* t = node.inputs[index]->constant.get();
  return t && t->dtype() == DType::Float32 ? t : nullptr;
}

// A fused Conv -> Add whose other operand is not float32 of the Conv's output
// shape (broadcast, or a model that declared other shapes): the Conv, then
// the Add as make_add runs it, then the clamp. Allocates; such models are rare.
Status conv_then_add(const ir::Node& node, const kernels::ConvGeometry& g, const Tensor& x, const Tensor& w,
                     const kernels::PackedConvWeights* packed, const Tensor* b, const Tensor& r, int threads,
                     const kernels::ConvActivation& act, Tensor& y) {
  if (r.dtype() != DType::Float32)
    return Status::bad_input("the Add after this Conv has a " + std::string(dtype_name(r.dtype())) + " operand, not float32");
  Dims conv_shape{g.batch, g.out_channels};
  conv_shape.insert(conv_shape.end(), g.out_spatial.begin(), g.out_spatial.end());
  // The convolution's own output, kept per thread between runs (runs of one
  // Session may be in flight on several threads), so steady-state runs
  // allocate nothing.
  thread_local Tensor conv;
  QT_RETURN_IF_ERROR(reuse_or_create(conv, DType::Float32, std::move(conv_shape)));
  kernels::conv_f32_fast(g, x.data<float>(), w.data<float>(), packed, b ? b->data<float>() : nullptr, conv.data<float>(),
                         threads);
  QT_ASSIGN_OR_RETURN(Dims shape, broadcast_output_shape(node, {&conv.shape(), &r.shape()}));
  QT_RETURN_IF_ERROR(reuse_or_create(y, DType::Float32, std::move(shape)));
  kernels::binary_broadcast<float>(kernels::BinaryOp::Add, conv.data<float>(), conv.shape(), r.data<float>(), r.shape(),
                                   y.data<float>(), y.shape());
  if (act.clamp) kernels::clamp_f32(y.data<float>(), y.data<float>(), y.size(), act.lo, act.hi, threads);
  return Status::ok();
}

// A Conv's constant weights, packed once for the fast paths
// (PackedConvWeights): when the session is made, or for a 1x1 kernel at the
// first run, whose map size picks the lanes or the GEMM layout (small maps
// go to the lanes path) and which exported graphs seldom state before it.
// Runs of one Session may be in flight on several threads: the first packs,
// the others wait for it.
struct ConvPacking {
  std::once_flag once;
  kernels::PackedConvWeights weights;

  void pack(const Tensor& w, int64_t group, int64_t pointwise_pixels) {
    std::call_once(once, [&] {
      weights = kernels::PackedConvWeights(w.data<float>(), w.dim(0), group, w.size() / w.dim(0),
                                           std::span<const int64_t>(w.shape()).subspan(2), pointwise_pixels);
    });
  }
};

}  // namespace

KernelResult make_conv(const KernelContext& ctx) { return make_conv_fused(ctx, {}); }

KernelResult make_conv_fused(const KernelContext& ctx, const kernels::ConvActivation& act, bool residual) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(ConvAttrs attrs, parse_conv_attrs(node));
  // Constant weights are packed once (ConvPacking); the run checks that it
  // is handed that same tensor before using the packed copy.
  const Tensor* w_const = constant_float_input(node, 1);
  auto packing = std::make_shared<ConvPacking>();
  // Depthwise weights (one channel in and out per group) are read directly.
  const bool depthwise = w_const && w_const->rank() >= 3 && w_const->dim(1) == 1 && w_const->dim(0) == attrs.group;
  const bool packed = w_const && w_const->rank() >= 3 && attrs.group >= 1 && w_const->dim(0) % attrs.group == 0 &&
                      w_const->dim(0) > 0 && !depthwise;
  const bool one_by_one = packed && w_const->size() == w_const->dim(0) * w_const->dim(1);  // every kernel dim 1
  if (packed && !one_by_one) packing->pack(*w_const, attrs.group, 0);
  const int threads = ctx.options.threads;
  return make_kernel([&node, attrs, w_const, packing, packed, threads, act, residual](
                         std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    const Tensor& w = *in[1];
    const Tensor* b = in.size() > 2 ? in[2] : nullptr;
    const Tensor* r = residual && in.size() > 3 ? in[3] : nullptr;
    if (residual && !r) return Status::internal("fused Conv -> Add without its residual operand");
    QT_RETURN_IF_ERROR(require_dtype(node, x, DType::Float32, "input"));
    QT_RETURN_IF_ERROR(require_dtype(node, w, DType::Float32, "weight"));
    QT_ASSIGN_OR_RETURN(auto g, conv_geometry(attrs, x, w));
    if (b) {
      QT_RETURN_IF_ERROR(require_dtype(node, *b, DType::Float32, "bias"));
      if (b->size() != g.out_channels) return Status::bad_input("Conv bias must have " + std::to_string(g.out_channels) + " values");
    }
    Dims shape{g.batch, g.out_channels};
    shape.insert(shape.end(), g.out_spatial.begin(), g.out_spatial.end());
    const kernels::PackedConvWeights* pw = nullptr;
    if (packed && &w == w_const) {
      packing->pack(w, attrs.group, kernels::pointwise_pixels(g));  // packed already unless 1x1
      pw = &packing->weights;
    }
    if (r && (r->dtype() != DType::Float32 || r->shape() != shape)) return conv_then_add(node, g, x, w, pw, b, *r, threads, act, out[0]);
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], DType::Float32, std::move(shape)));
    kernels::ConvActivation epilogue = act;
    epilogue.residual = r ? r->data<float>() : nullptr;
    kernels::conv_f32_fast(g, x.data<float>(), w.data<float>(), pw, b ? b->data<float>() : nullptr, out[0].data<float>(),
                           threads, epilogue);
    return Status::ok();
  });
}

// Gemm (opset 7-13): Y = alpha * A' B' + beta * C, C unidirectionally broadcast.
// Whether a constant GEMM weight is packed once when the session is made.
// A weight mapped from external data (a large model, DESIGN "Large models")
// is not: a packed copy of every weight would double the model in memory,
// so its runs pack panels as they go (gemm_f32_packed with an unpacked B, the
// same micro-kernel and sums).
namespace {
bool prepacked_weight(const Tensor& w) { return w.mapping() == nullptr; }
}  // namespace

KernelResult make_gemm(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  // A constant B (the weights of a fully connected layer) is packed once,
  // unless mapped (prepacked_weight).
  const Tensor* b_const = constant_float_input(node, 1);
  auto packed = std::make_shared<kernels::PackedMatrix>();
  if (b_const && b_const->rank() == 2 && prepacked_weight(*b_const)) {
    const int64_t K = tb ? b_const->dim(1) : b_const->dim(0), N = tb ? b_const->dim(0) : b_const->dim(1);
    *packed = kernels::PackedMatrix::pack_b(tb ? kernels::MatrixView{b_const->data<float>(), 1, K}
                                               : kernels::MatrixView{b_const->data<float>(), N, 1},
                                            K, N, kernels::detail::best_gemm_isa());
  }
  const int threads = ctx.options.threads;
  return make_kernel([&node, ta, tb, alpha, beta, b_const, packed, threads](std::span<const Tensor* const> in,
                                                                            std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    const Tensor* c = in.size() > 2 ? in[2] : nullptr;
    if (a.rank() != 2 || b.rank() != 2) return Status::bad_input("Gemm inputs must be 2-D");
    const int64_t M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1);
    const int64_t N = tb ? b.dim(0) : b.dim(1), Kb = tb ? b.dim(1) : b.dim(0);
    if (K != Kb) return Status::bad_input("Gemm inner dims differ: A " + dims_to_string(a.shape()) + ", B " + dims_to_string(b.shape()));
    int64_t c_rows = 1, c_cols = 1;
    if (c) {
      if (c->rank() > 2) return Status::bad_input("Gemm C must have rank <= 2");
      if (c->rank() == 2) c_rows = c->dim(0);
      if (c->rank() >= 1) c_cols = c->dim(c->rank() - 1);
      if ((c_rows != 1 && c_rows != M) || (c_cols != 1 && c_cols != N))
        return Status::bad_input("Gemm C " + dims_to_string(c->shape()) + " does not broadcast to [" + std::to_string(M) +
                                 "," + std::to_string(N) + "]");
    }
    // Other element types (double, integers: Gemm-9+) take the generic kernel.
    if (a.dtype() != DType::Float32 || b.dtype() != DType::Float32 || (c && c->dtype() != DType::Float32))
      return run_gemm_any_type(node, ta, tb, M, N, K, alpha, a, b, beta, c, c_rows, c_cols, out[0]);
    QT_RETURN_IF_ERROR(reuse_or_create(out[0], DType::Float32, {M, N}));
    float* y = out[0].data<float>();
    kernels::GemmEpilogue ep;
    ep.alpha = alpha;
    if (c && beta != 0.0f) {
      // A bias row or column is added in the micro-kernel's store; any other
      // C is written first and the product accumulated onto it.
      if (beta == 1.0f && c_rows == 1 && c_cols == N && N > 1) {
        ep.col_bias = c->data<float>();
      } else if (beta == 1.0f && c_cols == 1 && c_rows == M && M > 1) {
        ep.row_bias = c->data<float>();
      } else {
        const float* cd = c->data<float>();
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) y[i * N + j] = beta * cd[(c_rows == 1 ? 0 : i * c_cols) + (c_cols == 1 ? 0 : j)];
        ep.accumulate = true;
      }
    }
    const kernels::GemmA ga{nullptr, ta ? kernels::MatrixView{a.data<float>(), 1, M} : kernels::MatrixView{a.data<float>(), K, 1}};
    kernels::GemmB gb;
    if (&b == b_const && !packed->empty())
      gb.packed = packed.get();
    else
      gb.view = tb ? kernels::MatrixView{b.data<float>(), 1, K} : kernels::MatrixView{b.data<float>(), N, 1};
    kernels::gemm_f32_packed(M, N, K, ga, gb, y, N, ep, kernels::threads_for_product(threads, M * N * K, 4 * (M + N) * K));
    return Status::ok();
  });
}

KernelResult make_matmul(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  // A constant 2-D B (weights of a linear layer) is packed once, unless
  // mapped (prepacked_weight); A's batch dimensions then fold into the GEMM's rows.
  const Tensor* b_const = constant_float_input(node, 1);
  auto packed = std::make_shared<kernels::PackedMatrix>();
  if (b_const && b_const->rank() == 2 && prepacked_weight(*b_const))
    *packed = kernels::PackedMatrix::pack_b(kernels::MatrixView{b_const->data<float>(), b_const->dim(1), 1}, b_const->dim(0),
                                            b_const->dim(1), kernels::detail::best_gemm_isa());
  const int threads = ctx.options.threads;
  return make_kernel([&node, b_const, packed, threads](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    // Other element types (double, integers: MatMul-9+) take the generic kernel.
    if (a.dtype() != DType::Float32 || b.dtype() != DType::Float32) return run_matmul_any_type(node, a, b, out[0]);
    auto shape = kernels::matmul_output_shape(a.shape(), b.shape());
    if (!shape) return Status::bad_input("MatMul shapes " + dims_to_string(a.shape()) + " and " + dims_to_string(b.shape()) + " do not fit");
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, *shape));
    if (&b == b_const && !packed->empty()) {
      const int64_t K = b.dim(0), N = b.dim(1);
      const kernels::GemmA ga{nullptr, kernels::MatrixView{a.data<float>(), K, 1}};
      const kernels::GemmB gb{packed.get(), {}, nullptr};
      const int64_t rows = K == 0 ? out[0].size() / std::max<int64_t>(N, 1) : a.size() / K;
      kernels::gemm_f32_packed(rows, N, K, ga, gb, out[0].data<float>(), N, {},
                               kernels::threads_for_product(threads, rows * N * K, 4 * (rows + N) * K));
      return Status::ok();
    }
    kernels::matmul_f32(a.data<float>(), a.shape(), b.data<float>(), b.shape(), out[0].data<float>(), threads);
    return Status::ok();
  });
}

}  // namespace quant::interp
