// AVX2 integer GEMM micro-kernel (4 x 16) and the AVX2 output stage shared by
// every x86 ISA. Compiled with target attributes, so the rest of the library
// needs no -mavx2; called only when the CPU reports avx2.
//
// Two kernels per operand order, both exact:
//  - the widening kernel, for any weights: VPMADDUBSW (u8 x s8 pairs summed
//    into a saturating int16) would clip 255*127 + 255*127, so both operands
//    are widened to int16 and VPMADDWD sums the pairs into int32, which never
//    saturates (|sum| <= 65280);
//  - the pairs kernel, for weights whose packed pairs pass
//    s8_pairs_fit_int16 (checked when they are packed): VPMADDUBSW, whose
//    pair sums then cannot saturate, and VPMADDWD by ones to add the two
//    pairs of each 4-byte group into int32: the sequence and the 4 x 16 tile
//    of MLAS's AVX2 U8S8 kernel (onnxruntime/core/mlas/lib/amd64/
//    QgemmU8X8KernelAvx2.asm, MultiplyAccumulateRowU8S8Avx2), which runs it
//    on any weights and accepts the saturation. Per 256 products it issues
//    16 multiplies (2 per cycle on Intel cores since Haswell) and no shuffle,
//    where the widening kernel issues 16 multiplies plus about 20 widening
//    and broadcast shuffles, all on the one shuffle port.
#include "libquant/kernels/qgemm_ukernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstring>
#include <limits>

namespace quant::kernels::detail {
namespace {

constexpr int kMr = 4;

__attribute__((target("avx2"))) inline __m256i widen_b(const uint8_t* p, bool b_unsigned) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return b_unsigned ? _mm256_cvtepu8_epi16(v) : _mm256_cvtepi8_epi16(v);
}

// Four bytes of one A row as int16, repeated in every 64-bit lane.
__attribute__((target("avx2"))) inline __m256i broadcast_a(const uint8_t* p, bool a_unsigned) {
  int32_t word;
  std::memcpy(&word, p, 4);
  const __m128i v = _mm_cvtsi32_si128(word);
  return _mm256_broadcastq_epi64(a_unsigned ? _mm_cvtepu8_epi16(v) : _mm_cvtepi8_epi16(v));
}

// Lanes of x: [c0 k01, c0 k23, c1 k01, c1 k23 | c2.., c3..], y the same for
// columns 4-7: the eight column sums in order.
__attribute__((target("avx2"))) inline __m256i fold_pairs(__m256i x, __m256i y) {
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(x, y), 0xD8);
}

// Four int16 (8 bytes) repeated in every 64-bit lane: one VPBROADCASTQ from
// memory, a load-port operation. For a row of A widened when packed, where
// broadcast_a spends two shuffles on the one shuffle port; requant_narrow
// broadcasts a column of widened B with it.
__attribute__((target("avx2"))) inline __m256i broadcast_words(const uint8_t* p) {
  int64_t words;
  std::memcpy(&words, p, 8);
  return _mm256_set1_epi64x(words);
}

// Bytes of one row's group of four k in a packed A panel: int8 or int16.
constexpr int a_row_bytes(bool wide) { return wide ? 8 : 4; }

// Row r's group of four k from a packed A panel, as int16 pairs broadcast
// for VPMADDWD (widened now, or when packed: kWideA).
template <bool kAUnsigned, bool kWideA>
__attribute__((target("avx2"), always_inline)) inline __m256i a_row(const uint8_t* a, int r) {
  return kWideA ? broadcast_words(a + r * a_row_bytes(true)) : broadcast_a(a + r * a_row_bytes(false), kAUnsigned);
}

// c += VPMADDWD(a, b), the sum written into c's own register: in one asm
// statement GCC cannot put it in a fresh register and copy it back at the
// loop's end, as it did for some accumulators of the loops below whatever
// the statements' order. The same instructions, so the same bits.
__attribute__((target("avx2"), always_inline)) inline void madd_add(__m256i& c, __m256i a, __m256i b) {
  __m256i t;
  __asm__("vpmaddwd %[b], %[a], %[t]\n\tvpaddd %[t], %[c], %[c]" : [c] "+x"(c), [t] "=&x"(t) : [a] "x"(a), [b] "x"(b));
}

// The widening kernels: A and B widened to int16, pairs of k summed into
// int32 by VPMADDWD (exact for any bytes). A is widened as it is used
// (broadcast_a), or was widened when packed (kWideA: a_signed_wide, int8
// weights sign-extended; a_unsigned_wide, uint8 activations zero-extended),
// which leaves per group of four k 4 B widenings and 16 VPMADDWD, the
// multiplies' two ports the bound instead of 20 shuffles on one. Either way
// the same exact int32 sums, so the same bits. Columns 8 half .. 8 half + 7
// of the 4 x 16 tile, per row in `out`.
// kWideB: B too was widened when packed (uint8 zero-extended, the panel's
// bytes as int16 in the same order: a_signed_wide_wb_requant), so a group
// is two plain loads, and the kernel issues no shuffle at all: 36 -> 32
// operations per group, the multiply and add ports the bound.
template <bool kAUnsigned, bool kWideA, bool kWideB = false>
__attribute__((target("avx2"), always_inline)) inline void widening_half(int64_t groups, const uint8_t* a,
                                                                         const uint8_t* b, int half,
                                                                         __m256i (&out)[kMr],
                                                                         const QDirectB& direct = {}) {
  static_assert(!kWideB || !kAUnsigned, "B is widened as uint8 only");
  static_assert(kMr == 4);
  // Named accumulators, each updated (product added) right where an empty
  // asm statement pins it: with an array, or without the pins, GCC 12
  // scheduled the eight VPMADDWD first, added each product into a fresh
  // register and copied all eight back (8 VMOVDQA per group, a fifth of the
  // loop). Now 2 are left; 5-9% more per conv layer alone (best of three,
  // QTOOL_ISA=avx2, 3x3 convs of 64-256 channels).
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  constexpr int kBBytes = kWideB ? 2 : 1;  // per packed B element
  const uint8_t* bp = b + half * 32 * kBBytes;
  // One B vector against the four rows.
  auto rows = [](const uint8_t* ap, __m256i bv, __m256i& c0, __m256i& c1, __m256i& c2, __m256i& c3)
                  __attribute__((target("avx2"), always_inline)) {
    if constexpr (kWideA) {
      // A loaded as it is (words): each product added in place (madd_add),
      // where the pinned form below left 2 register copies in the loop of
      // 29 instructions (requant_panel) and 8 in the GEMM's of 35. With A
      // widened here (VPMOVSXBW) madd_add made more copies, not fewer.
      madd_add(c0, a_row<kAUnsigned, kWideA>(ap, 0), bv);
      madd_add(c1, a_row<kAUnsigned, kWideA>(ap, 1), bv);
      madd_add(c2, a_row<kAUnsigned, kWideA>(ap, 2), bv);
      madd_add(c3, a_row<kAUnsigned, kWideA>(ap, 3), bv);
      return;
    }
    c0 = _mm256_add_epi32(c0, _mm256_madd_epi16(a_row<kAUnsigned, kWideA>(ap, 0), bv));
    __asm__("" : "+x"(c0));
    c1 = _mm256_add_epi32(c1, _mm256_madd_epi16(a_row<kAUnsigned, kWideA>(ap, 1), bv));
    __asm__("" : "+x"(c1));
    c2 = _mm256_add_epi32(c2, _mm256_madd_epi16(a_row<kAUnsigned, kWideA>(ap, 2), bv));
    __asm__("" : "+x"(c2));
    c3 = _mm256_add_epi32(c3, _mm256_madd_epi16(a_row<kAUnsigned, kWideA>(ap, 3), bv));
    __asm__("" : "+x"(c3));
  };
  const QDirectB w = b_walk(groups, kBBytes * kQNr * kQKGroup, direct);
  for (int64_t tap = 0; tap < w.taps; ++tap) {
    for (int64_t q = 0, o = w.tap_off[tap]; q < w.quads; ++q, o += w.quad_pitch) {
      const __m256i b0 =
          kWideB ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + o)) : widen_b(bp + o, !kAUnsigned);
      rows(a, b0, c00, c10, c20, c30);
      const __m256i b1 =
          kWideB ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + o + 32)) : widen_b(bp + o + 16, !kAUnsigned);
      rows(a, b1, c01, c11, c21, c31);
      a += kMr * a_row_bytes(kWideA);
    }
  }
  out[0] = fold_pairs(c00, c01);
  out[1] = fold_pairs(c10, c11);
  out[2] = fold_pairs(c20, c21);
  out[3] = fold_pairs(c30, c31);
}

template <bool kAUnsigned, bool kWideA>
__attribute__((target("avx2"))) void q8_gemm_avx2_4x16(int64_t groups, const uint8_t* a, const uint8_t* b,
                                                        int32_t* tile) {
  for (int half = 0; half < 2; ++half) {
    __m256i v[kMr];
    widening_half<kAUnsigned, kWideA>(groups, a, b, half, v);
    for (int r = 0; r < kMr; ++r) _mm256_storeu_si256(reinterpret_cast<__m256i*>(tile + r * kQNr + half * 8), v[r]);
  }
}

// The pairs kernel, 4 x 16: per row two int32 accumulators (columns 0-7 and
// 8-15), which is also the tile's order (no folding). 8 accumulators, the two
// B vectors, the ones and the products fit the 16 ymm registers; a 2-panel
// (x2) form would need 16 accumulators alone. Per group of four k: two B
// loads, four A broadcasts (VPBROADCASTD from memory, load ports only), then
// 8 x (VPMADDUBSW, VPMADDWD, VPADDD): the multiplies bound it at 2 per cycle.
// The u8 operand comes first in VPMADDUBSW: A (activations) for a_unsigned,
// B (the convolution's activation panels) for a_signed.
// One row of the pairs kernel: A's four bytes at `a` against the B panel's
// group (b0: columns 0-7, b1: 8-15), added to c0 and c1.
template <bool kAUnsigned>
__attribute__((target("avx2"), always_inline)) inline void pairs_row(const uint8_t* a, __m256i b0, __m256i b1,
                                                                      __m256i ones, __m256i& c0, __m256i& c1) {
  int32_t word;
  std::memcpy(&word, a, 4);
  const __m256i ar = _mm256_set1_epi32(word);
  const __m256i p0 = kAUnsigned ? _mm256_maddubs_epi16(ar, b0) : _mm256_maddubs_epi16(b0, ar);
  const __m256i p1 = kAUnsigned ? _mm256_maddubs_epi16(ar, b1) : _mm256_maddubs_epi16(b1, ar);
  c0 = _mm256_add_epi32(c0, _mm256_madd_epi16(p0, ones));
  c1 = _mm256_add_epi32(c1, _mm256_madd_epi16(p1, ones));
}

// pairs_row<false> on columns 0-7 alone (B the u8 operand, as in the conv).
__attribute__((target("avx2"), always_inline)) inline void pairs_row_half(const uint8_t* a, __m256i b0, __m256i ones,
                                                                           __m256i& c0) {
  int32_t word;
  std::memcpy(&word, a, 4);
  c0 = _mm256_add_epi32(c0, _mm256_madd_epi16(_mm256_maddubs_epi16(b0, _mm256_set1_epi32(word)), ones));
}

// Named accumulators, not an array: GCC 12 kept an array of them on the stack.
template <bool kAUnsigned>
__attribute__((target("avx2"))) void q8_gemm_avx2_pairs_4x16(int64_t groups, const uint8_t* a, const uint8_t* b,
                                                              int32_t* tile) {
  static_assert(kMr == 4);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  for (int64_t g = 0; g < groups; ++g) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32));
    pairs_row<kAUnsigned>(a, b0, b1, ones, c00, c01);
    pairs_row<kAUnsigned>(a + 4, b0, b1, ones, c10, c11);
    pairs_row<kAUnsigned>(a + 8, b0, b1, ones, c20, c21);
    pairs_row<kAUnsigned>(a + 12, b0, b1, ones, c30, c31);
    a += kMr * kQKGroup;
    b += kQNr * kQKGroup;
  }
  auto store = [tile](int at, __m256i v) __attribute__((target("avx2"))) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(tile + at), v);
  };
  store(0, c00), store(8, c01), store(kQNr, c10), store(kQNr + 8, c11);
  store(2 * kQNr, c20), store(2 * kQNr + 8, c21), store(3 * kQNr, c30), store(3 * kQNr + 8, c31);
}

// Eight requantized int32 values (already in [lo, hi]) stored as bytes.
template <bool kUnsigned>
__attribute__((target("avx2"))) inline void store8(__m256i q, void* dst) {
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  const __m128i bytes = kUnsigned ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
  _mm_storel_epi64(static_cast<__m128i*>(dst), bytes);
}

// The fused output stage's per-row constants as requant_values reads them:
// straight from the QRequantTile (TileRows: one tile per call), or from a
// copy of them (RowConsts: a run of tiles). The kernels' byte stores may
// alias the tile (uint8_t), so with TileRows GCC reloads each field it reads
// after every store; a run reads them once.
struct TileRows {
  const QRequantTile& t;
  int32_t add(int r) const { return t.row_add[r]; }
  float scale(int r) const { return t.row_scale[r]; }
  int32_t zp(int r) const { return t.row_zp[r]; }
  bool has_zp() const { return t.row_zp != nullptr; }
  float lo() const { return t.lo; }
  float hi() const { return t.hi; }
  int32_t zero_point() const { return t.zero_point; }
};
struct RowConsts {
  int32_t add_[kMr] = {}, zp_[kMr] = {};
  float scale_[kMr] = {};
  float lo_ = 0, hi_ = 0;
  int32_t zero_point_ = 0;
  bool has_zp_ = false;
  explicit RowConsts(const QRequantTile& t) {
    for (int r = 0; r < t.rows; ++r) add_[r] = t.row_add[r], scale_[r] = t.row_scale[r];
    // Its own loop: `t.row_zp ? t.row_zp[r] : 0` in the one above became a
    // VPMASKMOVD from row_zp, whose all-zero mask on a null row_zp costs a
    // microcode assist (a quarter of a 1x1 conv's time, perf).
    if (t.row_zp)
      for (int r = 0; r < t.rows; ++r) zp_[r] = t.row_zp[r];
    lo_ = t.lo, hi_ = t.hi, zero_point_ = t.zero_point, has_zp_ = t.row_zp != nullptr;
  }
  int32_t add(int r) const { return add_[r]; }
  float scale(int r) const { return scale_[r]; }
  int32_t zp(int r) const { return zp_[r]; }
  bool has_zp() const { return has_zp_; }
  float lo() const { return lo_; }
  float hi() const { return hi_; }
  int32_t zero_point() const { return zero_point_; }
};

// The column sums of columns col..col+n-1 (n <= 8) where the rows have zero
// points, else zeros (unused).
__attribute__((target("avx2"), always_inline)) inline __m256i col_sums(const QRequantTile& t, int col, int n) {
  if (!t.row_zp) return _mm256_setzero_si256();
  if (n == 8) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.col_sum + col));
  alignas(32) int32_t part[8] = {};
  std::memcpy(part, t.col_sum + col, static_cast<size_t>(n) * sizeof(int32_t));
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(part));
}

// Eight int32 sums of one tile row (sums: their columns' sums), the output
// stage of QRequantTile fused: q_finish_avx2's operations lane for lane (so
// the same bits), as int32 values inside the output range.
template <class Rows>
__attribute__((target("avx2"), always_inline)) inline __m256i requant_values(__m256i v, int r, __m256i sums,
                                                                             const Rows& k) {
  v = _mm256_add_epi32(v, _mm256_set1_epi32(k.add(r)));
  if (k.has_zp()) v = _mm256_sub_epi32(v, _mm256_mullo_epi32(_mm256_set1_epi32(k.zp(r)), sums));
  __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_set1_ps(k.scale(r)));
  f = _mm256_min_ps(_mm256_max_ps(f, _mm256_set1_ps(k.lo())), _mm256_set1_ps(k.hi()));
  return _mm256_add_epi32(_mm256_cvtps_epi32(f), _mm256_set1_epi32(k.zero_point()));
}

// requant_values of one row, columns col..col+n-1 (n: 1 to 8) stored.
__attribute__((target("avx2"), always_inline)) inline void requant8(__m256i v, int r, int col, int n,
                                                                     const QRequantTile& t) {
  const __m256i q = requant_values(v, r, col_sums(t, col, n), TileRows{t});
  // The value is inside the output range (-128 to 255), so narrowing to
  // int16 is exact and keeping each word's low byte (PSHUFB) is the uint8 or
  // int8 byte alike, as AVX-512's VPMOVDB truncation.
  uint8_t* out = t.y + r * t.ldy + col;
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  const __m128i bytes = _mm_shuffle_epi8(w, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1));
  if (n == 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), bytes);
  } else {
    alignas(16) uint8_t part[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(part), bytes);
    std::memcpy(out, part, static_cast<size_t>(n));
  }
}

// requant8 on all four rows and eight columns at once (sums: the columns'
// sums), into out + r * ldy: the same bytes, with the narrowing shared (2
// VPACKSSDW, 1 VPACKUSWB and 1 VPERMD for the four rows, where requant8
// spends 3 shuffles per row). The epilogue's shuffles bound it, and at K = 64
// (resnet18's first downsample) it was a quarter of the kernel's time (perf).
template <class Rows>
__attribute__((target("avx2"), always_inline)) inline void requant8x4(const __m256i (&v)[kMr], __m256i sums,
                                                                       const Rows& k, uint8_t* out, int64_t ldy) {
  const __m256i q0 = requant_values(v[0], 0, sums, k), q1 = requant_values(v[1], 1, sums, k);
  const __m256i q2 = requant_values(v[2], 2, sums, k), q3 = requant_values(v[3], 3, sums, k);
  // int16 words (exact: the values lie in [-128, 255]), then each word's low
  // byte: masked to 0..255, VPACKUSWB keeps it as it is. Per 128-bit lane the
  // dwords come out as rows 0-3 of columns 0-3 (low lane) and 4-7 (high).
  const __m256i low = _mm256_set1_epi16(0x00FF);
  const __m256i w01 = _mm256_and_si256(_mm256_packs_epi32(q0, q1), low);
  const __m256i w23 = _mm256_and_si256(_mm256_packs_epi32(q2, q3), low);
  const __m256i rows = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(w01, w23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  const __m128i r01 = _mm256_castsi256_si128(rows), r23 = _mm256_extracti128_si256(rows, 1);
  // MOVQ and MOVHPS: unaligned stores (GCC's _mm_storeh_pd is a plain
  // double store, undefined at an odd address, which UBSan reports).
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), r01);
  _mm_storeh_pi(reinterpret_cast<__m64*>(out + ldy), _mm_castsi128_ps(r01));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 2 * ldy), r23);
  _mm_storeh_pi(reinterpret_cast<__m64*>(out + 3 * ldy), _mm_castsi128_ps(r23));
}

// requant8x4 of a whole tile's columns col..col+7, its constants read from t.
__attribute__((target("avx2"), always_inline)) inline void requant8x4(const __m256i (&v)[kMr], int col,
                                                                       const QRequantTile& t) {
  requant8x4(v, col_sums(t, col, 8), TileRows{t}, t.y + col, t.ldy);
}

// How a fused kernel reads A: bytes into the pairs kernel, bytes widened as
// they are used, or int16 widened at packing time (with B's bytes widened as
// used, or B as well widened when packed: WideBoth).
enum class AForm { Pairs, Bytes, Wide, WideBoth };

// The first N (1 to 4) columns of a B panel widened when packed, against an
// A panel widened when packed (WideBoth), with the output stage fused. A map
// of 7 x 7 or 14 x 14 pixels (49, 196 columns) ends in a panel of 1 or 4
// valid columns, which the 8-column half of the widening kernel computed as
// 8. Here the roles turn: per group of four k one load of A's 4 x 4 int16
// and, per column, its four int16 in every 64-bit lane (VPBROADCASTQ from
// memory), then one VPMADDWD: N multiplies where the half spent 8. The int32
// sums are the same (pairs of int16 products, added up modulo 2^32 in any
// order), so the bits are the half's.
template <int N>
__attribute__((target("avx2"))) void requant_narrow(int64_t groups, const uint8_t* a, const uint8_t* b,
                                                    const QRequantTile& t, int col) {
  static_assert(N >= 1 && N <= 4 && kMr == 4);
  __m256i acc[N];
#pragma GCC unroll 4
  for (int c = 0; c < N; ++c) acc[c] = _mm256_setzero_si256();
  const QDirectB w = b_walk(groups, 2 * kQNr * kQKGroup, t.direct);
  for (int64_t tap = 0; tap < w.taps; ++tap) {
    for (int64_t q = 0, o = w.tap_off[tap]; q < w.quads; ++q, o += w.quad_pitch) {
      // Row r's four k at a + 8 r: lanes (r, k0 k1), (r, k2 k3) after VPMADDWD.
      const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
#pragma GCC unroll 4
      for (int c = 0; c < N; ++c)
        acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(av, broadcast_words(b + o + 8 * c)));
      a += kMr * a_row_bytes(true);
    }
  }
  // Column c of row r: lanes 2r and 2r + 1 of acc[c], added as uint32 (wraps).
  alignas(32) uint32_t lanes[N][8];
  alignas(32) int32_t tile[kMr][8] = {};
#pragma GCC unroll 4
  for (int c = 0; c < N; ++c) _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[c]), acc[c]);
  for (int r = 0; r < kMr; ++r)
    for (int c = 0; c < N; ++c) tile[r][c] = static_cast<int32_t>(lanes[c][2 * r] + lanes[c][2 * r + 1]);
  for (int r = 0; r < t.rows; ++r)
    requant8(_mm256_load_si256(reinterpret_cast<const __m256i*>(tile[r])), r, col, N, t);
}

// The a_signed pairs kernel's 4 x 16 tile over B's walk w from b (A at a):
// row r's sums of columns 0-7 in lo[r], 8-15 in hi[r].
__attribute__((target("avx2"), always_inline)) inline void pairs_tile(const QDirectB& w, const uint8_t* a,
                                                                       const uint8_t* b, __m256i (&lo)[kMr],
                                                                       __m256i (&hi)[kMr]) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  for (int64_t tap = 0; tap < w.taps; ++tap) {
    for (int64_t q = 0, o = w.tap_off[tap]; q < w.quads; ++q, o += w.quad_pitch) {
      const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + o));
      const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + o + 32));
      pairs_row<false>(a, b0, b1, ones, c00, c01);
      pairs_row<false>(a + 4, b0, b1, ones, c10, c11);
      pairs_row<false>(a + 8, b0, b1, ones, c20, c21);
      pairs_row<false>(a + 12, b0, b1, ones, c30, c31);
      // Pinned, as in widening_half: inlined into a loop over tiles, GCC 12
      // added products into fresh registers and copied them back (and
      // spilled two accumulators).
      __asm__("" : "+x"(c00), "+x"(c01), "+x"(c10), "+x"(c11), "+x"(c20), "+x"(c21), "+x"(c30), "+x"(c31));
      a += kMr * kQKGroup;
    }
  }
  lo[0] = c00, lo[1] = c10, lo[2] = c20, lo[3] = c30;
  hi[0] = c01, hi[1] = c11, hi[2] = c21, hi[3] = c31;
}

// The first N (1 to 3) columns of a B panel on the pairs kernel, with the
// output stage fused. A map of 7 x 7 pixels (49 columns) ends in a panel of
// one column, which the half tile computed as 8. Here the roles turn: per
// group of four k one load of A's 4 x 4 bytes and, per column, its four
// bytes in every 32-bit lane, then VPMADDUBSW (the column's u8 first) and
// VPMADDWD by ones: row r's sum in lane r, N x 3 operations on 128-bit
// vectors where the half spent 12 on 256-bit ones. The same pairs of k
// summed into int16 (exact on bounded weights), then into int32: the bits
// of the half.
template <int N>
__attribute__((target("avx2"))) void requant_narrow_pairs(int64_t groups, const uint8_t* a, const uint8_t* b,
                                                          const QRequantTile& t, int col) {
  static_assert(N >= 1 && N <= 3 && kMr == 4);
  const __m128i ones = _mm_set1_epi16(1);
  __m128i acc[N];
#pragma GCC unroll 3
  for (int c = 0; c < N; ++c) acc[c] = _mm_setzero_si128();
  const QDirectB w = b_walk(groups, kQNr * kQKGroup, t.direct);
  for (int64_t tap = 0; tap < w.taps; ++tap) {
    for (int64_t q = 0, o = w.tap_off[tap]; q < w.quads; ++q, o += w.quad_pitch) {
      const __m128i av = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
#pragma GCC unroll 3
      for (int c = 0; c < N; ++c) {
        int32_t word;
        std::memcpy(&word, b + o + 4 * c, 4);
        acc[c] = _mm_add_epi32(acc[c], _mm_madd_epi16(_mm_maddubs_epi16(_mm_set1_epi32(word), av), ones));
      }
      a += kMr * kQKGroup;
    }
  }
  alignas(16) int32_t lanes[N][4];
  alignas(32) int32_t tile[kMr][8] = {};
#pragma GCC unroll 3
  for (int c = 0; c < N; ++c) _mm_store_si128(reinterpret_cast<__m128i*>(lanes[c]), acc[c]);
  for (int r = 0; r < kMr; ++r)
    for (int c = 0; c < N; ++c) tile[r][c] = lanes[c][r];
  for (int r = 0; r < t.rows; ++r)
    requant8(_mm256_load_si256(reinterpret_cast<const __m256i*>(tile[r])), r, col, N, t);
}

// One B panel (16 columns) of the a_signed kernel of that form, with the
// output stage fused: columns col..col+cols-1 of the tile. The accumulators
// never leave the registers.
template <AForm kForm>
__attribute__((target("avx2"))) void requant_panel(int64_t groups, const uint8_t* a, const uint8_t* b,
                                                   const QRequantTile& t, int col, int cols) {
  if constexpr (kForm == AForm::Pairs) {
    const __m256i ones = _mm256_set1_epi16(1);
    switch (cols) {
      case 1: return requant_narrow_pairs<1>(groups, a, b, t, col);
      case 2: return requant_narrow_pairs<2>(groups, a, b, t, col);
      case 3: return requant_narrow_pairs<3>(groups, a, b, t, col);
      default: break;
    }
    const QDirectB w = b_walk(groups, kQNr * kQKGroup, t.direct);
    if (cols <= 8) {
      // A panel's last 4-8 columns: the first half of the tile only. Maps
      // of 14 x 14 pixels (196 columns) end in such a panel, which computed
      // all 16 columns: a quarter of the multiplies of resnet18's layer4
      // were wasted (before requant_narrow_pairs took its 7 x 7 maps' one).
      __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
      for (int64_t tap = 0; tap < w.taps; ++tap) {
        for (int64_t q = 0, o = w.tap_off[tap]; q < w.quads; ++q, o += w.quad_pitch) {
          const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + o));
          pairs_row_half(a, b0, ones, c0);
          pairs_row_half(a + 4, b0, ones, c1);
          pairs_row_half(a + 8, b0, ones, c2);
          pairs_row_half(a + 12, b0, ones, c3);
          a += kMr * kQKGroup;
        }
      }
      const __m256i v[kMr] = {c0, c1, c2, c3};
#pragma GCC unroll 4
      for (int r = 0; r < kMr; ++r)
        if (r < t.rows) requant8(v[r], r, col, cols, t);
      return;
    }
    __m256i lo[kMr], hi[kMr];
    pairs_tile(w, a, b, lo, hi);
    const int n0 = cols < 8 ? cols : 8, n1 = cols - 8;
    if (t.rows == kMr && cols == kQNr) {
      requant8x4(lo, col, t);
      requant8x4(hi, col + 8, t);
      return;
    }
#pragma GCC unroll 4
    for (int r = 0; r < kMr; ++r) {  // no early exit: unrolled, the accumulators stay in registers
      if (r >= t.rows) continue;
      requant8(lo[r], r, col, n0, t);
      if (n1 > 0) requant8(hi[r], r, col + 8, n1, t);
    }
    return;
  }
  if constexpr (kForm == AForm::WideBoth) {
    switch (cols) {
      case 1: return requant_narrow<1>(groups, a, b, t, col);
      case 2: return requant_narrow<2>(groups, a, b, t, col);
      case 3: return requant_narrow<3>(groups, a, b, t, col);
      case 4: return requant_narrow<4>(groups, a, b, t, col);
      default: break;
    }
  }
  // The widening kernel's two halves of 8 columns each (q8_gemm_avx2_4x16).
  for (int half = 0; half < 2 && 8 * half < cols; ++half) {
    __m256i v[kMr];
    widening_half<false, kForm == AForm::Wide || kForm == AForm::WideBoth, kForm == AForm::WideBoth>(groups, a, b, half,
                                                                                                     v, t.direct);
    const int n = cols - 8 * half < 8 ? cols - 8 * half : 8;
    if (t.rows == kMr && n == 8) {
      requant8x4(v, col + 8 * half, t);
      continue;
    }
#pragma GCC unroll 4
    for (int r = 0; r < kMr; ++r)
      if (r < t.rows) requant8(v[r], r, col + 8 * half, n, t);
  }
}

// QMicroKernelRequant: one or two B panels (b1 read only when t.cols > 16).
template <AForm kForm>
__attribute__((target("avx2"))) void q8_conv_requant_avx2(int64_t groups, const uint8_t* a, const uint8_t* b0,
                                                          const uint8_t* b1, const QRequantTile& t) {
  requant_panel<kForm>(groups, a, b0, t, 0, t.cols < kQNr ? t.cols : kQNr);
  if (t.cols > kQNr) requant_panel<kForm>(groups, a, b1, t, kQNr, t.cols - kQNr);
}

// QMicroKernelRequantRun of the pairs kernel: pairs_tile and requant8x4 on
// both panels of each tile, the walk and the rows' constants read once. At
// K = 64 (resnet18's first downsample) a call per tile, each reading them
// again after the previous tile's stores, was about a fifth of the layer.
__attribute__((target("avx2"))) void q8_conv_requant_pairs_run_avx2(int64_t groups, const uint8_t* a,
                                                                    const uint8_t* b, int64_t panel_bytes,
                                                                    int64_t tiles, const QRequantTile& t) {
  const QDirectB w = b_walk(groups, kQNr * kQKGroup, t.direct);
  const RowConsts consts(t);
  const RowConsts* kp = &consts;
  const int32_t* sum = t.col_sum;
  const int64_t ldy = t.ldy;
  uint8_t* y = t.y;
  for (int64_t i = 0; i < tiles; ++i) {
    for (int panel = 0; panel < 2; ++panel) {
      __m256i lo[kMr], hi[kMr];
      pairs_tile(w, a, b, lo, hi);
      // The constants read from memory here, tile by tile: hoisted out of
      // the loop, their 14 vectors pushed the accumulators out of the
      // registers (GCC 12 spilled two in the multiply-add loop).
      __asm__("" : "+r"(kp));
      const RowConsts& k = *kp;
      const bool zp = k.has_zp();
      requant8x4(lo, zp ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sum)) : _mm256_setzero_si256(), k, y, ldy);
      requant8x4(hi, zp ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sum + 8)) : _mm256_setzero_si256(), k,
                 y + 8, ldy);
      b += panel_bytes;
      y += kQNr;
      if (zp) sum += kQNr;
    }
  }
}

// One widened A row against one B panel. Per group of four k: the row's
// four int16 values in every 64-bit lane; the panel's 64 bytes (16 columns x
// 4 k) sign-extended to int16 four columns at a time (VPMOVSXBW); VPMADDWD
// then leaves two int32 partial sums per column (k0 + k1, k2 + k3), added up
// over the groups and pairwise at the end (VPHADDD). Products of int16 pairs
// fit int32, and int32 sums wrap alike in any order: the reference's bits.
// A row makes 1 / MR of the micro-kernel's multiply-adds useful and reads B
// once either way; here each weight byte costs three instructions.
__attribute__((target("avx2"))) void q8_row_avx2(int64_t groups, const uint8_t*, const int16_t* a, const uint8_t* b,
                                                 int32_t* out) {
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  for (int64_t g = 0; g < groups; ++g) {
    int64_t a4;
    std::memcpy(&a4, a + g * kQKGroup, sizeof(a4));
    const __m256i av = _mm256_set1_epi64x(a4);
    const uint8_t* bg = b + g * kQNr * kQKGroup;
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const __m256i bw = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bg + 16 * i)));
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(av, bw));
    }
  }
  // acc[i]: columns 4i..4i+3 as [c0 c0 c1 c1 | c2 c2 c3 c3]; VPHADDD of two
  // gives [c0 c1 c4 c5 | c2 c3 c6 c7], its 64-bit quarters reordered 0 2 1 3.
  const __m256i lo = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[0], acc[1]), 0xD8);
  const __m256i hi = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[2], acc[3]), 0xD8);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), lo);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8), hi);
}

}  // namespace

__attribute__((target("avx2"))) void q_finish_avx2(const int32_t* acc, int64_t acc_stride, int64_t rows, int64_t cols,
                                                   int64_t i0, int64_t j0, const QOutput& o) {
  const QFinishParams fp = finish_params(o);
  const bool requant = fp.requant, per_channel = fp.per_channel;
  const int64_t full = !requant || o.vector_ok ? cols / 8 * 8 : 0;
  const Requantizer* r = o.requant;
  const __m256 lo = _mm256_set1_ps(static_cast<float>(fp.lo)), hi = _mm256_set1_ps(static_cast<float>(fp.hi));
  const __m256i zpv = _mm256_set1_epi32(fp.zero_point);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t gi = i0 + i;
    const int32_t* src = acc + i * acc_stride;
    const __m256i row_add = _mm256_set1_epi32(o.row_add ? o.row_add[gi] : 0);
    const __m256i row_zp = _mm256_set1_epi32(o.row_zp ? o.row_zp[gi] : 0);
    const __m256i row_sum = _mm256_set1_epi32(o.row_sum ? o.row_sum[gi] : 0);
    __m256 scale = _mm256_setzero_ps();
    if (requant && (o.channel_is_row || !per_channel) && o.vector_ok)
      scale = _mm256_set1_ps(r->scale[per_channel ? static_cast<size_t>(gi) : 0]);
    for (int64_t j = 0; j < full; j += 8) {
      const int64_t gj = j0 + j;
      __m256i v = _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + j)), row_add);
      if (o.col_add) v = _mm256_add_epi32(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(o.col_add + gj)));
      if (o.row_zp)
        v = _mm256_sub_epi32(v, _mm256_mullo_epi32(row_zp, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(o.col_sum + gj))));
      if (o.row_sum)
        v = _mm256_sub_epi32(v, _mm256_mullo_epi32(row_sum, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(o.col_zp + gj))));
      if (!requant) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(static_cast<int32_t*>(o.y) + gi * o.ldy + gj), v);
        continue;
      }
      // requantize_one's Float mode: float(acc) * M, clamped to the output
      // range less the zero point, rounded half to even (VCVTPS2DQ under the
      // default MXCSR rounding, as std::nearbyint), plus the zero point.
      const __m256 s = (per_channel && !o.channel_is_row) ? _mm256_loadu_ps(r->scale.data() + gj) : scale;
      __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), s);
      f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
      const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(f), zpv);
      if (o.type == QOutType::U8)
        store8<true>(q, static_cast<uint8_t*>(o.y) + gi * o.ldy + gj);
      else
        store8<false>(q, static_cast<int8_t*>(o.y) + gi * o.ldy + gj);
    }
    for (int64_t j = full; j < cols; ++j) q_finish_one(static_cast<uint32_t>(src[j]), gi, j0 + j, o);
  }
}

namespace {

// widen_q_panels, sign-extending, 16 bytes per VPMOVSXBW.
__attribute__((target("avx2"))) void widen_panel_avx2(const uint8_t* bytes, int64_t count, int16_t* out) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + i))));
  for (; i < count; ++i) out[i] = static_cast<int16_t>(static_cast<int8_t>(bytes[i]));
}

const QGemmIsa kAvx2{"avx2",
                     kMr,
                     q8_gemm_avx2_4x16<true, false>,
                     q8_gemm_avx2_4x16<false, false>,
                     q_finish_avx2,
                     nullptr,
                     q8_conv_requant_avx2<AForm::Bytes>,
                     q8_gemm_avx2_pairs_4x16<true>,
                     q8_gemm_avx2_pairs_4x16<false>,
                     q8_conv_requant_avx2<AForm::Pairs>,
                     q8_gemm_avx2_4x16<false, true>,
                     q8_conv_requant_avx2<AForm::Wide>,
                     q8_gemm_avx2_4x16<true, true>,
                     q8_conv_requant_avx2<AForm::WideBoth>,
                     q8_row_avx2,
                     false,
                     q8_conv_requant_pairs_run_avx2,
                     false,
                     widen_panel_avx2};
}  // namespace

const QGemmIsa* const kQGemmIsaAvx2 = &kAvx2;

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
const QGemmIsa* const kQGemmIsaAvx2 = nullptr;
}  // namespace quant::kernels::detail

#endif
