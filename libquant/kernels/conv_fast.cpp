#include "libquant/kernels/conv_fast.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "libquant/kernels/conv_lanes.h"
#include "libquant/kernels/eltwise_f32.h"
#include "libquant/kernels/im2col.h"
#include "libquant/kernels/spatial.h"
#include "libquant/kernels/threadpool.h"

namespace quant::kernels {
namespace {

int64_t kernel_volume(const ConvGeometry& g) {
  int64_t v = 1;
  for (int64_t k : g.kernel) v *= k;
  return v;
}

// The direct path: a 2-D convolution reads the GEMM's B in place from a
// zero-padded copy of its input instead of packing im2col panels. With
// strides sh x sw the copy is split into sh * sw phase planes per channel
// (phase (py, px) holds padded rows py, py + sh, ... and columns px,
// px + sw, ...), so that every tap reads one phase at stride 1: padded
// pixel (oh * sh + ih, ow * sw + iw) is phase (ih % sh, iw % sw) at
// (oh + ih / sh, ow + iw / sw). Output (oh, ow) is "wide" column
// oh * wq + ow (wq: a phase row), so that row k = (c, kh, kw) of B is that
// phase of c from offset (ih / sh) * wq + iw / sw on (ih = kh * dh,
// iw = kw * dw); the columns ow >= out_w of each wide row are computed and
// dropped (where rows_into_y, each output row is a run of panels of its
// own instead: conv_direct). The K order, the depth blocks and the zeros of the padding
// are the im2col path's, so the sums are its bits.
struct DirectGeometry {
  int64_t sh, sw;   // strides: phases per padded row and column
  int64_t hq, wq;   // a phase plane's height and width (ceil of the padded ones / stride)
  int64_t phase;    // hq * wq
  int64_t plane;    // one channel: sh * sw phases
  int64_t wide;     // wide columns (out_h * wq)
};

// Where the direct path ran faster than im2col (one layer alone, 1 thread,
// best of 150 calls, alternating, stop 44; direct / im2col time): 3x3
// 64 -> 64 at 56 x 56 0.95-0.96 (AVX2) and 0.94-0.96 (AVX-512), 32 -> 32 at
// 112 x 112 0.83 and 0.85; not at 28 x 28 (0.96-1.17, the wide columns
// cost what packing saved) nor with 3 input channels (1.05-1.17: the copy
// out weighs against K = 27). Packing costs in proportion to K x N against
// M x K x N multiply-adds, so few output channels gain most.
// Strided (phase planes; where rows go straight into y): the phase
// copy costs c x H x W against packing's K x N, so kernels with many taps
// per phase gain, and so do few output channels (packing weighs against
// M x K x N multiply-adds) and an image's few input channels (a small
// copy). One layer, AVX2, alternating calls, stop 45, direct / im2col at
// 1 | 2 threads: 7x7/2 3 -> 64 at 224 0.79-0.83 | 0.81-0.92;
// 3x3/2 3 -> 32 at 224 0.83-0.88 | 0.95-0.99, 16 -> 16 at 112 0.73-0.78 |
// 0.81-1.05, 32 -> 32 at 112 0.96-1.05 | 0.99-1.18, 64 -> 128 at 56
// 1.14-1.26 | 1.29-1.33. On AVX-512 with wide rows the stem ran at
// 1.0-1.03; with its rows straight into y (below), stop 46, 1 | 2 threads:
// 7x7/2 3 -> 64 at 224 0.83-0.84 | 0.92-0.93, 3x3/2 3 -> 32 at 224
// 0.89-0.91 | 0.89.
// Whether the direct path writes output rows straight into y (segments of
// panels, conv_direct) rather than wide rows copied out: on AVX2 always
// (measured there); with wider panels where a row's last panel wastes no
// more columns than a wide row does (AVX-512: a panel of at most 16 valid
// columns runs one vector, so rows of 112 waste none, rows of 56 end in 24
// of 32 and keep the wide rows, which span row ends). The strided rule
// below was measured with segments.
DirectGeometry direct_geometry(const detail::Spatial3& s);
bool rows_into_y(const detail::GemmIsa& isa, const detail::Spatial3& s) {
  if (&isa == detail::kGemmIsaAvx2) return true;
  const int64_t ow = s.out[2], r = ow % isa.nr, wq = direct_geometry(s).wq;
  const int64_t segment_waste = r == 0 ? 0 : r <= isa.nr / 2 ? isa.nr / 2 - r : isa.nr - r;
  return segment_waste <= wq - ow;
}

bool direct_fits(const detail::Spatial3& s, int64_t c, int64_t m, const detail::GemmIsa& isa) {
  if (!isa.kernel_rows || s.in[0] != 1 || s.out[0] != 1 || s.kernel[0] != 1 || s.kernel[1] * s.kernel[2] == 1)
    return false;
  const int64_t phases = s.strides[1] * s.strides[2];
  if (phases == 1) return m <= 64 && c >= 16 && s.out[2] >= 56;
  return rows_into_y(isa, s) && s.out[2] >= 56 && m <= 64 &&
         (m <= 16 || c <= 4 || s.kernel[1] * s.kernel[2] >= 6 * phases);
}

DirectGeometry direct_geometry(const detail::Spatial3& s) {
  DirectGeometry d;
  d.sh = s.strides[1];
  d.sw = s.strides[2];
  const int64_t hp = s.in[1] + s.pads_begin[1] + s.pads_end[1];
  const int64_t wp = s.in[2] + s.pads_begin[2] + s.pads_end[2];
  d.hq = (hp + d.sh - 1) / d.sh;
  d.wq = (wp + d.sw - 1) / d.sw;
  d.phase = d.hq * d.wq;
  d.plane = d.sh * d.sw * d.phase;
  d.wide = s.out[1] * d.wq;
  return d;
}

// Where B's row for tap (ih, iw) of channel c starts (see DirectGeometry).
int64_t direct_row(const DirectGeometry& d, int64_t c, int64_t ih, int64_t iw) {
  return c * d.plane + (ih % d.sh * d.sw + iw % d.sw) * d.phase + ih / d.sh * d.wq + iw / d.sw;
}

// dst[i] = src[2 i] for i < count, reading no further than src[2 count - 2]
// (the phase copy of a stride-2 convolution). SSE2, part of every x86-64:
// two loads, one shuffle per four values; a scalar loop elsewhere.
void every_other(const float* src, int64_t count, float* dst) {
  int64_t i = 0;
#if defined(__SSE2__)
  for (; i + 5 <= count; i += 4)  // reads src[2 i .. 2 i + 7], 2 i + 7 <= 2 count - 3
    _mm_storeu_ps(dst + i, _mm_shuffle_ps(_mm_loadu_ps(src + 2 * i), _mm_loadu_ps(src + 2 * i + 4),
                                          _MM_SHUFFLE(2, 0, 2, 0)));
#endif
  for (; i < count; ++i) dst[i] = src[2 * i];
}

// dst[i] = src[i], and dst[i] = 0, for i < count: SSE2 loops, as rows of a
// few dozen floats went through memmove and memset calls (5% of a 3x3 conv
// of 64 channels at 56 x 56, perf, QTOOL_ISA=avx2). From four floats on, a
// count not a multiple of four ends in one vector overlapping the last
// (rows of 7 and 14: resnet18's layer4 and layer3 maps) rather than in
// scalar stores.
void copy_floats(const float* src, int64_t count, float* dst) {
  int64_t i = 0;
#if defined(__SSE2__)
  if (count >= 4) {
    for (; i + 8 <= count; i += 8) {
      _mm_storeu_ps(dst + i, _mm_loadu_ps(src + i));
      _mm_storeu_ps(dst + i + 4, _mm_loadu_ps(src + i + 4));
    }
    if (i + 4 <= count) _mm_storeu_ps(dst + i, _mm_loadu_ps(src + i));
    _mm_storeu_ps(dst + count - 4, _mm_loadu_ps(src + count - 4));
    return;
  }
#endif
  for (; i < count; ++i) dst[i] = src[i];
}
void zero_floats(float* dst, int64_t count) {
  int64_t i = 0;
#if defined(__SSE2__)
  if (count >= 4) {
    for (; i + 4 <= count; i += 4) _mm_storeu_ps(dst + i, _mm_setzero_ps());
    _mm_storeu_ps(dst + count - 4, _mm_setzero_ps());
    return;
  }
#endif
  for (; i < count; ++i) dst[i] = 0.0f;
}

// x's `channels` planes zero padded and split into phases in dst (d.plane
// floats each), then `slack` zeros. With by_rows threads take bands of
// rows, the band outermost: the GEMM reading these planes splits its
// columns (output rows) in the same order, so each thread pads mostly the
// rows it will read, from the input rows it wrote itself the layer before
// (channels apart, every thread read rows the other had padded, from the
// other core's cache); else runs of planes.
void pad_planes(const detail::Spatial3& s, const DirectGeometry& d, const float* x, int64_t channels, int64_t slack,
                float* dst, int threads, bool by_rows) {
  const int64_t top = s.pads_begin[1], left = s.pads_begin[2], h = s.in[1], w = s.in[2];
  const int64_t phases = d.sh * d.sw, planes = channels * phases;
  const int64_t bands = by_rows ? std::clamp<int64_t>(threads, 1, d.hq) : 1;
  // Each phase's first padded row and column (py, px) and its columns q with
  // left <= q * sw + px < left + w, which hold input columns q * sw + px -
  // left: [q0, q1). Worked out once, not per plane: on small maps the
  // divisions per plane (and a row's scalar tails, copy_floats) cost more
  // than the bytes. resnet18's layer4 input (512 planes of 7 x 7, one phase)
  // took 37.7 us so on one thread and 21.8 on two, 27.0-28.2 and 16.6 now
  // (medians of 200 calls, QTOOL_ISA=avx2); its 16 lanes convs' copies
  // together, on one thread, 651 and 663 us a run against 553-602 (minima
  // of 50 runs), no change whole runs could show. A branch of its own for
  // one phase took 23.1-26.1 us on layer4's input, not worth a second loop.
  struct PhaseColumns {
    int64_t py, px, q0, q1;
  };
  std::vector<PhaseColumns> columns(static_cast<size_t>(phases));
  for (int64_t f = 0; f < phases; ++f) {
    PhaseColumns& pc = columns[static_cast<size_t>(f)];
    pc.py = f / d.sw;
    pc.px = f % d.sw;
    pc.q0 = std::min(d.wq, (std::max<int64_t>(0, left - pc.px) + d.sw - 1) / d.sw);
    pc.q1 = std::max(pc.q0, std::min(d.wq, (left + w - pc.px + d.sw - 1) / d.sw));
  }
  parallel_for(threads, bands * planes, [&](int64_t task) {
    const int64_t band = bands == 1 ? 0 : task / planes, cp = task - band * planes;
    const int64_t c = phases == 1 ? cp : cp / phases;
    const PhaseColumns& pc = columns[static_cast<size_t>(cp - c * phases)];
    const int64_t q0 = pc.q0, q1 = pc.q1;
    const float* xc = x + c * h * w;
    const int64_t r0 = band * d.hq / bands, r1 = (band + 1) * d.hq / bands;
    float* row = dst + cp * d.phase + r0 * d.wq;
    for (int64_t r = r0; r < r1; ++r, row += d.wq) {
      const int64_t ir = r * d.sh + pc.py - top;
      if (ir < 0 || ir >= h) {
        zero_floats(row, d.wq);
        continue;
      }
      zero_floats(row, q0);
      const float* src = xc + ir * w + q0 * d.sw + pc.px - left;
      if (d.sw == 1)
        copy_floats(src, q1 - q0, row + q0);
      else if (d.sw == 2)
        every_other(src, q1 - q0, row + q0);
      else
        for (int64_t q = q0; q < q1; ++q) row[q] = src[(q - q0) * d.sw];
      zero_floats(row + q1, d.wq - q1);
    }
  });
  zero_floats(dst + channels * d.plane, slack);
}

// One group of one image on the direct path: x its c input planes, y its m
// output planes, ep with its bias (the residual, if any, is y's twin).
// Where rows_into_y (AVX2; AVX-512 for rows whose last panel wastes no more
// than a wide row) the GEMM writes y itself, one output row per segment of
// panels (GemmB::seg_len; a row's last panel partial), with the fused
// residual and clamp in its epilogue. Elsewhere it computes rows as wide as a
// phase row and copies the first out_w of each out, adding the residual then:
// the (conv + bias) + residual order of the fused epilogue. Segments against
// wide rows (one layer, alternating calls, stop 45): AVX2 7x7/2 3 -> 64 at
// 224 0.86-0.88 of the time (2 threads 0.89-0.94), 32 -> 32 at 112
// 0.92-0.94, 64 -> 64 at 56 1.0-1.02; AVX-512 (panels of 32: a 56-pixel row
// ends in one of 24) 64 -> 64 at 56 1.06-1.09, 32 -> 32 at 112 1.03 (stop 46,
// with a last panel of 16 run as one vector: 16 -> 16 at 112 0.94).
void conv_direct(const detail::Spatial3& s, int64_t c, int64_t m, const float* x, const GemmA& a, GemmEpilogue ep,
                 const float* residual, float* y, int threads, const detail::GemmIsa& isa) {
  const DirectGeometry d = direct_geometry(s);
  const int64_t kv = s.kernel[1] * s.kernel[2], K = c * kv, oh = s.out[1], ow = s.out[2], out_plane = oh * ow;
  // B's rows: k = c * kv + t, tap t = (kh, kw), as im2col orders them;
  // channel c's rows are channel 0's moved by c planes. (Worked out on the
  // calling thread before the GEMM splits: no division per row, as there
  // were for the 4608 rows of resnet18's layer4 on every call.)
  thread_local std::vector<int64_t> rows;
  rows.resize(static_cast<size_t>(K));
  for (int64_t t = 0; t < kv; ++t)
    rows[static_cast<size_t>(t)] = direct_row(d, 0, t / s.kernel[2] * s.dilations[1], t % s.kernel[2] * s.dilations[2]);
  for (int64_t ci = 1; ci < c; ++ci)
    for (int64_t t = 0; t < kv; ++t)
      rows[static_cast<size_t>(ci * kv + t)] = rows[static_cast<size_t>(t)] + ci * d.plane;
  // The last row's reads reach past its phase by its tap's column offset
  // and up to the end of the last NR panel of the wide columns.
  const int64_t slack = (s.kernel[2] - 1) * s.dilations[2] / d.sw + 2 * isa.nr;
  thread_local AlignedFloats padded, wide;
  if (padded.size() < c * d.plane + slack) padded = AlignedFloats(c * d.plane + slack);
  pad_planes(s, d, x, c, slack, padded.data(), threads, true);
  GemmB b;
  b.view.data = padded.data();
  b.rows = rows.data();
  if (rows_into_y(isa, s)) {
    b.seg_len = ow;
    b.seg_pitch = d.wq;
    ep.residual = residual;
    ep.ldr = out_plane;
    gemm_f32_packed(m, out_plane, K, a, b, y, out_plane, ep, threads, isa);
    return;
  }
  if (wide.size() < m * d.wide) wide = AlignedFloats(m * d.wide);
  const bool clamp = ep.clamp;
  ep.clamp = clamp && !residual;
  gemm_f32_packed(m, d.wide, K, a, b, wide.data(), d.wide, ep, threads, isa);
  const float* const wide_rows = wide.data();  // this thread's buffer (the lambda runs on others too)
  parallel_for(threads, m, [&](int64_t i) {
    for (int64_t r = 0; r < oh; ++r) {
      const float* src = wide_rows + i * d.wide + r * d.wq;
      float* dst = y + i * out_plane + r * ow;
      if (residual)
        add_f32(src, residual + i * out_plane + r * ow, dst, ow, clamp, ep.lo, ep.hi, 1);
      else
        std::copy(src, src + ow, dst);
    }
  });
}

// A lanes conv's tables: the taps' byte offsets in im2col's K order, each
// output pixel's first tap. The calling thread keeps those of its last
// kMaxKept geometries, as a network runs the same few again and again:
// rebuilt on every call, resnet18's 16 lanes convs spent 93 us of each run
// on them while the other threads waited (2 threads, QTOOL_ISA=avx2: 0.6%
// of the run). Tables over kMaxEntries entries (a 512 x 512 map's pixels)
// go to one slot of their own, rebuilt on each such call (a conv that
// large takes far longer than building them), so the kept ones hold at
// most 16 MiB.
struct LanesTables {
  std::array<int64_t, 11> key{};
  bool valid = false;
  std::vector<int64_t> taps, pixel;
};

const LanesTables& lanes_tables(const detail::Spatial3& s, const DirectGeometry& d, int64_t c) {
  constexpr size_t kMaxKept = 8;
  constexpr int64_t kMaxEntries = int64_t{1} << 18;
  const int64_t kw = s.kernel[2], kv = s.kernel[1] * kw, oh = s.out[1], ow = s.out[2];
  const std::array<int64_t, 11> key = {c,       kv,      kw,   s.dilations[1], s.dilations[2], s.strides[1],
                                       s.strides[2], d.plane, d.wq, oh,             ow};
  thread_local std::array<LanesTables, kMaxKept + 1> kept;  // the last one for tables too large to keep
  thread_local size_t next = 0;
  for (const LanesTables& t : kept)
    if (t.valid && t.key == key) return t;
  const bool keep = c * kv + oh * ow <= kMaxEntries;
  LanesTables& t = kept[keep ? next : kMaxKept];
  if (keep) next = (next + 1) % kMaxKept;
  t.key = key;
  t.valid = keep;
  t.taps.resize(static_cast<size_t>(c * kv));
  t.pixel.resize(static_cast<size_t>(oh * ow));
  for (int64_t ci = 0, k = 0; ci < c; ++ci)
    for (int64_t tap = 0; tap < kv; ++tap, ++k)
      t.taps[static_cast<size_t>(k)] =
          int64_t{sizeof(float)} * (ci * d.plane + tap / kw * s.dilations[1] * d.wq + tap % kw * s.dilations[2]);
  for (int64_t r = 0; r < oh; ++r)
    for (int64_t q = 0; q < ow; ++q)
      t.pixel[static_cast<size_t>(r * ow + q)] = r * s.strides[1] * d.wq + q * s.strides[2];
  return t;
}

// One group of one image on the lanes path (conv_lanes.h): x's c planes
// zero padded (one phase: pixels step over the strides themselves) and its
// tables (lanes_tables). A pointwise conv (1x1, unpadded, unit strides)
// reads x in place, its planes the padded ones would be, and its map is one
// row to the kernels (each pixel's input one column after the last one's),
// so that AVX-512's row tiles span it whole (49 = 12 + 12 + 12 + 13).
void conv_lanes(const detail::Spatial3& s, const detail::LanesIsa& isa, int64_t c, int64_t m, const float* x,
                const PackedMatrix& w, const float* bias, const ConvActivation& act, const float* residual, float* y,
                int threads) {
  detail::Spatial3 flat = s;
  flat.strides[1] = flat.strides[2] = 1;
  const DirectGeometry d = direct_geometry(flat);
  const int64_t kw = s.kernel[2], kv = s.kernel[1] * kw, K = c * kv, oh = s.out[1], ow = s.out[2];
  bool in_place = kv == 1 && s.strides[1] == 1 && s.strides[2] == 1;
  for (int i = 1; i < 3; ++i) in_place = in_place && s.pads_begin[i] == 0 && s.pads_end[i] == 0;
  thread_local AlignedFloats padded;
  const LanesTables& tables = lanes_tables(s, d, c);
  if (!in_place && padded.size() < c * d.plane) padded = AlignedFloats(c * d.plane);
  detail::LanesConv lc;
  lc.m = m;
  lc.depth = K;
  lc.taps_per_channel = kv;
  lc.pixels = oh * ow;
  lc.row = in_place ? oh * ow : ow;
  lc.stride = s.strides[2];
  lc.in_pixels = d.plane;
  lc.x = in_place ? x : padded.data();
  lc.taps = tables.taps.data();
  lc.pixel = tables.pixel.data();
  lc.w = &w;
  lc.bias = bias;
  lc.residual = residual;
  lc.clamp = act.clamp;
  lc.lo = act.lo;
  lc.hi = act.hi;
  lc.y = y;
  // Padded by the split the conv takes: bands of rows where threads take
  // pixels, each thread padding what it will read; runs of planes where
  // they take panels of channels and all read every plane, and the layer
  // before (so split too: resnet18's layers 2 to 4) left each thread's
  // channels in its own cache. Bands there read half of each plane from
  // the other core's cache, in runs of a few rows: resnet18's 3x3/2
  // 128 -> 256 conv took 521-531 us against 500 so, the sum of per-step
  // minima 15.66-15.68 ms against 15.69-15.77 (2 threads, QTOOL_ISA=avx2).
  if (!in_place) pad_planes(flat, d, x, c, 0, padded.data(), threads, detail::lanes_by_pixels(lc, threads));
  detail::conv_lanes_f32(lc, isa, threads);
}

// A strided 1x1 conv without padding reads input pixel (d * s0, r * s1,
// q * s2) for output pixel (d, r, q): x's c planes subsampled into dst,
// [c, out_plane], are a pointwise conv's B, read in place (the GEMM's rows
// prefetched) rather than packed panel by panel through the im2col map.
// resnet18's downsampling shortcuts alone, QTOOL_ISA=avx2, alternating,
// medians of 300 calls: 64 -> 128 at 56 -> 28 0.94-0.96 of im2col's time,
// 128 -> 256 at 28 0.92-0.95, 256 -> 512 at 14 0.98-1.0. The same bits: the
// same K order and depth blocks.
void subsample_planes(const detail::Spatial3& s, const float* x, int64_t c, float* dst, int threads) {
  const int64_t in_plane = s.in[0] * s.in[1] * s.in[2], out_plane = s.out[0] * s.out[1] * s.out[2];
  in_parts(c, threads, [&](int64_t first, int64_t count) {
    for (int64_t ci = first; ci < first + count; ++ci)
      for (int64_t d = 0; d < s.out[0]; ++d)
        for (int64_t r = 0; r < s.out[1]; ++r) {
          const float* src = x + ci * in_plane + (d * s.strides[0] * s.in[1] + r * s.strides[1]) * s.in[2];
          float* row = dst + ci * out_plane + (d * s.out[1] + r) * s.out[2];
          if (s.strides[2] == 1)
            copy_floats(src, s.out[2], row);
          else if (s.strides[2] == 2)
            every_other(src, s.out[2], row);
          else
            for (int64_t q = 0; q < s.out[2]; ++q) row[q] = src[q * s.strides[2]];
        }
  });
}

}  // namespace

// Where the lanes path ran faster than the GEMM paths (one layer alone,
// QTOOL_ISA=avx2, 2026-11-30, the two alternating, median ratios lanes /
// GEMM at 1 and 2 threads): resnet18's 3x3 convs at 56, 28, 14 and 7 (64 to
// 512 channels) 0.86-0.97, its 3x3/2 ones 0.87-0.93. Not its stem (7x7/2
// 3 -> 64 at 224: 1.01-1.03 at 1 thread), whose 3 input channels the direct
// path's phase planes serve well: at least 16 input channels. On AVX-512
// (2026-12-01, best of 100 calls, 1 thread): the same 3x3 convs 0.85-0.94,
// the 3x3/2 ones 0.90-0.93; squeezenet's 3x3 expands (16 -> 64 at 55 to
// 64 -> 256 at 13) 0.83-0.93; 32 -> 32 and 16 -> 32 at 112 0.96-0.97.
bool lanes_fits(int64_t c, int64_t m, std::span<const int64_t> kernel, int64_t pointwise_pixels) {
  int64_t volume = 1;
  for (int64_t k : kernel) volume *= k;
  const detail::LanesIsa* lanes = detail::lanes_isa(detail::best_gemm_isa());
  if (!lanes || kernel.empty() || kernel.size() > 2 || c < 16 || m % lanes->width != 0) return false;
  return volume > 1 || (pointwise_pixels > 0 && pointwise_pixels <= lanes->pointwise_max_pixels);
}

int64_t pointwise_pixels(const ConvGeometry& g) {
  int64_t pixels = 1;
  for (size_t i = 0; i < g.kernel.size(); ++i) {
    if (g.kernel[i] != 1 || g.strides[i] != 1 || g.pads_begin[i] != 0 || g.pads_end[i] != 0) return 0;
    pixels *= g.out_spatial[i];
  }
  return pixels;
}

PackedConvWeights::PackedConvWeights(const float* w, int64_t out_channels, int64_t group, int64_t depth_per_group,
                                     std::span<const int64_t> kernel, int64_t pointwise_pixels) {
  const int64_t m_per_group = out_channels / group;
  int64_t volume = 1;
  for (int64_t k : kernel) volume *= k;
  const detail::GemmIsa& isa = detail::best_gemm_isa();
  if (!kernel.empty() && depth_per_group % volume == 0 &&
      lanes_fits(depth_per_group / volume, m_per_group, kernel, pointwise_pixels))
    lanes_ = detail::lanes_isa(isa);
  for (int64_t gi = 0; gi < group; ++gi) {
    const float* wg = w + gi * m_per_group * depth_per_group;
    groups_.push_back(lanes_ ? detail::pack_conv_lanes(wg, m_per_group, depth_per_group, isa)
                            : PackedMatrix::pack_a(MatrixView{wg, depth_per_group, 1}, m_per_group, depth_per_group, isa));
  }
}

void conv_f32_fast(const ConvGeometry& g, const float* x, const float* w, const PackedConvWeights* packed,
                   const float* bias, float* y, int threads, const ConvActivation& act, bool allow_direct) {
  assert(g.group >= 1 && g.in_channels % g.group == 0 && g.out_channels % g.group == 0);
  const int64_t C = g.in_channels, M = g.out_channels;
  const int64_t c_per_group = C / g.group, m_per_group = M / g.group;
  if (c_per_group == 1 && m_per_group == 1) return conv_f32_depthwise(g, x, w, bias, y, threads, act);

  const detail::Spatial3 s =
      detail::to_spatial3(g.in_spatial, g.out_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end);
  const int64_t in_plane = s.in[0] * s.in[1] * s.in[2];
  const int64_t out_plane = s.out[0] * s.out[1] * s.out[2];
  const int64_t K = c_per_group * kernel_volume(g);
  bool unpadded = kernel_volume(g) == 1, unit_strides = true;  // unpadded: a 1x1 kernel without padding
  for (int i = 0; i < 3; ++i) {
    unpadded = unpadded && s.pads_begin[i] == 0 && s.pads_end[i] == 0;
    unit_strides = unit_strides && s.strides[i] == 1;
  }
  const bool pointwise = unpadded && unit_strides;

  GemmEpilogue ep;
  ep.clamp = act.clamp;
  ep.lo = act.lo;
  ep.hi = act.hi;
  const detail::GemmIsa& isa = detail::best_gemm_isa();
  // subsample_planes, on the AVX2 kernels (where it was measured faster; on
  // AVX-512's the same layers ran 1.0-1.15x im2col's time).
  const bool subsampled = allow_direct && unpadded && !pointwise && &isa == detail::kGemmIsaAvx2;
  // Group gi's weights: packed at prepare time, or read as they lie.
  const auto weights_of = [&](int64_t gi) {
    GemmA a;
    if (packed && !packed->empty() && !packed->lanes())
      a.packed = &packed->group(gi);
    else
      a.view = MatrixView{w + gi * m_per_group * K, K, 1};
    return a;
  };
  // Weights packed for the lanes path run there (lanes_fits held for their
  // shape and the ISA in force when they were packed) where its kernels
  // take the row stride, pointwise convs too (packed so for their small
  // maps); elsewhere the GEMM paths read them as they lie.
  const detail::LanesIsa* lanes = packed && packed->lanes_isa() == detail::lanes_isa(isa) ? packed->lanes_isa() : nullptr;
  if (allow_direct && lanes && s.in[0] == 1 && s.kernel[0] == 1 &&
      (lanes->max_stride == 0 || s.strides[2] <= lanes->max_stride)) {
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t gi = 0; gi < g.group; ++gi) {
        const int64_t first_in = n * C + gi * c_per_group, first_out = n * M + gi * m_per_group;
        conv_lanes(s, *lanes, c_per_group, m_per_group, x + first_in * in_plane, packed->group(gi),
                   bias ? bias + gi * m_per_group : nullptr, act,
                   act.residual ? act.residual + first_out * out_plane : nullptr, y + first_out * out_plane, threads);
      }
    return;
  }
  if (allow_direct && !pointwise && direct_fits(s, c_per_group, m_per_group, isa)) {
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t gi = 0; gi < g.group; ++gi) {
        const int64_t first_in = n * C + gi * c_per_group, first_out = n * M + gi * m_per_group;
        GemmEpilogue gep = ep;
        gep.row_bias = bias ? bias + gi * m_per_group : nullptr;
        conv_direct(s, c_per_group, m_per_group, x + first_in * in_plane, weights_of(gi), gep,
                    act.residual ? act.residual + first_out * out_plane : nullptr, y + first_out * out_plane, threads,
                    isa);
      }
    return;
  }
  // A pointwise conv's input is B as it lies, its rows out_plane floats
  // apart, read again for every MR rows of A. Where A has many more rows
  // than B columns (squeezenet1_1's classifier: 1000 x 512 by 512 x 169),
  // AVX2's 6 x 16 kernel ran faster from B packed once into its panels:
  // alone, QTOOL_ISA=avx2, best of 200, 1565-1604 -> 1473-1478 us; AVX-512's
  // 8 x 32 slower (764-768 -> 802-808), as were narrower AVX2 layers (M up
  // to 1.5 N: even) and a single column (90-95 -> 100-113). The same sums.
  const bool pack_input = allow_direct && pointwise && &isa == detail::kGemmIsaAvx2 && out_plane >= 2 * isa.nr &&
                          m_per_group >= 4 * out_plane;
  thread_local PackedMatrix packed_input;
  thread_local AlignedFloats subsample_buf;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t gi = 0; gi < g.group; ++gi) {
      const float* xg = x + (n * C + gi * c_per_group) * in_plane;
      const GemmA a = weights_of(gi);
      const Im2colSource im2col(s, xg);
      GemmB b;
      if (subsampled) {
        if (subsample_buf.size() < c_per_group * out_plane) subsample_buf = AlignedFloats(c_per_group * out_plane);
        subsample_planes(s, xg, c_per_group, subsample_buf.data(), threads);
        b.view = MatrixView{subsample_buf.data(), out_plane, 1};
      } else if (pack_input) {
        packed_input = PackedMatrix::pack_b(MatrixView{xg, in_plane, 1}, K, out_plane, isa);
        b.packed = &packed_input;
      } else if (pointwise) {
        b.view = MatrixView{xg, in_plane, 1};  // [C/group, H*W] as it lies in memory
      }
      else
        b.source = &im2col;
      ep.row_bias = bias ? bias + gi * m_per_group : nullptr;
      ep.residual = act.residual ? act.residual + (n * M + gi * m_per_group) * out_plane : nullptr;
      ep.ldr = out_plane;
      // A widening 1x1 conv (mobilenet_v2's expand) splits its output
      // channels over the threads, as the depthwise conv after it does.
      const GemmSplit split = pointwise && m_per_group > K ? GemmSplit::Rows : GemmSplit::Auto;
      gemm_f32_packed(m_per_group, out_plane, K, a, b, y + (n * M + gi * m_per_group) * out_plane, out_plane, ep, threads,
                      detail::best_gemm_isa(), split);
    }
  }
}

}  // namespace quant::kernels
