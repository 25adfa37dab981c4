#include "libquant/kernels/im2col.h"
#include "libquant/kernels/cpu.h"

#include <algorithm>
#include <cstring>
#include <cassert>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace quant::kernels {
namespace {

// d[t] = src[t * stride] for t < n: one run of an im2col row (a window row's
// taps inside the input). Runs are short (an output row, cut at panel
// boundaries), so a library memcpy call or a scalar loop per run cost more
// than the copy itself on small maps.
using RunCopy = void (*)(float* d, const float* src, int64_t stride, int64_t n);

void copy_run_portable(float* d, const float* src, int64_t stride, int64_t n) {
  for (int64_t t = 0; t < n; ++t) d[t] = src[t * stride];
}

#if defined(__x86_64__) && defined(__GNUC__)
// Lanes [0, k) of 16, k clamped to [0, 16].
inline __mmask16 first_lanes(int64_t k) { return static_cast<__mmask16>((1u << std::clamp<int64_t>(k, 0, 16)) - 1u); }

__attribute__((target("avx512f"))) void copy_run_avx512(float* d, const float* src, int64_t stride, int64_t n) {
  // Masked loads and stores: no element past the run is read or written.
  if (stride == 1) {
    for (; n > 0; n -= 16, src += 16, d += 16)
      _mm512_mask_storeu_ps(d, first_lanes(n), _mm512_maskz_loadu_ps(first_lanes(n), src));
    return;
  }
  if (stride == 2) {
    // Even elements of src[0..31]: the run reads src[0], src[2], ..., src[2n-2].
    // A whole chunk of 16 takes src[0..15] and src[15..30] by plain loads
    // (the second's odd elements are src[16], ..., src[30]): no masks, and
    // no element past src[2n - 2] read.
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i even_odd = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, 25, 27, 29, 31);
    for (; n >= 16; n -= 16, src += 32, d += 16)
      _mm512_storeu_ps(d, _mm512_permutex2var_ps(_mm512_loadu_ps(src), even_odd, _mm512_loadu_ps(src + 15)));
    for (; n > 0; n -= 16, src += 32, d += 16) {
      const int64_t used = 2 * std::min<int64_t>(n, 16) - 1;  // elements read from src
      const __m512 a = _mm512_maskz_loadu_ps(first_lanes(used), src);
      const __m512 b = _mm512_maskz_loadu_ps(first_lanes(used - 16), src + 16);
      _mm512_mask_storeu_ps(d, first_lanes(n), _mm512_permutex2var_ps(a, even, b));
    }
    return;
  }
  copy_run_portable(d, src, stride, n);
}

// Lanes [0, count) of 8, count clamped to [0, 8], as a VMASKMOVPS mask.
__attribute__((target("avx2"))) inline __m256i first_lanes8(int64_t count) {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(count, 0, 8))), iota);
}

// Even elements of [lo, hi] (8 + 8 floats) in order: [lo0 lo2 lo4 lo6 hi0 hi2 hi4 hi6].
__attribute__((target("avx2"))) inline __m256 even_elements(__m256 lo, __m256 hi) {
  const __m256 e = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));  // lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
}

__attribute__((target("avx2"))) void copy_run_avx2(float* d, const float* src, int64_t stride, int64_t n) {
  // Masked loads and stores (VMASKMOVPS neither reads nor writes a
  // masked-off lane): no element past the run is touched.
  if (stride == 1) {
    for (; n >= 8; n -= 8, src += 8, d += 8) _mm256_storeu_ps(d, _mm256_loadu_ps(src));
    if (n > 0) _mm256_maskstore_ps(d, first_lanes8(n), _mm256_maskload_ps(src, first_lanes8(n)));
    return;
  }
  if (stride == 2) {
    // A whole chunk of 8: src[0..7] and src[7..14] by plain loads, the even
    // elements of the first and the odd ones of the second (src[8], ...,
    // src[14]); masked loads for the whole run were 40% of the stem conv's
    // packing (perf, resnet18 7x7/2).
    for (; n >= 8; n -= 8, src += 16, d += 8) {
      const __m256 e = _mm256_shuffle_ps(_mm256_loadu_ps(src), _mm256_loadu_ps(src + 7), _MM_SHUFFLE(3, 1, 2, 0));
      _mm256_storeu_ps(d, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0))));
    }
    for (; n > 0; n -= 8, src += 16, d += 8) {
      const int64_t used = 2 * std::min<int64_t>(n, 8) - 1;  // elements read from src
      const __m256 v = even_elements(_mm256_maskload_ps(src, first_lanes8(used)),
                                     _mm256_maskload_ps(src + 8, first_lanes8(used - 8)));
      if (n >= 8)
        _mm256_storeu_ps(d, v);
      else
        _mm256_maskstore_ps(d, first_lanes8(n), v);
    }
    return;
  }
  copy_run_portable(d, src, stride, n);
}
#endif

bool has_avx512_bmi2() {
#if defined(__x86_64__) && defined(__GNUC__)
  return cpu_supports("avx512f") && cpu_supports("bmi2");
#else
  return false;
#endif
}

const bool kAvx512Bmi2 = has_avx512_bmi2();
const bool kAvx2 = cpu_supports("avx2");

RunCopy pick_run_copy() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (kAvx512Bmi2) return copy_run_avx512;
  if (kAvx2) return copy_run_avx2;
#endif
  return copy_run_portable;
}

const RunCopy copy_run = pick_run_copy();

// Writes consecutive columns of one im2col row into the panels: nr floats
// per panel, then a jump of kc*nr to the same row of the next panel.
struct PanelCursor {
  float* p;
  int64_t panel_step;
  int nr;
  int lane;

  void zeros(int64_t n) {
    while (n > 0) {
      const int64_t seg = std::min<int64_t>(n, nr - lane);
      std::fill(p + lane, p + lane + seg, 0.0f);
      advance(seg);
      n -= seg;
    }
  }
  void copy(const float* src, int64_t stride, int64_t n) {
    while (n > 0) {
      const int64_t seg = std::min<int64_t>(n, nr - lane);
      copy_run(p + lane, src, stride, seg);
      src += seg * stride;
      advance(seg);
      n -= seg;
    }
  }
  void advance(int64_t seg) {
    lane += static_cast<int>(seg);
    if (lane == nr) {
      lane = 0;
      p += panel_step;
    }
  }
};

// Where kernel tap t = (kd, kh, kw) reads relative to an output position:
// input index = output index * stride + offset, per dimension.
struct TapOffset {
  int64_t d, h, w;
};

TapOffset tap_offset(const detail::Spatial3& s, int64_t t) {
  const int64_t kd = t / (s.kernel[1] * s.kernel[2]);
  const int64_t kh = (t / s.kernel[2]) % s.kernel[1];
  const int64_t kw = t % s.kernel[2];
  return {kd * s.dilations[0] - s.pads_begin[0], kh * s.dilations[1] - s.pads_begin[1],
          kw * s.dilations[2] - s.pads_begin[2]};
}

#if defined(__x86_64__) && defined(__GNUC__)

constexpr int kMaxLanes = 64;  // panels up to 64 floats wide

// The lanes [a, b) of a panel that lie in one output row (od, oh), from
// output column ow on.
struct Segment {
  int a, b;
  int64_t od, oh, ow;
};

// The panel's output positions from column j on, cut into output rows;
// lanes past `lanes_here` belong to no segment (and stay zero). Returns the
// number of segments.
int panel_segments(const detail::Spatial3& s, int64_t j, int lanes_here, Segment* seg) {
  int n_seg = 0;
  int64_t ow = j % s.out[2], oh = (j / s.out[2]) % s.out[1], od = j / (s.out[2] * s.out[1]);
  for (int a = 0; a < lanes_here;) {
    const int b = static_cast<int>(std::min<int64_t>(lanes_here, a + s.out[2] - ow));
    seg[n_seg++] = {a, b, od, oh, ow};
    a = b;
    ow = 0;
    if (++oh == s.out[1]) {
      oh = 0;
      ++od;
    }
  }
  return n_seg;
}

// Lanes [a, b) of one vector (counted from its first lane) whose tap lands
// inside the input: lane l reads xc[offset + l * stride] (xc: the channel).
struct LaneRun {
  int64_t offset;
  int a, b;
};

// Calls emit(LaneRun) for the reads of tap t in vector v (panel lanes
// [lanes v, lanes (v + 1))): at most one run per segment.
template <class Emit>
void tap_runs(const detail::Spatial3& s, int64_t t, const Segment* seg, int n_seg, int lanes, int v, Emit&& emit) {
  const int64_t sw = s.strides[2];
  const TapOffset off = tap_offset(s, t);
  const detail::IndexRange rw = detail::valid_range(off.w, sw, s.in[2], s.out[2]);
  for (int n = 0; n < n_seg; ++n) {
    const Segment& g = seg[n];
    const int64_t id = g.od * s.strides[0] + off.d, ih = g.oh * s.strides[1] + off.h;
    if (id < 0 || id >= s.in[0] || ih < 0 || ih >= s.in[1]) continue;
    // Lanes whose tap lands inside the input row, cut to this vector; lane l
    // (from the panel's first) reads base + l * sw.
    const int64_t a = std::max<int64_t>(g.a + std::max<int64_t>(rw.lo - g.ow, 0), lanes * v);
    const int64_t b = std::min<int64_t>(g.a + std::min<int64_t>(rw.hi - g.ow, g.b - g.a), lanes * v + lanes);
    if (a >= b) continue;
    const int64_t base = (id * s.in[1] + ih) * s.in[2] + (g.ow - g.a) * sw + off.w;
    emit(LaneRun{base + lanes * v * sw, static_cast<int>(a - lanes * v), static_cast<int>(b - lanes * v)});
  }
}

// Walks the rows [k0, k0+kc) of a panel: the kernel tap t of each row and
// the channel plane xc it reads. Rows in order: consecutive taps of one
// channel read neighbouring input rows, and the panel is written front to back.
struct RowWalk {
  int64_t t, k_volume, in_plane;
  const float* xc;
  RowWalk(int64_t k0, int64_t k_volume_, const float* x, int64_t in_plane_)
      : t(k0 % k_volume_), k_volume(k_volume_), in_plane(in_plane_), xc(x + k0 / k_volume_ * in_plane_) {}
  void next() {
    if (++t == k_volume) {
      t = 0;
      xc += in_plane;
    }
  }
};

// Rows [k0, k0+kc) of one panel from the runs of each (tap, vector): `width`
// runs each (W when not 0: a fixed count, unrolled), every `most` entries.
template <class Run>
using CopyRows = void (*)(const Run* runs, int64_t most, int64_t width, int vectors, int64_t k_volume, int64_t k0,
                          int64_t kc, const float* x, int64_t in_plane, float* d);

// AVX-512: one tap's reads for the 16 lanes of a vector: lane l (of the
// vector) gets xc[offset + l * stride] for l in `lanes`; with stride 2, the
// elements xc[offset + e] loaded are e in `load_a` and 16 + e in `load_b`.
struct Avx512Run {
  int64_t offset;
  __mmask16 lanes, load_a, load_b;
};

template <int SW, int W>
__attribute__((target("avx512f"))) void copy_rows_avx512(const Avx512Run* runs, int64_t most, int64_t width,
                                                         int vectors, int64_t k_volume, int64_t k0, int64_t kc,
                                                         const float* x, int64_t in_plane, float* d) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const int64_t n_runs = W ? W : width;
  RowWalk walk(k0, k_volume, x, in_plane);
  for (int64_t k = 0; k < kc; ++k, d += 16 * vectors, walk.next()) {
    const Avx512Run* list = runs + walk.t * vectors * most;
    for (int v = 0; v < vectors; ++v, list += most) {
      // Masked-off lanes are not read, so an offset before the plane (left
      // padding) touches nothing outside it.
      __m512 vec = _mm512_setzero_ps();
#pragma GCC unroll 2
      for (int64_t n = 0; n < n_runs; ++n) {
        const Avx512Run& r = list[n];
        if constexpr (SW == 1) {
          vec = _mm512_mask_loadu_ps(vec, r.lanes, walk.xc + r.offset);
        } else {
          const __m512 lo = _mm512_maskz_loadu_ps(r.load_a, walk.xc + r.offset);
          const __m512 hi = _mm512_maskz_loadu_ps(r.load_b, walk.xc + r.offset + 16);
          vec = _mm512_mask_mov_ps(vec, r.lanes, _mm512_permutex2var_ps(lo, even, hi));
        }
      }
      _mm512_storeu_ps(d + 16 * v, vec);
    }
  }
}

// Element masks of the even elements 2l, l in `lanes`, of a 32-element window.
__attribute__((target("bmi2"))) inline void spread_even(__mmask16 lanes, __mmask16& a, __mmask16& b) {
  a = static_cast<__mmask16>(_pdep_u32(lanes & 0xFFu, 0x5555u));
  b = static_cast<__mmask16>(_pdep_u32(lanes >> 8, 0x5555u));
}

struct Avx512Packer {
  using Run = Avx512Run;
  static constexpr int kLanes = 16;
  __attribute__((target("bmi2"))) static Run run(const LaneRun& l, int64_t sw) {
    Run r{l.offset, static_cast<__mmask16>(((1u << l.b) - 1u) & ~((1u << l.a) - 1u)), 0, 0};
    if (sw == 2) spread_even(r.lanes, r.load_a, r.load_b);
    return r;
  }
  static CopyRows<Run> copy(int64_t sw, int64_t width) {
    if (sw == 1) return width == 1 ? copy_rows_avx512<1, 1> : width == 2 ? copy_rows_avx512<1, 2> : copy_rows_avx512<1, 0>;
    return width == 1 ? copy_rows_avx512<2, 1> : width == 2 ? copy_rows_avx512<2, 2> : copy_rows_avx512<2, 0>;
  }
};

// AVX2: one tap's reads for the 8 lanes of a vector, as VMASKMOVPS element
// masks of xc[offset + e]: e in load_a (e < 8) and 8 + e in load_b (stride
// 2 only). A masked-off element reads as zero, so the runs of a vector
// (disjoint lanes) combine by OR. With stride 2 the masks take the odd
// elements between a run's even ones too (inside the input row, so safe to
// read); keeping only the even elements drops them.
struct Avx2Run {
  alignas(32) int32_t load_a[8];
  int32_t load_b[8];
  int64_t offset;
};

template <int SW, int W>
__attribute__((target("avx2"))) void copy_rows_avx2(const Avx2Run* runs, int64_t most, int64_t width, int vectors,
                                                    int64_t k_volume, int64_t k0, int64_t kc, const float* x,
                                                    int64_t in_plane, float* d) {
  const int64_t n_runs = W ? W : width;
  RowWalk walk(k0, k_volume, x, in_plane);
  for (int64_t k = 0; k < kc; ++k, d += 8 * vectors, walk.next()) {
    const Avx2Run* list = runs + walk.t * vectors * most;
    for (int v = 0; v < vectors; ++v, list += most) {
      __m256 vec = _mm256_setzero_ps();
#pragma GCC unroll 2
      for (int64_t n = 0; n < n_runs; ++n) {
        const Avx2Run& r = list[n];
        const __m256i ma = _mm256_load_si256(reinterpret_cast<const __m256i*>(r.load_a));
        if constexpr (SW == 1) {
          vec = _mm256_or_ps(vec, _mm256_maskload_ps(walk.xc + r.offset, ma));
        } else {
          const __m256i mb = _mm256_load_si256(reinterpret_cast<const __m256i*>(r.load_b));
          const __m256 lo = _mm256_maskload_ps(walk.xc + r.offset, ma);
          const __m256 hi = _mm256_maskload_ps(walk.xc + r.offset + 8, mb);
          vec = _mm256_or_ps(vec, even_elements(lo, hi));
        }
      }
      _mm256_storeu_ps(d + 8 * v, vec);
    }
  }
}

struct Avx2Packer {
  using Run = Avx2Run;
  static constexpr int kLanes = 8;
  static Run run(const LaneRun& l, int64_t sw) {
    Run r{};
    r.offset = l.offset;
    // Elements read: [a, b) with stride 1, [2a, 2b - 1) with stride 2.
    const int e0 = static_cast<int>(sw) * l.a, e1 = sw == 1 ? l.b : 2 * l.b - 1;
    for (int e = 0; e < 8; ++e) {
      r.load_a[e] = e >= e0 && e < e1 ? -1 : 0;
      r.load_b[e] = e + 8 >= e0 && e + 8 < e1 ? -1 : 0;
    }
    return r;
  }
  static CopyRows<Run> copy(int64_t sw, int64_t width) {
    if (sw == 1) return width == 1 ? copy_rows_avx2<1, 1> : width == 2 ? copy_rows_avx2<1, 2> : copy_rows_avx2<1, 0>;
    return width == 1 ? copy_rows_avx2<2, 1> : width == 2 ? copy_rows_avx2<2, 2> : copy_rows_avx2<2, 0>;
  }
};

// The runs of one panel: for every tap t of the kernel and vector v, `most`
// runs at runs[(t * vectors + v) * most], `width` of them used at most.
template <class Run>
struct PanelRuns {
  std::vector<Run> runs;
  int64_t most = 0, width = 0;
  bool ready = false;
};

// The runs of the panels of the last column block a thread packed. They
// depend on the geometry and the columns only, not on the input or the
// depth block, and the GEMM packs each column block once per depth block
// (kGemmKc): working them out once per column block saves that many times
// over (a quarter to a half of a 3x3 conv's packing time before).
template <class Run>
struct RunCache {
  detail::Spatial3 s{};
  int64_t j0 = -1, nc = 0;
  int nr = 0;
  std::vector<PanelRuns<Run>> panels;

  bool holds(const detail::Spatial3& s2, int64_t j0_2, int64_t nc2, int nr2) const {
    return j0 == j0_2 && nc == nc2 && nr == nr2 && std::memcmp(&s, &s2, sizeof s) == 0;
  }
};

// The vector packer (stride 1 or 2 along the width, nr a multiple of the
// ISA's lanes, at most kMaxLanes): panel by panel, the runs of every tap and
// vector worked out once per column block, then every channel of the depth
// block copied with them.
template <class Isa>
void pack_vector(const detail::Spatial3& s, const float* x, int64_t in_plane, int64_t k_volume, int64_t k0,
                 int64_t kc, int64_t j0, int64_t nc, int nr, float* dst) {
  using Run = typename Isa::Run;
  const int vectors = nr / Isa::kLanes;
  const int64_t sw = s.strides[2];
  const int64_t n_panels = (nc + nr - 1) / nr;
  thread_local RunCache<Run> cache;  // grows per thread, never shrinks
  if (!cache.holds(s, j0, nc, nr)) {
    cache.s = s;
    cache.j0 = j0;
    cache.nc = nc;
    cache.nr = nr;
    cache.panels.resize(static_cast<size_t>(std::max<int64_t>(n_panels, static_cast<int64_t>(cache.panels.size()))));
    for (auto& p : cache.panels) p.ready = false;
  }
  Segment seg[kMaxLanes];
  for (int64_t q = 0; q < n_panels; ++q) {
    PanelRuns<Run>& p = cache.panels[static_cast<size_t>(q)];
    if (!p.ready) {
      const int n_seg = panel_segments(s, j0 + q * nr, static_cast<int>(std::min<int64_t>(nr, nc - q * nr)), seg);
      // Every (tap, vector) gets the same number of runs, the most any has
      // (empty ones padding: a load with an empty mask reads nothing), so
      // that the copy loop runs a fixed count and its branches predict. At
      // most one run per segment and vector it touches.
      p.most = std::min<int64_t>(n_seg, Isa::kLanes);
      p.runs.resize(static_cast<size_t>(k_volume * vectors * p.most));
      p.width = 0;
      for (int64_t t = 0; t < k_volume; ++t) {
        for (int v = 0; v < vectors; ++v) {
          Run* list = p.runs.data() + (t * vectors + v) * p.most;
          int64_t n_runs = 0;
          tap_runs(s, t, seg, n_seg, Isa::kLanes, v, [&](const LaneRun& l) { list[n_runs++] = Isa::run(l, sw); });
          for (int64_t n = n_runs; n < p.most; ++n) list[n] = Run{};
          p.width = std::max(p.width, n_runs);
        }
      }
      p.ready = true;
    }
    Isa::copy(sw, p.width)(p.runs.data(), p.most, p.width, vectors, k_volume, k0, kc, x, in_plane, dst + q * kc * nr);
  }
}
#endif

}  // namespace

Im2colSource::Im2colSource(const detail::Spatial3& s, const float* x, Packer packer) : s_(s), x_(x), packer_(packer) {
  in_plane_ = s.in[0] * s.in[1] * s.in[2];
  k_volume_ = s.kernel[0] * s.kernel[1] * s.kernel[2];
  if (s.strides[2] == 1 || s.strides[2] == 2) {
    if (kAvx512Bmi2 && packer != Packer::kVectorAvx2 && packer != Packer::kGeneric) vector_ = Vector::kAvx512;
    else if (kAvx2 && packer != Packer::kGeneric) vector_ = Vector::kAvx2;
  }
}

bool Im2colSource::vector_available() { return kAvx512Bmi2 || kAvx2; }
bool Im2colSource::vector_avx2_available() { return kAvx2; }

void Im2colSource::pack(int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float* dst) const {
#if defined(__x86_64__) && defined(__GNUC__)
  // kBest: the vector packer works out each tap's runs once per panel and
  // depth block; with fewer than four channels to reuse them (a stem conv
  // over RGB: 3 channels, 49 taps), the row-wise packer is faster.
  const bool vector = packer_ != Packer::kBest || kc >= 4 * k_volume_;
  if (vector && vector_ == Vector::kAvx512 && nr % 16 == 0 && nr <= kMaxLanes)
    return pack_vector<Avx512Packer>(s_, x_, in_plane_, k_volume_, k0, kc, j0, nc, nr, dst);
  if (vector && vector_ == Vector::kAvx2 && nr % 8 == 0 && nr <= kMaxLanes)
    return pack_vector<Avx2Packer>(s_, x_, in_plane_, k_volume_, k0, kc, j0, nc, nr, dst);
#endif
  pack_generic(k0, kc, j0, nc, nr, dst);
}

void Im2colSource::pack_generic(int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float* dst) const {
  const int64_t n_panels = (nc + nr - 1) / nr;
  const int64_t sw = s_.strides[2];
  for (int64_t kk = 0; kk < kc; ++kk) {
    const int64_t k = k0 + kk;
    const float* xc = x_ + k / k_volume_ * in_plane_;
    const TapOffset off = tap_offset(s_, k % k_volume_);
    // Output columns whose tap lands inside the input row.
    const detail::IndexRange rw = detail::valid_range(off.w, sw, s_.in[2], s_.out[2]);
    PanelCursor out{dst + kk * nr, kc * nr, nr, 0};
    int64_t j = j0;
    int64_t ow = j % s_.out[2], oh = (j / s_.out[2]) % s_.out[1], od = j / (s_.out[2] * s_.out[1]);
    while (j < j0 + nc) {
      const int64_t run = std::min(s_.out[2] - ow, j0 + nc - j);
      const int64_t id = od * s_.strides[0] + off.d, ih = oh * s_.strides[1] + off.h;
      if (id < 0 || id >= s_.in[0] || ih < 0 || ih >= s_.in[1]) {
        out.zeros(run);
      } else {
        const float* xrow = xc + (id * s_.in[1] + ih) * s_.in[2];
        const int64_t lo = std::clamp(rw.lo - ow, int64_t{0}, run), hi = std::clamp(rw.hi - ow, lo, run);
        out.zeros(lo);
        out.copy(xrow + (ow + lo) * sw + off.w, sw, hi - lo);
        out.zeros(run - hi);
      }
      j += run;
      ow = 0;
      if (++oh == s_.out[1]) {
        oh = 0;
        ++od;
      }
    }
    // Zero the columns of the last panel past nc.
    const int64_t tail = n_panels * nr - nc;
    float* last = dst + (n_panels - 1) * kc * nr + kk * nr;
    std::fill(last + (nr - tail), last + nr, 0.0f);
  }
}

}  // namespace quant::kernels
