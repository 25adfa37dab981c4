// Dynamic quantization: DynamicQuantizeLinear (opset 11), MatMulInteger (10),
// ConvInteger (10), and ONNX Runtime's com.microsoft MatMulNBits (4-bit
// weights in blocks along K), which qconvert --dynamic emits.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "libquant/interp/dot_target.h"
#include "libquant/interp/ops.h"
#include "libquant/kernels/dynamic_quantize.h"
#include "libquant/kernels/int4_matmul.h"
#include "libquant/kernels/qconv_fast.h"
#include "libquant/kernels/qgemm_packed.h"
#include "libquant/kernels/threadpool.h"

namespace quant::interp {
namespace {

bool is_8bit(DType t) { return t == DType::UInt8 || t == DType::Int8; }

// A zero point input that must hold one value (per-tensor), or nullptr.
Expected<int32_t> scalar_zero_point(const ir::Node& node, const Tensor* zp, DType want, const char* what) {
  if (!zp) return 0;
  if (zp->dtype() != want)
    return Status::bad_input(node.op_type + " " + what + " must have the type of its input (" +
                             std::string(dtype_name(want)) + "), got " + std::string(dtype_name(zp->dtype())));
  if (zp->size() != 1)
    return Status::bad_input(node.op_type + " " + what + " " + dims_to_string(zp->shape()) +
                             ": only a per-tensor (one value) zero point is supported");
  return static_cast<int32_t>(zp->as_int64(0));
}

// B's zero point: none, one value, or one per output column / channel.
Status check_b_zero_point(const ir::Node& node, const Tensor* zp, DType want, int64_t columns, const char* what) {
  if (!zp) return Status::ok();
  if (zp->dtype() != want)
    return Status::bad_input(node.op_type + " " + what + " must have the type of its input (" +
                             std::string(dtype_name(want)) + "), got " + std::string(dtype_name(zp->dtype())));
  if (zp->size() != 1 && !(zp->size() == columns && zp->rank() <= 2))
    return Status::bad_input(node.op_type + " " + what + " " + dims_to_string(zp->shape()) + " must hold 1 or " +
                             std::to_string(columns) + " values");
  return Status::ok();
}

template <class TA, class TB>
void run_qgemm(int64_t m, int64_t n, int64_t k, const TA* a, int32_t za, const TB* b, kernels::BLayout layout,
               const Tensor* zb, int32_t* c, int64_t ldc, int threads, const DotTarget* dot = nullptr) {
  if constexpr (std::is_same_v<TB, int8_t>) {
    if (dot) {  // as the saturating target computes it (interp/dot_target.h)
      const auto w = kernels::Sat16Weights::from_matrix(b, layout == kernels::BLayout::KxN ? n : k, layout, k, n,
                                                        zb ? zb->data<int8_t>() : nullptr, zb ? zb->size() : 0);
      dot->record(kernels::qgemm_sat16<TA>(m, a, k, static_cast<TA>(za), w, 0, n, c, ldc));
      return;
    }
  }
  kernels::QGemmArgs<TA, TB> args;
  args.m = m;
  args.n = n;
  args.k = k;
  args.a = a;
  args.lda = k;
  args.a_zero_point = static_cast<TA>(za);
  args.b = b;
  args.ldb = layout == kernels::BLayout::KxN ? n : k;
  args.b_layout = layout;
  args.b_zero_point = zb ? zb->data<TB>() : nullptr;
  args.b_zero_point_count = zb ? zb->size() : 0;
  args.c = c;
  args.ldc = ldc;
  kernels::qgemm_fast(args, kernels::threads_for_product(threads, m * n * k, (m + n) * k));
}

// Dispatches on the (A, B) pair of 8-bit types.
template <class F>
void with_8bit_types(DType a, DType b, F&& f) {
  if (a == DType::UInt8 && b == DType::Int8) f(uint8_t{}, int8_t{});
  else if (a == DType::UInt8) f(uint8_t{}, uint8_t{});
  else if (b == DType::Int8) f(int8_t{}, int8_t{});
  else f(int8_t{}, uint8_t{});
}

}  // namespace

KernelResult make_dynamic_quantize_linear(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  return make_kernel([&node](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const Tensor& x = *in[0];
    QT_RETURN_IF_ERROR(require_dtype(node, x, DType::Float32, "input"));
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::UInt8, x.shape()));
    Tensor scale(DType::Float32, {}), zp(DType::UInt8, {});
    kernels::dynamic_quantize_linear_u8(x.data<float>(), x.size(), out[0].data<uint8_t>(), scale.data<float>(),
                                        zp.data<uint8_t>());
    if (out.size() > 1) out[1] = std::move(scale);
    if (out.size() > 2) out[2] = std::move(zp);
    return Status::ok();
  });
}

// MatMulInteger-10: int32 Y = (A - a_zero_point) x (B - b_zero_point) with
// numpy.matmul shapes. Supported: A of any rank >= 2 against a 2-D B (the
// batch dims of A fold into rows), or A and B with equal batch dims; a
// per-tensor a_zero_point; b_zero_point per tensor or per column of a 2-D B
// (ONNX Runtime's CPU kernel has the same limits on a_zero_point).
KernelResult make_matmul_integer(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int threads = ctx.options.threads;
  const DotTarget dot = dot_target(ctx);
  const bool b_activation = !node.input(1) || !ir::constant_data(node.input(1));
  return make_kernel([&node, threads, dot, b_activation](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    const Tensor* za_t = in.size() > 2 ? in[2] : nullptr;
    const Tensor* zb = in.size() > 3 ? in[3] : nullptr;
    if (!is_8bit(a.dtype()) || !is_8bit(b.dtype()))
      return Status::bad_input("MatMulInteger inputs must be uint8 or int8, got " + std::string(dtype_name(a.dtype())) +
                               " and " + std::string(dtype_name(b.dtype())));
    if (a.rank() < 2 || b.rank() < 2)
      return Status::bad_input("MatMulInteger needs inputs of rank >= 2, got " + dims_to_string(a.shape()) + " and " +
                               dims_to_string(b.shape()));
    const int64_t K = a.dim(a.rank() - 1), N = b.dim(b.rank() - 1), M = a.dim(a.rank() - 2);
    if (b.dim(b.rank() - 2) != K)
      return Status::bad_input("MatMulInteger shapes " + dims_to_string(a.shape()) + " and " + dims_to_string(b.shape()) +
                               " do not fit");
    const bool flat_b = b.rank() == 2;
    if (!flat_b && !std::equal(a.shape().begin(), a.shape().end() - 2, b.shape().begin(), b.shape().end() - 2))
      return Status::bad_input("MatMulInteger batch dims of " + dims_to_string(a.shape()) + " and " +
                               dims_to_string(b.shape()) + " must be equal when B is not 2-D");
    QT_ASSIGN_OR_RETURN(int32_t za, scalar_zero_point(node, za_t, a.dtype(), "a_zero_point"));
    QT_RETURN_IF_ERROR(check_b_zero_point(node, zb, b.dtype(), flat_b ? N : 1, "b_zero_point"));
    Dims shape = a.shape();
    shape.back() = N;
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Int32, shape));
    const int64_t batches = a.size() / std::max<int64_t>(M * K, 1);
    const int64_t rows = flat_b ? batches * M : M;
    const int64_t runs = flat_b ? 1 : batches;
    const DotTarget* sat = dot.applies(a.dtype(), b.dtype(), b_activation) ? &dot : nullptr;
    with_8bit_types(a.dtype(), b.dtype(), [&](auto ta, auto tb) {
      using TA = decltype(ta);
      using TB = decltype(tb);
      for (int64_t r = 0; r < runs; ++r)
        run_qgemm<TA, TB>(rows, N, K, a.data<TA>() + r * M * K, za, b.data<TB>() + r * K * N, kernels::BLayout::KxN, zb,
                          out[0].data<int32_t>() + r * M * N, N, threads, sat);
    });
    return Status::ok();
  });
}

// ConvInteger-10: int32 Y = conv(X - x_zero_point, W - w_zero_point), padding
// contributing 0 (it stands for x_zero_point, as in ONNX Runtime); w_zero_point
// per tensor or per output channel. Runs on kernels::qconv_fast (weights
// packed per run: dynamic quantization keeps them as int8 constants, but
// ConvInteger models are rare enough that prepare-time packing is not worth
// its code here).
KernelResult make_conv_integer(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  QT_ASSIGN_OR_RETURN(ConvAttrs attrs, parse_conv_attrs(node));
  const int threads = ctx.options.threads;
  return make_kernel([&node, attrs, threads](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const Tensor& x = *in[0];
    const Tensor& w = *in[1];
    if (!is_8bit(x.dtype()) || !is_8bit(w.dtype()))
      return Status::bad_input("ConvInteger inputs must be uint8 or int8, got " + std::string(dtype_name(x.dtype())) +
                               " and " + std::string(dtype_name(w.dtype())));
    QT_ASSIGN_OR_RETURN(auto g, conv_geometry(attrs, x, w));
    QT_ASSIGN_OR_RETURN(int32_t zx, scalar_zero_point(node, in.size() > 2 ? in[2] : nullptr, x.dtype(), "x_zero_point"));
    const Tensor* zw = in.size() > 3 ? in[3] : nullptr;
    QT_RETURN_IF_ERROR(check_b_zero_point(node, zw, w.dtype(), g.out_channels, "w_zero_point"));
    Dims shape{g.batch, g.out_channels};
    shape.insert(shape.end(), g.out_spatial.begin(), g.out_spatial.end());
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Int32, shape));
    with_8bit_types(x.dtype(), w.dtype(), [&](auto tx, auto tw) {
      using TX = decltype(tx);
      using TW = decltype(tw);
      const kernels::PackedQConvWeights packed(w.data<TW>(), g.out_channels, g.group, w.size() / std::max<int64_t>(g.out_channels, 1),
                                               zw ? zw->data<TW>() : nullptr, zw ? zw->size() : 0);
      kernels::qconv_fast<TX, int32_t>(g, x.data<TX>(), static_cast<TX>(zx), packed, nullptr, nullptr,
                                       out[0].data<int32_t>(), threads);
    });
    return Status::ok();
  });
}

// com.microsoft MatMulNBits (ONNX Runtime 1.20 contrib op), bits = 4:
// Y[..., N] = A[..., K] x dequant(B)^T (+ bias). Inputs: A, B uint8
// [N, n_blocks, block_size / 2], scales [N * n_blocks] (or [N, n_blocks]),
// optional zero_points (packed 4-bit uint8; float zero points are refused),
// g_idx (must be absent), bias [N]. accuracy_level 4 means A may be computed
// in int8: qtool then quantizes A per row to int8 (torchao's per-token
// asymmetric scheme) and accumulates int8 x int4 products in int32 per block
// (qconvert --dynamic --weights int4). Other levels keep A float.
KernelResult make_matmul_nbits(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const int64_t K = node.attr_int("K", -1), N = node.attr_int("N", -1), bits = node.attr_int("bits", 4);
  const int64_t block = node.attr_int("block_size", -1), level = node.attr_int("accuracy_level", 0);
  if (bits != 4) return Status::bad_input(node.describe() + ": only bits = 4 is supported, got " + std::to_string(bits));
  if (K < 1 || N < 1) return Status::bad_input(node.describe() + ": attributes K and N must be >= 1");
  if (block < 16 || block > (int64_t{1} << 20) || (block & (block - 1)) != 0)
    return Status::bad_input(node.describe() + ": block_size must be a power of two from 16 to 2^20, got " + std::to_string(block));
  return make_kernel([&node, K, N, block, level](std::span<const Tensor* const> in, std::vector<Tensor>& out) -> Status {
    QT_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    const Tensor& scales = *in[2];
    const Tensor* zp = in.size() > 3 ? in[3] : nullptr;
    const Tensor* bias = in.size() > 5 ? in[5] : nullptr;
    QT_RETURN_IF_ERROR(require_dtype(node, a, DType::Float32, "A"));
    QT_RETURN_IF_ERROR(require_dtype(node, b, DType::UInt8, "B"));
    QT_RETURN_IF_ERROR(require_dtype(node, scales, DType::Float32, "scales"));
    kernels::Int4Blocks w{N, K, block, b.data<uint8_t>(), scales.data<float>(), nullptr};
    const int64_t nb = w.n_blocks();
    if (a.rank() < 1 || a.dim(a.rank() - 1) != K)
      return Status::bad_input("MatMulNBits A " + dims_to_string(a.shape()) + " must end in K = " + std::to_string(K));
    if (b.shape() != Dims{N, nb, block / 2})
      return Status::bad_input("MatMulNBits B " + dims_to_string(b.shape()) + " must have shape " +
                               dims_to_string(Dims{N, nb, block / 2}));
    if (scales.size() != N * nb)
      return Status::bad_input("MatMulNBits scales " + dims_to_string(scales.shape()) + " must hold N * n_blocks = " +
                               std::to_string(N * nb) + " values");
    if (zp) {
      if (zp->dtype() != DType::UInt8)
        return Status::bad_input("MatMulNBits zero_points of type " + std::string(dtype_name(zp->dtype())) +
                                 " are not supported (only packed uint8)");
      if (zp->size() != N * ((nb + 1) / 2))
        return Status::bad_input("MatMulNBits zero_points must hold " + std::to_string(N * ((nb + 1) / 2)) + " bytes");
      w.zero_points = zp->data<uint8_t>();
    }
    if (in.size() > 4 && in[4]) return Status::bad_input("MatMulNBits g_idx is not supported");
    if (bias) {
      QT_RETURN_IF_ERROR(require_dtype(node, *bias, DType::Float32, "bias"));
      if (bias->size() != N) return Status::bad_input("MatMulNBits bias must hold N = " + std::to_string(N) + " values");
    }
    Dims shape = a.shape();
    shape.back() = N;
    QT_ASSIGN_OR_RETURN(out[0], Tensor::create(DType::Float32, shape));
    const int64_t rows = a.size() / K;
    const float* bias_data = bias ? bias->data<float>() : nullptr;
    if (level == 4) {
      std::vector<int8_t> qa(static_cast<size_t>(a.size()));
      std::vector<float> a_scales(static_cast<size_t>(rows));
      std::vector<int32_t> a_zps(static_cast<size_t>(rows));
      kernels::quantize_rows_s8(a.data<float>(), rows, K, qa.data(), a_scales.data(), a_zps.data());
      kernels::matmul_s8_int4(qa.data(), a_scales.data(), a_zps.data(), rows, w, bias_data, out[0].data<float>());
    } else {
      kernels::matmul_f32_int4(a.data<float>(), rows, w, bias_data, out[0].data<float>());
    }
    return Status::ok();
  });
}

}  // namespace quant::interp
