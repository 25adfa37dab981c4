#include "libquant/kernels/gemm_packed.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>

#include "libquant/core/aligned_memory.h"
#include "libquant/kernels/cpu.h"
#include "libquant/kernels/threadpool.h"

namespace quant::kernels {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Writes `count` (<= width) lines of the operand starting at line x0, depth
// [k0, k0+kc), as one panel: dst[kk*width + xx] = element(x0+xx, k0+kk), zero
// for xx >= count. `line_stride` steps to the next line (a row of A, a column
// of B), `depth_stride` along K.
void pack_panel(const float* data, int64_t line_stride, int64_t depth_stride, int64_t x0, int64_t count, int64_t k0,
                int64_t kc, int width, float* dst) {
  const float* base = data + x0 * line_stride + k0 * depth_stride;
  if (line_stride == 1) {
    // Lines contiguous (row-major B): one short copy per k.
    for (int64_t kk = 0; kk < kc; ++kk) {
      std::memcpy(dst + kk * width, base + kk * depth_stride, static_cast<size_t>(count) * sizeof(float));
      std::fill(dst + kk * width + count, dst + (kk + 1) * width, 0.0f);
    }
    return;
  }
  for (int64_t xx = 0; xx < count; ++xx) {
    const float* line = base + xx * line_stride;
    for (int64_t kk = 0; kk < kc; ++kk) dst[kk * width + xx] = line[kk * depth_stride];
  }
  if (count < width)
    for (int64_t kk = 0; kk < kc; ++kk) std::fill(dst + kk * width + count, dst + (kk + 1) * width, 0.0f);
}

// Per-thread scratch for panels packed during a call; grows, never shrinks,
// so steady-state runs allocate nothing.
float* scratch(AlignedFloats& buf, int64_t count) {
  if (buf.size() < count) buf = AlignedFloats(count);
  return buf.data();
}

struct Problem {
  int64_t M, N, K;
  const GemmA& a;
  const GemmB& b;
  float* c;
  int64_t ldc;
  const GemmEpilogue& ep;
  const detail::GemmIsa& isa;
  // B packed by gemm_f32_packed before the split (PackedMatrix layout, row
  // of panels `b_padded` columns wide), or null.
  const float* b_prepacked = nullptr;
  int64_t b_padded = 0;
};

// Columns [j, j + cols) (the last, partial B panel `b` of the depth block
// k0) for A panels [p0, p1) through the ISA's column tail, then each tile's
// epilogue by store_tile_scalar (the bits of the micro-kernels' own).
void run_column_tail(const Problem& pr, int64_t k0, int64_t kc, int64_t j, const float* b, int cols, int64_t p0,
                     int64_t p1, detail::MicroEpilogue mep) {
  const int mr = pr.isa.mr;
  thread_local AlignedFloats tile_buf;
  float* tiles = scratch(tile_buf, detail::kColumnTailPanels * mr * 8);
  mep.col_bias = pr.ep.col_bias ? pr.ep.col_bias + j : nullptr;
  for (int64_t p = p0; p < p1; p += detail::kColumnTailPanels) {
    const int count = static_cast<int>(std::min<int64_t>(detail::kColumnTailPanels, p1 - p));
    const float* a[detail::kColumnTailPanels];
    for (int t = 0; t < count; ++t) a[t] = pr.a.packed->panel(k0, p + t);
    pr.isa.column_tail(kc, a, count, b, pr.isa.nr, cols, tiles);
    for (int t = 0; t < count; ++t) {
      const int64_t i0 = (p + t) * mr;
      mep.row_bias = pr.ep.row_bias ? pr.ep.row_bias + i0 : nullptr;
      mep.residual = pr.ep.residual ? pr.ep.residual + i0 * pr.ep.ldr + j : nullptr;
      detail::store_tile_scalar(tiles + t * mr * 8, 8, pr.c + i0 * pr.ldc + j, pr.ldc,
                                static_cast<int>(std::min<int64_t>(mr, pr.M - i0)), cols, mep);
    }
  }
}

// The epilogue of the depth block [k0, k0 + kc), before the row and column
// terms of each tile.
detail::MicroEpilogue micro_epilogue(const Problem& pr, int64_t k0, int64_t kc) {
  detail::MicroEpilogue mep;
  mep.alpha = pr.ep.alpha;
  mep.accumulate = k0 > 0 || pr.ep.accumulate;
  mep.last = k0 + kc == pr.K;
  mep.ldr = pr.ep.ldr;
  mep.clamp = pr.ep.clamp;
  mep.lo = pr.ep.lo;
  mep.hi = pr.ep.hi;
  return mep;
}

// A's panel p for the depth block at k0: packed, or packed now into buf.
const float* a_panel(const Problem& pr, int64_t k0, int64_t kc, int64_t p, AlignedFloats& buf) {
  const int mr = pr.isa.mr;
  if (pr.a.packed) return pr.a.packed->panel(k0, p);
  float* dst = scratch(buf, kc * mr);
  pack_panel(pr.a.view.data, pr.a.view.row_stride, pr.a.view.col_stride, p * mr,
             std::min<int64_t>(mr, pr.M - p * mr), k0, kc, mr, dst);
  return dst;
}

// How B's columns lie when read through row offsets (GemmB::rows): in
// segments of `seg` columns, `pitch` floats apart, `per_seg` panels each,
// the last with `half` columns. Where that is at most half a panel (a row of
// 56: 3 x 16 + 8), a segment's last panel shares its tile with the next
// segment's (RowsPairKernel): `pairs`.
struct Segments {
  int64_t seg, pitch, per_seg, half;
  bool pairs;
};
Segments segments(const GemmB& b, int64_t N, const detail::GemmIsa& isa) {
  Segments g;
  g.seg = b.seg_len ? b.seg_len : N;
  g.pitch = b.seg_len ? b.seg_pitch : N;
  g.per_seg = ceil_div(g.seg, isa.nr);
  g.half = g.seg - (g.per_seg - 1) * isa.nr;
  g.pairs = isa.kernel_rows_pair && b.seg_len && 2 * g.half <= isa.nr;
  return g;
}

// B read in place through row offsets (GemmB::rows): panels [t0, t1) of the
// segments (a segment's panels, then the next segment's) against A panels
// [p0, p1). Nothing is packed but A panels that were not.
void run_rows_block(const Problem& pr, int64_t t0, int64_t t1, int64_t p0, int64_t p1) {
  thread_local AlignedFloats a_buf;
  const int mr = pr.isa.mr, nr = pr.isa.nr;
  // Plain copies, not a structured binding: the lambdas below capture them
  // (clang before 16 refuses to capture bindings; the fuzz build uses clang).
  const Segments segs = segments(pr.b, pr.N, pr.isa);
  const int64_t seg = segs.seg, pitch = segs.pitch, per_seg = segs.per_seg, half = segs.half;
  const bool pairs = segs.pairs;
  for (int64_t k0 = 0; k0 < pr.K; k0 += kGemmKc) {
    const int64_t kc = std::min(kGemmKc, pr.K - k0);
    detail::MicroEpilogue mep = micro_epilogue(pr, k0, kc);
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t i0 = p * mr;
      const int m_valid = static_cast<int>(std::min<int64_t>(mr, pr.M - i0));
      const float* ap = a_panel(pr, k0, kc, p, a_buf);
      mep.row_bias = pr.ep.row_bias ? pr.ep.row_bias + i0 : nullptr;
      const auto at_column = [&](int64_t j) {
        mep.col_bias = pr.ep.col_bias ? pr.ep.col_bias + j : nullptr;
        mep.residual = pr.ep.residual ? pr.ep.residual + i0 * pr.ep.ldr + j : nullptr;
      };
      const auto run_one = [&](int64_t t) {
        const int64_t s = t / per_seg, x = t % per_seg * nr, j = s * seg + x;
        at_column(j);
        pr.isa.kernel_rows(kc, ap, pr.b.view.data + s * pitch + x, pr.b.rows + k0, pr.c + i0 * pr.ldc + j, pr.ldc,
                           m_valid, static_cast<int>(std::min<int64_t>(nr, seg - x)), mep);
      };
      int64_t waiting = -1;  // a segment's half panel, for the next segment's
      for (int64_t t = t0; t < t1; ++t) {
        if (!pairs || t % per_seg != per_seg - 1) {
          run_one(t);
        } else if (waiting < 0) {
          waiting = t;
        } else {
          // The half panels of segments s - 1 and s (waiting is t - per_seg) in one tile.
          const int64_t s = waiting / per_seg, x = (per_seg - 1) * nr, j = s * seg + x;
          at_column(j);
          pr.isa.kernel_rows_pair(kc, ap, pr.b.view.data + s * pitch + x, pr.b.rows + k0, pitch,
                                  pr.c + i0 * pr.ldc + j, pr.ldc, seg, m_valid, static_cast<int>(half), mep);
          waiting = -1;
        }
      }
      if (waiting >= 0) run_one(waiting);
    }
  }
}

// Columns [j0, j0+nc) and A panels [p0, p1) of the product.
void run_block(const Problem& pr, int64_t j0, int64_t nc, int64_t p0, int64_t p1) {
  thread_local AlignedFloats a_buf, b_buf;
  const int mr = pr.isa.mr, nr = pr.isa.nr;
  const int64_t n_panels = ceil_div(nc, nr);
  for (int64_t k0 = 0; k0 < pr.K; k0 += kGemmKc) {
    const int64_t kc = std::min(kGemmKc, pr.K - k0);
    // A row-major B is read in place, full panels straight from its rows
    // (b_stride = its row stride); only a last, partial panel is copied, so
    // that nothing past a row is read.
    const bool in_place = !pr.b.packed && !pr.b_prepacked && !pr.b.source && pr.b.view.col_stride == 1;
    const float* bp = nullptr;
    if (pr.b.packed) {
      bp = pr.b.packed->panel(k0, j0 / nr);
    } else if (pr.b_prepacked) {
      bp = pr.b_prepacked + k0 * pr.b_padded + j0 / nr * kc * nr;
    } else {
      float* dst = scratch(b_buf, n_panels * kc * nr);
      if (pr.b.source) {
        pr.b.source->pack(k0, kc, j0, nc, nr, dst);
      } else {
        for (int64_t q = in_place ? nc / nr : 0; q < n_panels; ++q)
          pack_panel(pr.b.view.data, pr.b.view.col_stride, pr.b.view.row_stride, j0 + q * nr,
                     std::min<int64_t>(nr, nc - q * nr), k0, kc, nr, dst + q * kc * nr);
      }
      bp = dst;
    }
    detail::MicroEpilogue mep = micro_epilogue(pr, k0, kc);
    // A last panel of at most column_tail_max valid columns goes through the
    // ISA's column tail, several A panels at once, after the others (weights
    // packed at prepare time only: their panels all lie in memory).
    const int tail_cols = static_cast<int>(nc - (n_panels - 1) * nr);
    const bool tail = pr.a.packed && pr.isa.column_tail && tail_cols <= pr.isa.column_tail_max;
    const int64_t full_panels = tail ? n_panels - 1 : n_panels;
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t i0 = p * mr;
      const int m_valid = static_cast<int>(std::min<int64_t>(mr, pr.M - i0));
      const float* ap = a_panel(pr, k0, kc, p, a_buf);
      mep.row_bias = pr.ep.row_bias ? pr.ep.row_bias + i0 : nullptr;
      // Tiles of whole columns (B in place or packed alike) in one call
      // where the ISA has a run kernel; the rest tile by tile.
      int64_t q = 0;
      if (pr.isa.kernel_run) {
        q = std::min(full_panels, nc / nr);
        if (q > 0) {
          mep.col_bias = pr.ep.col_bias ? pr.ep.col_bias + j0 : nullptr;
          mep.residual = pr.ep.residual ? pr.ep.residual + i0 * pr.ep.ldr + j0 : nullptr;
          const float* b = in_place ? pr.b.view.data + k0 * pr.b.view.row_stride + j0 : bp;
          pr.isa.kernel_run(kc, ap, b, in_place ? pr.b.view.row_stride : nr, in_place ? nr : kc * nr,
                            pr.c + i0 * pr.ldc + j0, pr.ldc, m_valid, q, mep);
        }
      }
      for (; q < full_panels; ++q) {
        const int64_t j = j0 + q * nr;
        mep.col_bias = pr.ep.col_bias ? pr.ep.col_bias + j : nullptr;
        mep.residual = pr.ep.residual ? pr.ep.residual + i0 * pr.ep.ldr + j : nullptr;
        const int n_valid = static_cast<int>(std::min<int64_t>(nr, pr.N - j));
        const bool direct = in_place && (q + 1) * nr <= nc;
        const float* b = direct ? pr.b.view.data + k0 * pr.b.view.row_stride + j : bp + q * kc * nr;
        pr.isa.kernel(kc, ap, b, direct ? pr.b.view.row_stride : nr, pr.c + i0 * pr.ldc + j, pr.ldc, m_valid, n_valid,
                      mep);
      }
    }
    if (tail) run_column_tail(pr, k0, kc, j0 + full_panels * nr, bp + full_panels * kc * nr, tail_cols, p0, p1, mep);
  }
}

// K == 0: the product is zero and only the epilogue remains.
void epilogue_only(int64_t M, int64_t N, float* c, int64_t ldc, const GemmEpilogue& ep) {
  for (int64_t i = 0; i < M; ++i) {
    float* row = c + i * ldc;
    for (int64_t j = 0; j < N; ++j) {
      float v = ep.accumulate ? row[j] : 0.0f;
      if (ep.row_bias) v += ep.row_bias[i];
      if (ep.col_bias) v += ep.col_bias[j];
      if (ep.residual) v += ep.residual[i * ep.ldr + j];
      if (ep.clamp) v = std::min(std::max(v, ep.lo), ep.hi);
      row[j] = v;
    }
  }
}

}  // namespace

AlignedFloats::AlignedFloats(int64_t count) : size_(count) {
  data_.reset(static_cast<float*>(allocate_aligned(static_cast<size_t>(count) * sizeof(float))));
}

void AlignedFloats::Free::operator()(float* p) const { std::free(p); }

// A and B share the layout; only which stride walks the panel's lines
// (rows of A, columns of B) and which walks the depth differs.
PackedMatrix PackedMatrix::pack(const float* data, int64_t line_stride, int64_t depth_stride, int64_t outer,
                                int64_t depth, int width, const detail::GemmIsa& isa) {
  PackedMatrix pm;
  pm.outer_ = outer;
  pm.depth_ = depth;
  pm.width_ = width;
  pm.isa_ = &isa;
  pm.padded_ = ceil_div(outer, width) * width;
  pm.data_ = AlignedFloats(std::max<int64_t>(pm.padded_ * depth, 1));
  for (int64_t k0 = 0; k0 < depth; k0 += kGemmKc) {
    const int64_t kc = std::min(kGemmKc, depth - k0);
    for (int64_t p = 0; p * width < outer; ++p)
      pack_panel(data, line_stride, depth_stride, p * width, std::min<int64_t>(width, outer - p * width), k0, kc, width,
                 pm.data_.data() + k0 * pm.padded_ + p * kc * width);
  }
  return pm;
}

PackedMatrix PackedMatrix::pack_a(MatrixView a, int64_t M, int64_t K, const detail::GemmIsa& isa) {
  return pack(a.data, a.row_stride, a.col_stride, M, K, isa.mr, isa);
}

PackedMatrix PackedMatrix::pack_b(MatrixView b, int64_t K, int64_t N, const detail::GemmIsa& isa) {
  return pack(b.data, b.col_stride, b.row_stride, N, K, isa.nr, isa);
}

const float* PackedMatrix::panel(int64_t k0, int64_t p) const {
  const int64_t kc = std::min(kGemmKc, depth_ - k0);
  return data_.data() + k0 * padded_ + p * kc * width_;
}

int64_t gemm_block_columns(int64_t kc, int64_t nr, int64_t l2_bytes) {
  const int64_t fit = l2_bytes / 2 / (std::max<int64_t>(kc, 1) * int64_t{sizeof(float)}) / nr * nr;
  return std::clamp(fit, kGemmNcMin / nr * nr, kGemmNc / nr * nr);
}

void gemm_f32_packed(int64_t M, int64_t N, int64_t K, const GemmA& a, const GemmB& b, float* c, int64_t ldc,
                     const GemmEpilogue& ep, int threads, const detail::GemmIsa& isa, GemmSplit split) {
  assert(M >= 0 && N >= 0 && K >= 0);
  assert(!a.packed || (a.packed->isa() == &isa && a.packed->outer() == M && a.packed->depth() == K));
  assert(!b.packed || (b.packed->isa() == &isa && b.packed->outer() == N && b.packed->depth() == K));
  assert(!b.rows || isa.kernel_rows);
  if (M == 0 || N == 0) return;
  if (K == 0) return epilogue_only(M, N, c, ldc, ep);
  Problem pr{M, N, K, a, b, c, ldc, ep, isa};
  // With B read through row offsets, panels follow its segments (GemmB::seg_len).
  const Segments segs = segments(b, N, isa);
  const int64_t seg = b.rows ? segs.seg : N;
  assert(N % seg == 0);
  const int64_t m_panels = ceil_div(M, isa.mr), n_panels = N / seg * ceil_div(seg, isa.nr);
  // Threads split the larger operand, so that each streams its own part of
  // it: with more rows than columns (late conv layers, whose weights
  // outweigh their small feature maps), the rows, sharing B packed once;
  // otherwise the columns, one block (whole NR panels) per thread, each
  // thread packing its B block and using it from its L2 cache. Measured on
  // 2 threads (qrun --bench medians, SCHED_FIFO): resnet18 float 21.8 ms with
  // about four column blocks per thread, 19.1 ms with one, 18.1 ms with the
  // rows of the late layers split instead. Narrower blocks streamed A once
  // more each, and more tasks than panels split the rows as well, which
  // packed B whole beforehand, outside any cache.
  const bool split_rows = threads > 1 && (M > N || split == GemmSplit::Rows);
  // Column blocks of whole units (panels; pairs of segments where their
  // half panels pair up, so that no block splits a pair), at most
  // gemm_block_columns wide, block nb taking units [nb * units / n_blocks,
  // (nb + 1) * units / n_blocks); as many blocks as a multiple of the
  // threads where they split the columns, so that each thread's share of
  // blocks holds as many units: 7 blocks of 32 panels for a 3x3 conv at
  // 56 x 56 left one thread 4 and the other 3.
  const int64_t unit = b.rows && segs.pairs ? 2 * segs.per_seg : 1, units = ceil_div(n_panels, unit);
  const int64_t widest = std::max<int64_t>(1, gemm_block_columns(std::min(K, kGemmKc), isa.nr, l2_cache_bytes()) /
                                                  isa.nr / unit);
  int64_t n_blocks = ceil_div(units, widest);
  if (threads > 1 && !split_rows) n_blocks = std::min(units, ceil_div(n_blocks, threads) * threads);
  // Block nb's panels [first, end): whole units, the last unit cut at n_panels.
  const auto block_panels = [&](int64_t nb) {
    return std::pair{nb * units / n_blocks * unit, std::min(n_panels, (nb + 1) * units / n_blocks * unit)};
  };
  // Fewer column panels than threads (small N: a Gemm on one row) also
  // split the rows.
  const int64_t m_parts =
      threads > 1 ? std::clamp<int64_t>(split_rows ? threads : ceil_div(threads, n_blocks), 1, m_panels) : 1;
  // Row parts would each pack the same B panels (an im2col matrix twice or
  // more): from three on, pack B once, in parallel, and share it. Whole rows
  // of panels per depth block, as PackedMatrix lays them out. Two parts each
  // pack their own, depth block by depth block into their own L2, as one
  // thread does: shared, each read half of every block from the other
  // core's cache. A 3x3 conv of 256 channels at 14 x 14 at 2 threads, qrun
  // --bench alternating (stop 49): medians 0.98 of the shared B's time on
  // the AVX2 kernels, 0.94 on AVX-512's; resnet18 float 0.995 and 0.98.
  if (m_parts > 2 && !b.packed && !b.rows && (b.source || b.view.col_stride != 1)) {
    thread_local AlignedFloats shared_b;  // the calling thread's; grows, never shrinks
    const int64_t padded = n_panels * isa.nr;
    float* dst = scratch(shared_b, padded * K);
    // Each task packs a run of panels of one depth block: an im2col source
    // copies whole row segments per call, and one panel (32 columns) per
    // call made it about 5x slower (a 3x3 conv of 128 channels at 28x28,
    // 2 threads: im2col 1.5 of 1.9 ms per run, perf).
    // Tasks run by run, each run's depth blocks in a row: an im2col source
    // works out a run's reads once for all its depth blocks (im2col.cpp, RunCache).
    const int64_t runs = std::min<int64_t>(n_panels, threads);
    const int64_t per_run = ceil_div(n_panels, runs);
    const int64_t k_blocks = ceil_div(K, kGemmKc);
    parallel_for(threads, k_blocks * runs, [&](int64_t t) {
      const int64_t k0 = t % k_blocks * kGemmKc, q0 = t / k_blocks * per_run, q1 = std::min(n_panels, q0 + per_run);
      const int64_t kc = std::min(kGemmKc, K - k0), j0 = q0 * isa.nr;
      float* d = dst + k0 * padded + q0 * kc * isa.nr;
      if (b.source) return b.source->pack(k0, kc, j0, std::min(N, q1 * isa.nr) - j0, isa.nr, d);
      for (int64_t q = q0; q < q1; ++q, d += kc * isa.nr) {
        const int64_t j = q * isa.nr;
        pack_panel(b.view.data, b.view.col_stride, b.view.row_stride, j, std::min<int64_t>(isa.nr, N - j), k0, kc,
                   isa.nr, d);
      }
    });
    pr.b_prepacked = dst;
    pr.b_padded = padded;
  }
  // Row parts outermost: a thread's share of the tasks is then a range of
  // rows (GemmSplit).
  parallel_for(threads, n_blocks * m_parts, [&](int64_t t) {
    const int64_t mp = t / n_blocks, nb = t % n_blocks;
    const int64_t p0 = mp * m_panels / m_parts, p1 = (mp + 1) * m_panels / m_parts;
    const auto [q0, q1] = block_panels(nb);
    if (b.rows) return run_rows_block(pr, q0, q1, p0, p1);
    const int64_t j0 = q0 * isa.nr;
    run_block(pr, j0, std::min(N, q1 * isa.nr) - j0, p0, p1);
  });
}

}  // namespace quant::kernels
