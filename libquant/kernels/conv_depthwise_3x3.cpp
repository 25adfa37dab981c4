// Depthwise 3x3 plane kernels (conv_depthwise_3x3.h): AVX-512 (16 outputs per
// vector) and AVX2 + FMA (8 outputs), both from bands of zero-padded scratch
// rows. Both are compiled with target attributes and picked at run time, as
// the GEMM micro-kernels are.
#include "libquant/kernels/conv_depthwise_3x3.h"
#include "libquant/kernels/cpu.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace quant::kernels::detail {

float* depthwise_scratch(size_t floats, size_t align) {
  thread_local std::vector<float> scratch;
  if (scratch.size() < floats + align) scratch.resize(floats + align);
  float* s = scratch.data();
  return s + (align - (reinterpret_cast<uintptr_t>(s) / sizeof(float)) % align) % align;
}

namespace {

// Bands of at most `most` output rows, all of one height but the last:
// ceil(out_h / bands) rows for ceil(out_h / most) bands.
int64_t band_height(int64_t out_h, int64_t most) {
  const int64_t bands = (out_h + most - 1) / most;
  return (out_h + bands - 1) / bands;
}

// The band walk of both kernels. Padded input row pr (input row
// pr - pad_top) lives in ring slot pr % slots, and a band packs only the rows
// the previous band did not (bands of stride-1 rows share two rows, stride 2
// one): pack(ih, row) fills a scratch row, tile(rows, yrows, rows_here)
// computes the band's rows_here output rows from its scratch rows.
template <class Pack, class Tile>
[[gnu::always_inline]] inline void for_each_band(const Depthwise3x3Plane& p, int64_t R, int64_t sh, int64_t row_floats,
                                                 float* ring, Pack pack, Tile tile) {
  const int64_t slots = (R - 1) * sh + 3;
  int64_t packed_to = 0;  // padded rows below this one are in the ring
  for (int64_t oh0 = 0; oh0 < p.out_h; oh0 += R) {
    const int64_t rows_here = std::min(R, p.out_h - oh0);
    const int64_t first = oh0 * p.stride_h, count = (rows_here - 1) * sh + 3;
    const float* rows[2 * 8 + 1];
    for (int64_t i = 0, slot = first % slots; i < count; ++i, slot = slot + 1 == slots ? 0 : slot + 1) {
      float* row = ring + slot * row_floats;
      if (first + i >= packed_to) pack(first + i - p.pad_top, row);
      rows[i] = row;
    }
    packed_to = first + count;
    float* yrows[8];
    for (int64_t r = 0; r < rows_here; ++r) yrows[r] = p.y + (oh0 + r) * p.out_w;
    tile(rows, yrows, rows_here);
  }
}

// Lanes [lo, hi) of 16 (empty when hi <= lo).
__mmask16 lanes(int64_t lo, int64_t hi) {
  lo = std::clamp<int64_t>(lo, 0, 16);
  hi = std::clamp<int64_t>(hi, lo, 16);
  return static_cast<__mmask16>(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

// The AVX-512 kernel takes a band of output rows at a time. The input rows
// the band reads are first copied into a scratch band with the padding
// written out as zeros, and with stride 2 each row is split into its even
// and its odd columns. Every tap of a 16-wide output vector is then one
// unmasked, contiguous load, and each input row is loaded once per column
// vector for all the output rows of the band that read it (up to three),
// where a per-output-row loop loads it three times. A padding tap adds
// w * 0 instead of being skipped, as ONNX Runtime's im2col does: the sum
// differs from the skipping border path (AVX2, reference) only in the sign
// of an exact zero and where a weight is infinite.
struct BandLayout {
  int64_t vectors;  // 16-wide output vectors per row
  int64_t width;    // floats per column part of a scratch row (a multiple of 16)
  int64_t row;      // floats per scratch row: width (stride 1), or the even then the odd part (stride 2)
  int64_t packed;   // the first floats of each part that pack_row fills (packed_floats)
};

// How many floats of each part of a scratch row pack_row must fill, in
// whole vectors of `lanes`: output column ow reads scratch columns up to
// ow + 2 (stride 1), or even column ow + 1 and odd column ow (stride 2).
// The tiles also read the columns after those, up to the part's end, but
// only for the lanes past out_w that are never stored: their vectors are
// not packed (stale floats of an earlier plane stay there). mobilenet_v2's
// stride-2 56 x 56 layer packed three vectors of its 28 outputs' rows
// where two serve.
int64_t packed_floats(const Depthwise3x3Plane& p, int64_t width, int64_t lanes) {
  const int64_t last = p.stride_w == 1 ? p.out_w + 1 : p.out_w;  // the last column a stored output reads
  return std::min(width, (last / lanes + 1) * lanes);
}

BandLayout band_layout(const Depthwise3x3Plane& p) {
  BandLayout b;
  b.vectors = (p.out_w + 15) / 16;
  // Output column ow reads scratch columns ow..ow+2 (stride 1), or even
  // columns ow, ow+1 and odd column ow (stride 2): at most 16 * vectors + 1.
  b.width = 16 * b.vectors + 16;
  b.row = p.stride_w == 1 ? b.width : 2 * b.width;
  b.packed = packed_floats(p, b.width, 16);
  return b;
}

// The vector operations of a band tile: 16 floats (AVX-512) or 8 (AVX2).
struct Zmm {
  using Vec = __m512;
  static constexpr int kLanes = 16;
  __attribute__((target("avx512f"))) static Vec load(const float* p) { return _mm512_load_ps(p); }
  __attribute__((target("avx512f"))) static Vec loadu(const float* p) { return _mm512_loadu_ps(p); }
  __attribute__((target("avx512f"))) static Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  // The 16 floats from p + S (S = 1, 2), where cur holds p[0, 16) and next
  // p[16, 32): one VALIGND of the two registers. Unaligned loads at p + 1
  // and p + 2 split a cache line each; with them the tiles ran at about 11
  // cycles a vector against 8 so (4 x 2 tiles of a 56-wide map, rows in L1,
  // a harness, stop 75).
  template <int S>
  __attribute__((target("avx512f"))) static Vec shifted(const float* /*p*/, Vec cur, Vec next) {
    // (maskz form: the plain one trips GCC 12's -Wuninitialized.)
    return _mm512_castsi512_ps(
        _mm512_maskz_alignr_epi32(0xFFFF, _mm512_castps_si512(next), _mm512_castps_si512(cur), S));
  }
  // Keeps v in a register (an empty asm that may change it).
  __attribute__((target("avx512f"), always_inline)) static void pin(Vec& v) { asm("" : "+v"(v)); }
  // max(lo, v), min(hi, v): the second operand (v) is returned for NaN.
  // maskz forms: the plain ones trip GCC 12's -Wmaybe-uninitialized.
  __attribute__((target("avx512f"))) static Vec clamp(Vec v, Vec lo, Vec hi) {
    return _mm512_maskz_min_ps(0xFFFF, hi, _mm512_maskz_max_ps(0xFFFF, lo, v));
  }
  // v's lanes where m (16 int32 lanes, all ones or zero) is all ones, +0 elsewhere.
  __attribute__((target("avx512f"))) static Vec and_mask(Vec v, const int32_t* m) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_loadu_si512(m)));
  }
  // The first n elements (all when n >= 16).
  __attribute__((target("avx512f"))) static void store(float* p, Vec v, int64_t n) {
    if (n >= 16)
      _mm512_storeu_ps(p, v);
    else
      _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1u), v);
  }
};

struct Ymm {
  using Vec = __m256;
  static constexpr int kLanes = 8;
  __attribute__((target("avx2,fma"))) static Vec load(const float* p) { return _mm256_load_ps(p); }
  __attribute__((target("avx2,fma"))) static Vec loadu(const float* p) { return _mm256_loadu_ps(p); }
  __attribute__((target("avx2,fma"))) static Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  // An unaligned load (AVX2 has no two-register shift across its 128-bit
  // halves; the load of `next` goes unused then, and the compiler drops it).
  template <int S>
  __attribute__((target("avx2,fma"))) static Vec shifted(const float* p, Vec /*cur*/, Vec /*next*/) {
    return _mm256_loadu_ps(p + S);
  }
  __attribute__((target("avx2,fma"), always_inline)) static void pin(Vec& v) { asm("" : "+x"(v)); }
  __attribute__((target("avx2,fma"))) static Vec clamp(Vec v, Vec lo, Vec hi) {
    return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
  }
  __attribute__((target("avx2,fma"))) static Vec and_mask(Vec v, const int32_t* m) {
    return _mm256_and_ps(v, _mm256_loadu_ps(reinterpret_cast<const float*>(m)));
  }
  __attribute__((target("avx2,fma"))) static void store(float* p, Vec v, int64_t n) {
    if (n >= 8) {
      _mm256_storeu_ps(p, v);
      return;
    }
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), iota), v);
  }
};

// What a band tile reads besides the rows: the nine weights, the bias and
// the clamp bounds, each in every lane of L's vectors.
template <class L>
struct TileConsts {
  typename L::Vec w[9];
  typename L::Vec bias, lo, hi;
};

struct Avx512Consts {
  TileConsts<Zmm> t;
  __m512i even, odd;
};

// Which lanes of each 16-float load of pack_row land inside the input row:
// they depend on the column only, so they are worked out once per plane.
struct PackMasks {
  std::vector<__mmask16> lo, hi;  // per 16 scratch columns; hi: stride 2's second load
};

void pack_masks(const Depthwise3x3Plane& p, const BandLayout& b, PackMasks& m) {
  const size_t n = static_cast<size_t>(b.width / 16);
  m.lo.resize(n);
  m.hi.resize(n);
  for (size_t i = 0; i < n; ++i) {
    // Input column of lane 0: scratch column c (stride 1) or padded column 2c (stride 2).
    const int64_t first = p.stride_w * static_cast<int64_t>(16 * i) - p.pad_left;
    m.lo[i] = lanes(-first, p.in_w - first);
    m.hi[i] = lanes(-first - 16, p.in_w - first - 16);
  }
}

// Lanes of `mask` from src, zero elsewhere. A masked load costs several
// times a plain one on this class of CPU (measured: packing 56-wide rows
// with masked loads took as long as the FMAs of the plane), so a vector
// that lies inside the plane [lo, hi) loads plainly and drops the lanes
// outside its row; only the plane's first and last rows mask their loads.
__attribute__((target("avx512f"))) inline __m512 load_lanes(__mmask16 mask, const float* src, const float* lo,
                                                            const float* hi) {
  if (mask == 0xFFFF) return _mm512_loadu_ps(src);
  if (mask == 0) return _mm512_setzero_ps();
  if (src >= lo && src + 16 <= hi) return _mm512_maskz_mov_ps(mask, _mm512_loadu_ps(src));
  return _mm512_maskz_loadu_ps(mask, src);
}

// Scratch row `dst` (64-byte aligned) for input row ih: padded column c is
// input column c - pad_left, zero outside the row (a row outside the input
// is all zero). Stride 2 stores padded columns 0, 2, 4... then 1, 3, 5...
__attribute__((target("avx512f"))) void pack_row(const Depthwise3x3Plane& p, const BandLayout& b,
                                                 const Avx512Consts& k, const __mmask16* lo, const __mmask16* hi,
                                                 int64_t ih, float* dst) {
  const int64_t n = b.packed / 16;
  if (ih < 0 || ih >= p.in_h) {
    for (int64_t c = 0; c < b.row; c += 16) _mm512_store_ps(dst + c, _mm512_setzero_ps());
    return;
  }
  // src[c]: padded column c. Pointers are compared, never dereferenced, outside the plane.
  const uintptr_t src_at = reinterpret_cast<uintptr_t>(p.x + ih * p.in_w) - sizeof(float) * static_cast<uintptr_t>(p.pad_left);
  const float* src = reinterpret_cast<const float*>(src_at);
  const float* plane_end = p.x + p.in_h * p.in_w;
  if (p.stride_w == 1) {
    for (int64_t i = 0; i < n; ++i) _mm512_store_ps(dst + 16 * i, load_lanes(lo[i], src + 16 * i, p.x, plane_end));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const __m512 a = load_lanes(lo[i], src + 32 * i, p.x, plane_end);
    const __m512 c = load_lanes(hi[i], src + 32 * i + 16, p.x, plane_end);
    _mm512_store_ps(dst + 16 * i, _mm512_permutex2var_ps(a, k.even, c));
    _mm512_store_ps(dst + b.width + 16 * i, _mm512_permutex2var_ps(a, k.odd, c));
  }
}

// band_tile_avx512 and band_tile_avx2: a band tile, written once
// (conv_depthwise_3x3_tile.inc) and compiled for each ISA.
#define QTOOL_TILE_TARGET __attribute__((target("avx512f")))
#define QTOOL_TILE_NAME band_tile_avx512
#define QTOOL_TILE_LANES Zmm
#include "libquant/kernels/conv_depthwise_3x3_tile.inc"
#undef QTOOL_TILE_TARGET
#undef QTOOL_TILE_NAME
#undef QTOOL_TILE_LANES
#define QTOOL_TILE_TARGET __attribute__((target("avx2,fma")))
#define QTOOL_TILE_NAME band_tile_avx2
#define QTOOL_TILE_LANES Ymm
#include "libquant/kernels/conv_depthwise_3x3_tile.inc"
#undef QTOOL_TILE_TARGET
#undef QTOOL_TILE_NAME
#undef QTOOL_TILE_LANES

// Small stride-1 planes whose rows keep their width (out_w == in_w: one
// column of padding on each side, or two on one): the plane is one flat
// array, and output i reads input i + (kh - pad_top) * w + kw - pad_left for
// tap (kh, kw), so consecutive outputs fill whole vectors even where they
// span two rows. A tap whose column falls off its row (the row before's
// last, or the next's first) is zeroed by a per-position column mask, and
// the rows above and below the plane are zero rows of a scratch copy: each
// output is still bias, then its nine taps in (kh, kw) order, w * 0 for a
// padding tap, as in the band tiles (the same bits). On 14 x 14 and 7 x 7
// maps the band walk spent most of a plane packing rows and calling one tile
// per few rows (mobilenet_v2's depthwise layers there ran 1.4-2.4x ONNX
// Runtime's NCHWc kernel under QTOOL_ISA=avx2). Rows up to 32 wide: one
// 28 x 28 layer alone ran 15% faster flat, a 56 x 56 one 20% slower
// (`QTOOL_ISA=avx2`, best of 1000 calls).
constexpr int64_t kFlatMaxWidth = 32;

// (out_w == in_w with a 3-wide kernel at stride 1 means pad_left + pad_right == 2.)
bool flat_plane_fits(const Depthwise3x3Plane& p) {
  return p.stride_h == 1 && p.stride_w == 1 && p.out_w == p.in_w && p.in_w <= kFlatMaxWidth;
}

// The column masks of a flat plane, per vector of `lanes` outputs and kernel
// column: all ones where output column ow + kw - pad_left lies inside the
// row. They depend on the plane's geometry only: kept per thread for the
// planes of a layer.
const int32_t* flat_masks(const Depthwise3x3Plane& p, int64_t vectors, int lanes) {
  struct Cache {
    int64_t w = -1, outputs = -1, pad_left = -1;
    int lanes = 0;
    std::vector<int32_t> masks;  // [vector][kw][lane]
  };
  thread_local Cache c;
  if (c.w != p.in_w || c.outputs != vectors * lanes || c.pad_left != p.pad_left || c.lanes != lanes) {
    c.w = p.in_w;
    c.outputs = vectors * lanes;
    c.pad_left = p.pad_left;
    c.lanes = lanes;
    c.masks.assign(static_cast<size_t>(vectors * 3 * lanes), 0);
    for (int64_t i = 0; i < vectors * lanes; ++i)
      for (int64_t kw = 0; kw < 3; ++kw) {
        const int64_t col = i % p.in_w + kw - p.pad_left;
        c.masks[static_cast<size_t>(((i / lanes) * 3 + kw) * lanes + i % lanes)] = col >= 0 && col < p.in_w ? -1 : 0;
      }
  }
  return c.masks.data();
}

// flat_plane_avx2 (conv_depthwise_3x3_flat.inc).
#define QTOOL_FLAT_TARGET __attribute__((target("avx2,fma")))
#define QTOOL_FLAT_NAME flat_plane_avx2
#define QTOOL_FLAT_GROUP flat_group_avx2
#define QTOOL_FLAT_LANES Ymm
#include "libquant/kernels/conv_depthwise_3x3_flat.inc"
#undef QTOOL_FLAT_TARGET
#undef QTOOL_FLAT_NAME
#undef QTOOL_FLAT_GROUP
#undef QTOOL_FLAT_LANES

// flat_plane_masked_avx512: AVX-512's flat plane, its taps masked loads
// from the input (conv_depthwise_3x3_flat_avx512.inc).
#include "libquant/kernels/conv_depthwise_3x3_flat_avx512.inc"

template <class L>
using BandTileFn = void (*)(const TileConsts<L>&, const float* const*, int64_t, float* const*, int64_t, int64_t,
                            bool);

// AVX-512 tiles of 1 to 8 rows of one or two vectors, for one (row stride,
// column stride); AVX2 has half the registers: 1 to 4 rows or 1 to 2.
template <int SH, int SW, int V, int... R>
constexpr BandTileFn<Zmm> kTilesOf[] = {band_tile_avx512<R, SH, SW, V>...};
template <int SH, int SW>
constexpr const BandTileFn<Zmm>* kBandTilesByV[2] = {kTilesOf<SH, SW, 1, 1, 2, 3, 4, 5, 6, 7, 8>,
                                                        kTilesOf<SH, SW, 2, 1, 2, 3, 4, 5, 6, 7, 8>};
template <int SH, int SW, int V, int... R>
constexpr BandTileFn<Ymm> kAvx2TilesOf[] = {band_tile_avx2<R, SH, SW, V>...};
template <int SH, int SW>
constexpr const BandTileFn<Ymm>* kAvx2TilesByV[2] = {kAvx2TilesOf<SH, SW, 1, 1, 2, 3, 4>,
                                                        kAvx2TilesOf<SH, SW, 2, 1, 2>};

__attribute__((target("avx512f"))) void dwconv3x3_f32_avx512(const Depthwise3x3Plane& p) {
  Avx512Consts k;
  for (int i = 0; i < 9; ++i) k.t.w[i] = _mm512_set1_ps(p.w[i]);
  k.t.bias = _mm512_set1_ps(p.bias);
  k.t.lo = _mm512_set1_ps(p.lo);
  k.t.hi = _mm512_set1_ps(p.hi);
  k.even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  k.odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  if (flat_plane_fits(p)) return flat_plane_masked_avx512(p, k.t);
  const BandLayout b = band_layout(p);
  // Bands of up to eight rows of one or two vectors (16 accumulators, the
  // nine weights and the row's vectors in 32 registers), of equal height (a
  // 7x7 map is one band of 7). Each accumulator is a chain of nine
  // dependent multiply-adds: eight accumulators (two vectors by four rows)
  // left the FMA units waiting on them, 10-12% slower on mobilenet_v2's
  // stride-1 56 x 56 and 112 x 112 layers (stop 75). A row stride other than
  // 1 or 2 takes bands of one row (its three input rows).
  const int V = b.vectors >= 2 ? 2 : 1;
  const bool banded = p.stride_h == 1 || p.stride_h == 2;
  const int64_t most = banded ? 8 : 1;
  const int64_t R = band_height(p.out_h, most);
  const int64_t sh = banded ? p.stride_h : 1;  // the band's row stride (one row: any)
  const BandTileFn<Zmm>* const* by_v = p.stride_w == 1 ? (sh == 1 ? kBandTilesByV<1, 1> : kBandTilesByV<2, 1>)
                                                          : (sh == 1 ? kBandTilesByV<1, 2> : kBandTilesByV<2, 2>);
  // The masks depend on the row geometry only: worked out once for the
  // planes of a layer (per plane, they cost as much as a 7x7 plane's FMAs).
  struct MaskCache {
    int64_t in_w = -1, out_w = -1, stride_w = -1, pad_left = -1;
    PackMasks masks;
  };
  thread_local MaskCache cache;
  if (cache.in_w != p.in_w || cache.out_w != p.out_w || cache.stride_w != p.stride_w || cache.pad_left != p.pad_left) {
    pack_masks(p, b, cache.masks);
    cache.in_w = p.in_w;
    cache.out_w = p.out_w;
    cache.stride_w = p.stride_w;
    cache.pad_left = p.pad_left;
  }
  const PackMasks& masks = cache.masks;
  float* ring = depthwise_scratch(static_cast<size_t>(((R - 1) * sh + 3) * b.row), 16);  // 64-byte aligned
  for_each_band(
      p, R, sh, b.row, ring,
      [&](int64_t ih, float* row) __attribute__((target("avx512f"))) {
        pack_row(p, b, k, masks.lo.data(), masks.hi.data(), ih, row);
      },
      [&](const float* const* rows, float* const* yrows, int64_t rows_here) __attribute__((target("avx512f"))) {
        // The band across the whole row, V vectors at a time.
        for (int64_t v0 = 0; v0 < b.vectors;) {
          const int nv = b.vectors - v0 >= V ? V : 1;
          by_v[nv - 1][rows_here - 1](k.t, rows, b.width, yrows, 16 * v0, p.out_w, p.clamp);
          v0 += nv;
        }
      });
}

// x[0], x[2], ..., x[14] in order (AVX2 has no two-source permute).
__attribute__((target("avx2,fma"))) __m256 even_lanes(__m256 lo, __m256 hi) {
  const __m256 e = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
}
__attribute__((target("avx2,fma"))) __m256 odd_lanes(__m256 lo, __m256 hi) {
  const __m256 o = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

// The AVX2 kernel is the AVX-512 one in 8-float vectors: bands of output
// rows from zero-padded scratch rows (stride 2: even, then odd columns), so
// both give the same bits. Sixteen ymm registers hold the nine weights and
// R x V <= 4 accumulators; each input row is loaded once per column vector
// for the (up to three) output rows of the band that read it. The row loop
// it replaced, a border path one output at a time plus vector blocks that
// loaded each input row three times, ran at 12% of the FMA peak on
// mobilenet_v2's depthwise layers (perf, QTOOL_ISA=avx2).
struct Avx2Layout {
  int64_t vectors;  // 8-wide output vectors per row
  int64_t width;    // floats per column part of a scratch row: 8 * vectors + 8
  int64_t row;      // width (stride 1), or the even then the odd part (stride 2)
  int64_t packed;   // the first floats of each part that pack_row_avx2 fills (packed_floats)
};

Avx2Layout avx2_layout(const Depthwise3x3Plane& p) {
  Avx2Layout b;
  b.vectors = (p.out_w + 7) / 8;
  // Output column ow reads scratch columns ow..ow+2 (stride 1), or even
  // columns ow, ow+1 and odd column ow (stride 2): below 8 * vectors + 2.
  b.width = 8 * b.vectors + 8;
  b.row = p.stride_w == 1 ? b.width : 2 * b.width;
  b.packed = packed_floats(p, b.width, 8);
  return b;
}

// Scratch row `dst` for input row ih: padded column c is input column
// c - pad_left, zero outside the row (a row outside the input is all zero);
// stride 2 stores padded columns 0, 2, 4... then 1, 3, 5... Eight scratch
// columns at a time: vector loads where their input columns lie inside the
// row, masked loads at the row's ends.
__attribute__((target("avx2,fma"))) void pack_row_avx2(const Depthwise3x3Plane& p, const Avx2Layout& b, int64_t ih,
                                                       float* dst) {
  if (ih < 0 || ih >= p.in_h) {
    for (int64_t c = 0; c < b.row; c += 8) _mm256_store_ps(dst + c, _mm256_setzero_ps());
    return;
  }
  // x[col]: input column col of the row. Only the masked loads below form
  // pointers outside it, and they touch no masked-off element.
  const float* x = p.x + ih * p.in_w;
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  // Elements [col, col + 8) of the row, zero outside it.
  auto load = [&](int64_t col) __attribute__((target("avx2"))) {
    if (col >= 0 && col + 8 <= p.in_w) return _mm256_loadu_ps(x + col);
    const __m256i c = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(col)), iota);
    const __m256i inside =
        _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), c),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(p.in_w)), c));
    if (_mm256_testz_si256(inside, inside)) return _mm256_setzero_ps();
    const uintptr_t at = reinterpret_cast<uintptr_t>(x) + sizeof(float) * static_cast<uintptr_t>(col);
    return _mm256_maskload_ps(reinterpret_cast<const float*>(at), inside);
  };
  for (int64_t i = 0; i < b.packed; i += 8) {
    if (p.stride_w == 1) {
      _mm256_store_ps(dst + i, load(i - p.pad_left));
      continue;
    }
    const int64_t first = 2 * i - p.pad_left;  // input column of padded column 2i
    const __m256 a = load(first), c = load(first + 8);
    _mm256_store_ps(dst + i, even_lanes(a, c));
    _mm256_store_ps(dst + b.width + i, odd_lanes(a, c));
  }
}

__attribute__((target("avx2,fma"))) void dwconv3x3_f32_avx2(const Depthwise3x3Plane& p) {
  TileConsts<Ymm> k;
  for (int i = 0; i < 9; ++i) k.w[i] = _mm256_set1_ps(p.w[i]);
  k.bias = _mm256_set1_ps(p.bias);
  k.lo = _mm256_set1_ps(p.lo);
  k.hi = _mm256_set1_ps(p.hi);
  if (flat_plane_fits(p)) return flat_plane_avx2(p, k);
  const Avx2Layout b = avx2_layout(p);
  const int V = b.vectors >= 2 ? 2 : 1;
  const bool banded = p.stride_h == 1 || p.stride_h == 2;
  const int64_t R = band_height(p.out_h, banded ? (V == 2 ? 2 : 4) : 1);
  const int64_t sh = banded ? p.stride_h : 1;
  const BandTileFn<Ymm>* const* by_v = p.stride_w == 1 ? (sh == 1 ? kAvx2TilesByV<1, 1> : kAvx2TilesByV<2, 1>)
                                                  : (sh == 1 ? kAvx2TilesByV<1, 2> : kAvx2TilesByV<2, 2>);
  float* ring = depthwise_scratch(static_cast<size_t>(((R - 1) * sh + 3) * b.row), 8);  // 32-byte aligned
  for_each_band(
      p, R, sh, b.row, ring,
      [&](int64_t ih, float* row) __attribute__((target("avx2,fma"))) { pack_row_avx2(p, b, ih, row); },
      [&](const float* const* rows, float* const* yrows, int64_t rows_here) __attribute__((target("avx2,fma"))) {
        for (int64_t v0 = 0; v0 < b.vectors;) {
          const int nv = b.vectors - v0 >= V ? V : 1;
          by_v[nv - 1][rows_here - 1](k, rows, b.width, yrows, 8 * v0, p.out_w, p.clamp);
          v0 += nv;
        }
      });
}

// Where the block kernels beat the plane kernels of their ISA: one layer
// alone, 1 thread, calls of the two alternating, best of 200-300 each, bits
// compared (dwblk harness, stop 44, AVX-512 host; block time / plane time).
// AVX2, 8 channels: stride 2 at 14 x 14 0.31-0.35, 28 0.49-0.51, 42 0.65,
// 56 0.89-0.94, but 112 1.19-1.23 and 224 1.95 (the scratch leaves L2);
// stride 1 at 7 0.56-0.60, 14 0.71-0.73, 16-21 0.73-0.79, 24 0.88, but 28
// 1.04-1.08 and 56 1.23 (the flat and band walks are quick there).
// AVX-512, 16 channels: stride 2 at 14 0.30, 24 0.50, 28 0.74, 42 0.69-0.74,
// but 56 1.36-1.41 and 112 1.66-1.71; stride 1 at 7 0.54, 14 0.87-0.92,
// 16-21 0.75-0.84, 24 0.94, but 28 1.31.
bool block_fits_avx2(const Depthwise3x3Plane& p) {
  return p.in_h * p.in_w <= 56 * 56 && p.in_w <= (p.stride_w == 2 ? 56 : 24);
}
bool block_fits_avx512(const Depthwise3x3Plane& p) {
  return p.in_h * p.in_w <= 42 * 42 && p.in_w <= (p.stride_w == 2 ? 42 : 24);
}

const Depthwise3x3Isa kAvx2{"avx2", dwconv3x3_f32_avx2, 8, dwconv3x3_block_avx2, block_fits_avx2};
const Depthwise3x3Isa kAvx512{"avx512", dwconv3x3_f32_avx512, 16, dwconv3x3_block_avx512, block_fits_avx512};

}  // namespace

std::vector<const Depthwise3x3Isa*> supported_depthwise_3x3_isas() {
  std::vector<const Depthwise3x3Isa*> isas;
  if (cpu_supports("avx2") && cpu_supports("fma")) isas.push_back(&kAvx2);
  if (cpu_supports("avx512f")) isas.push_back(&kAvx512);
  return isas;
}

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
std::vector<const Depthwise3x3Isa*> supported_depthwise_3x3_isas() { return {}; }
}  // namespace quant::kernels::detail

#endif
