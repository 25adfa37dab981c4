#include "libquant/kernels/matmul.h"

#include <algorithm>
#include <cassert>

#include "libquant/kernels/gemm_packed.h"
#include "libquant/kernels/threadpool.h"

namespace quant::kernels {
namespace {

// Matrix view of one operand after 1-D promotion: batch dims + [rows, cols].
struct OperandShape {
  std::span<const int64_t> batch;
  int64_t rows, cols;
};

OperandShape view_a(std::span<const int64_t> a) {
  if (a.size() == 1) return {{}, 1, a[0]};
  return {a.first(a.size() - 2), a[a.size() - 2], a[a.size() - 1]};
}

OperandShape view_b(std::span<const int64_t> b) {
  if (b.size() == 1) return {{}, b[0], 1};
  return {b.first(b.size() - 2), b[b.size() - 2], b[b.size() - 1]};
}

int64_t batches_of(std::span<const int64_t> batch) {
  int64_t n = 1;
  for (int64_t d : batch) n *= d;
  return n;
}

}  // namespace

std::optional<Dims> matmul_output_shape(std::span<const int64_t> a, std::span<const int64_t> b) {
  if (a.empty() || b.empty()) return std::nullopt;
  const OperandShape va = view_a(a), vb = view_b(b);
  if (va.cols != vb.rows) return std::nullopt;
  std::optional<Dims> out = broadcast_shapes(va.batch, vb.batch);
  if (!out) return std::nullopt;
  // The promoted dimension of a 1-D operand is not part of the result.
  if (a.size() != 1) out->push_back(va.rows);
  if (b.size() != 1) out->push_back(vb.cols);
  return out;
}

void matmul_f32(const float* A, std::span<const int64_t> a_shape, const float* B, std::span<const int64_t> b_shape,
                float* Y, int threads) {
  assert(!a_shape.empty() && !b_shape.empty());
  const OperandShape va = view_a(a_shape), vb = view_b(b_shape);
  assert(va.cols == vb.rows);
  const int64_t M = va.rows, K = va.cols, N = vb.cols;
  const size_t batch_rank = std::max(va.batch.size(), vb.batch.size());
  int64_t batches = 1;
  for (size_t d = 0; d < batch_rank; ++d) {
    const size_t ra = batch_rank - va.batch.size(), rb = batch_rank - vb.batch.size();
    const int64_t da = d < ra ? 1 : va.batch[d - ra], db = d < rb ? 1 : vb.batch[d - rb];
    assert(da == db || da == 1 || db == 1);
    batches *= da == 1 ? db : da;
  }
  const int64_t b_batches = batches_of(vb.batch);
  if (b_batches == 1) {
    // One B for every batch (x @ W on [batch, tokens, K]): A's batches are
    // the rows of one GEMM, as they lie; the same bits as a GEMM per batch
    // (an element's sum runs over the same depth blocks whatever the rows
    // around it: gemm_packed.h).
    const int64_t rows = batches * M;
    gemm_f32_packed(rows, N, K, GemmA{nullptr, MatrixView{A, K, 1}}, GemmB{nullptr, MatrixView{B, N, 1}, nullptr}, Y,
                    N, {}, threads_for_product(threads, rows * N * K, 4 * (rows * K + K * N)));
    return;
  }
  // Batches of their own B (attention's Q K^T and P V, one per head): whole
  // batches on the threads, each batch's GEMM on one, where there are
  // enough of them; else each batch split in turn. The same bits either way.
  const int64_t macs = M * N * K, bytes = 4 * (M * K + K * N);
  const int split = threads_for_product(threads, batches * macs, batches * bytes);
  const auto run = [&](int64_t n, int gemm_threads) {
    // Decompose the output batch index from the innermost batch dimension,
    // accumulating each operand's offset (broadcast dims contribute nothing).
    int64_t rem = n, a_off = 0, b_off = 0, a_stride = M * K, b_stride = K * N;
    for (size_t i = 0; i < batch_rank; ++i) {
      const int64_t da = i < va.batch.size() ? va.batch[va.batch.size() - 1 - i] : 1;
      const int64_t db = i < vb.batch.size() ? vb.batch[vb.batch.size() - 1 - i] : 1;
      const int64_t dy = da == 1 ? db : da;
      const int64_t coord = rem % dy;
      rem /= dy;
      if (da != 1) a_off += coord * a_stride;
      if (db != 1) b_off += coord * b_stride;
      a_stride *= da;
      b_stride *= db;
    }
    gemm_f32_packed(M, N, K, GemmA{nullptr, MatrixView{A + a_off, K, 1}}, GemmB{nullptr, MatrixView{B + b_off, N, 1}, nullptr},
                    Y + n * M * N, N, {}, gemm_threads);
  };
  if (split > 1 && batches >= split) {
    parallel_for(split, batches, [&](int64_t n) { run(n, 1); });
    return;
  }
  for (int64_t n = 0; n < batches; ++n) run(n, threads_for_product(split, macs, bytes));
}

}  // namespace quant::kernels
