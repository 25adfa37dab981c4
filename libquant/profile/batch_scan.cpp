#include "libquant/profile/batch_scan.h"
#include "libquant/kernels/cpu.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace quant::profile {
namespace {

constexpr int kLanes = 8;

// -0 and +0 compare equal; report +0 whichever the scan met first.
float canonical_zero(float v) { return v == 0 ? 0.0f : v; }

// The scalar step shared by the portable scan and the AVX2 tail: lane `lane`.
struct ScalarScan {
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
  double lanes[kLanes] = {};
  uint64_t nan = 0, inf = 0;

  void step(float v, int lane) {
    if (std::isnan(v)) {
      ++nan;
    } else if (std::isinf(v)) {
      ++inf;
    } else {
      min = std::min(min, v);
      max = std::max(max, v);
      lanes[lane] += v;
    }
  }
  BatchStats finish(int64_t n) const {
    BatchStats s;
    s.min = canonical_zero(min);
    s.max = canonical_zero(max);
    s.sum = combine_lanes(lanes);
    s.nan = nan;
    s.inf = inf;
    s.finite = static_cast<uint64_t>(n) - nan - inf;
    return s;
  }
};

// y of scan_batch_clamped: std::max(v, lo) returns v unless v < lo (a NaN
// stays), std::min likewise; clamp_f32's max-then-min, and Relu's
// v < 0 ? 0 : v for lo = 0.
inline float clip(float v, float lo, float hi) { return std::min(std::max(v, lo), hi); }

// Bin of one finite value: floor(v * 2^-e) in double is exact (a power-of-two
// scaling of a float stays far inside double's range). The cell leaves int64's
// range only for a value far outside the lattice (a block that widens the range
// is counted again on the wider lattice), so the distance to `first` is taken
// and clamped in double: the same bin as the integer arithmetic wherever that
// is defined (cells and `first` are integers below 2^53), the edge bin beyond.
inline int64_t bin_of(float v, double scale, int64_t first, int64_t last) {
  const double d = std::floor(static_cast<double>(v) * scale) - static_cast<double>(first);
  if (!(d > 0)) return 0;
  return d >= static_cast<double>(last) ? last : static_cast<int64_t>(d);
}

constexpr int64_t kCellLimit = int64_t{1} << 26;

#if defined(__x86_64__)
// The end of a vector scan_block pass: the values from i on (fewer than a
// vector) one at a time after the vector part's state in `tail`, the lanes
// handed back, the block's statistics (its sum left in the lanes); with
// `clamp`, the clamped values added to its lanes, which hold the vector part's.
BlockScan finish_block(ScalarScan& tail, const float* x, int64_t i, int64_t n, const BinLattice& lat, bool bins,
                       int32_t* cold_bins, int64_t cold, uint64_t hot, double* lanes, const ClampSum* clamp) {
  const double scale_d = std::ldexp(1.0, -lat.e);
  for (; i < n; ++i) {
    const float v = x[i];
    tail.step(v, static_cast<int>(i % kLanes));
    if (clamp && std::isfinite(v)) clamp->lanes[i % kLanes] += clip(v, clamp->lo, clamp->hi);
    if (bins && std::isfinite(v)) {
      const int32_t bin = static_cast<int32_t>(bin_of(v, scale_d, lat.first, lat.bins - 1));
      if (lat.count_hot && bin == lat.hot)
        ++hot;
      else
        cold_bins[cold++] = bin;
    }
  }
  std::copy(tail.lanes, tail.lanes + kLanes, lanes);
  BlockScan out;
  out.stats = tail.finish(n);
  out.stats.sum = 0;
  out.cold = cold;
  out.hot = hot;
  return out;
}

// A vector scan_block pass unchecked first: a NaN or Inf in the vector part
// makes a lane sum NaN or Inf for good (finite floats cannot overflow a double
// sum), and then the block is scanned again, checked, from the lanes it
// started with (and the clamped values' lanes too, with `clamp`).
// `pass(std::bool_constant<kChecked>)` runs one pass.
template <class Pass>
BlockScan unchecked_first(double* lanes, const ClampSum* clamp, Pass pass) {
  double start[kLanes], y_start[kLanes] = {};
  std::copy(lanes, lanes + kLanes, start);
  if (clamp) std::copy(clamp->lanes, clamp->lanes + kLanes, y_start);
  const BlockScan fast = pass(std::false_type{});
  if (std::all_of(lanes, lanes + kLanes, [](double l) { return std::isfinite(l); })) return fast;
  std::copy(start, start + kLanes, lanes);
  if (clamp) std::copy(y_start, y_start + kLanes, clamp->lanes);
  return pass(std::true_type{});
}

bool cpu_has_avx2() { return kernels::cpu_supports("avx2") && kernels::cpu_supports("fma"); }

__attribute__((target("avx2,fma"))) BatchStats scan_batch_avx2(const float* x, int64_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i largest_finite = _mm256_set1_epi32(0x7f7fffff);  // bits above it: Inf, NaN
  const __m256i inf_bits = _mm256_set1_epi32(0x7f800000);
  const __m256 pos_inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 vmin = pos_inf, vmax = neg_inf;
  __m256d acc_lo = _mm256_setzero_pd(), acc_hi = _mm256_setzero_pd();  // lanes 0-3, 4-7
  uint64_t nan = 0, inf = 0;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    __m256 v = _mm256_loadu_ps(x + i);
    const __m256i abs = _mm256_and_si256(_mm256_castps_si256(v), abs_mask);
    const __m256i bad = _mm256_cmpgt_epi32(abs, largest_finite);
    if (!_mm256_testz_si256(bad, bad)) {  // rare: leave NaN/Inf out of min, max and sum
      const unsigned bad_bits = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(bad)));
      const unsigned nan_bits =
          static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(abs, inf_bits))));
      nan += static_cast<uint64_t>(__builtin_popcount(nan_bits));
      inf += static_cast<uint64_t>(__builtin_popcount(bad_bits & ~nan_bits));
      const __m256 bad_ps = _mm256_castsi256_ps(bad);
      v = _mm256_andnot_ps(bad_ps, v);  // +0 adds nothing to a lane
      vmin = _mm256_min_ps(vmin, _mm256_blendv_ps(v, pos_inf, bad_ps));
      vmax = _mm256_max_ps(vmax, _mm256_blendv_ps(v, neg_inf, bad_ps));
    } else {
      vmin = _mm256_min_ps(vmin, v);
      vmax = _mm256_max_ps(vmax, v);
    }
    acc_lo = _mm256_add_pd(acc_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    acc_hi = _mm256_add_pd(acc_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  ScalarScan tail;
  alignas(32) float mins[kLanes], maxs[kLanes];
  _mm256_store_ps(mins, vmin);
  _mm256_store_ps(maxs, vmax);
  for (int k = 0; k < kLanes; ++k) {
    tail.min = std::min(tail.min, mins[k]);
    tail.max = std::max(tail.max, maxs[k]);
  }
  _mm256_storeu_pd(tail.lanes, acc_lo);
  _mm256_storeu_pd(tail.lanes + 4, acc_hi);
  tail.nan = nan;
  tail.inf = inf;
  for (int lane = 0; i < n; ++i, ++lane) tail.step(x[i], lane);
  return tail.finish(n);
}

// Increments go to 4 interleaved copies of the bins when the tensor is large:
// activations after Relu put long runs of values into one bin, and back-to-back
// increments of one counter wait for each other's store.
constexpr int kCopies = 4;
constexpr int64_t kFlushEvery = int64_t{1} << 30;  // a uint32 copy sees at most this many increments

__attribute__((target("avx2,fma"))) void count_cells_avx2(const float* x, int64_t n, int e, int64_t first,
                                                          uint64_t* counts, int bins) {
  const int64_t last = bins - 1;
  const double scale_d = std::ldexp(1.0, -e);
  const __m256 scale = _mm256_set1_ps(std::ldexp(1.0f, -e));  // a normal float: checked by the caller
  const __m256i first_v = _mm256_set1_epi32(static_cast<int32_t>(first));
  const __m256i last_v = _mm256_set1_epi32(static_cast<int32_t>(last));
  const __m256i zero_i = _mm256_setzero_si256();
  const __m256 zero = _mm256_setzero_ps();
  const __m256 minus_one = _mm256_set1_ps(-1.0f);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i largest_finite = _mm256_set1_epi32(0x7f7fffff);

  const bool copies = n >= int64_t{8} * bins && bins <= (1 << 16);
  thread_local std::vector<uint32_t> scratch;
  const size_t stride = static_cast<size_t>(bins);
  if (copies) scratch.assign(kCopies * stride, 0);
  auto flush = [&] {
    for (size_t b = 0; b < stride; ++b)
      counts[b] += uint64_t{scratch[b]} + scratch[stride + b] + scratch[2 * stride + b] + scratch[3 * stride + b];
    std::fill(scratch.begin(), scratch.end(), 0u);
  };

  alignas(32) int32_t idx[kLanes];
  int64_t i = 0, since_flush = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256i abs = _mm256_and_si256(_mm256_castps_si256(v), abs_mask);
    const __m256i bad = _mm256_cmpgt_epi32(abs, largest_finite);
    if (!_mm256_testz_si256(bad, bad)) {
      for (int k = 0; k < kLanes; ++k)
        if (std::isfinite(x[i + k])) counts[bin_of(x[i + k], scale_d, first, last)]++;
      continue;
    }
    // v * 2^-e is exact in float unless it underflows (|v * 2^-e| < 2^25 by the
    // precondition); an underflow to -0 would floor to 0 where the true cell of a
    // negative value is -1, and only there, so those lanes are set to -1.
    __m256 cell = _mm256_floor_ps(_mm256_mul_ps(v, scale));
    const __m256 negative_to_zero = _mm256_and_ps(_mm256_cmp_ps(v, zero, _CMP_LT_OQ), _mm256_cmp_ps(cell, zero, _CMP_EQ_OQ));
    cell = _mm256_blendv_ps(cell, minus_one, negative_to_zero);
    __m256i bin = _mm256_sub_epi32(_mm256_cvttps_epi32(cell), first_v);
    bin = _mm256_min_epi32(_mm256_max_epi32(bin, zero_i), last_v);
    // Relu/Relu6 outputs hold long runs of exact 0 (or 6): 8 values in one bin
    // are one increment by 8 instead of 8 dependent increments.
    const __m256i same = _mm256_cmpeq_epi32(bin, _mm256_permutevar8x32_epi32(bin, zero_i));
    if (_mm256_movemask_epi8(same) == -1) {
      counts[_mm256_cvtsi256_si32(bin)] += kLanes;
      continue;
    }
    _mm256_store_si256(reinterpret_cast<__m256i*>(idx), bin);
    if (copies) {
      uint32_t* s = scratch.data();
      for (int k = 0; k < kLanes; ++k) s[static_cast<size_t>(k % kCopies) * stride + static_cast<size_t>(idx[k])]++;
      if ((since_flush += kLanes) >= kFlushEvery) {
        flush();
        since_flush = 0;
      }
    } else {
      for (int k = 0; k < kLanes; ++k) counts[idx[k]]++;
    }
  }
  if (copies) flush();
  for (; i < n; ++i)
    if (std::isfinite(x[i])) counts[bin_of(x[i], scale_d, first, last)]++;
}

// AVX2 has no VPCOMPRESSD: a block's cold bins are left-packed by a
// VPERMD whose indices come from this table, for each 8-bit mask the
// positions of its set bits, lowest first, one per nibble.
constexpr std::array<uint32_t, 256> make_pack_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t m = 0; m < 256; ++m) {
    uint32_t packed = 0, k = 0;
    for (uint32_t b = 0; b < 8; ++b)
      if (m & (1u << b)) packed |= b << (4 * k++);
    t[m] = packed;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kPackTable = make_pack_table();

// scan_block_avx512's pass (below) 8 values at a time: the statistics as
// scan_batch_avx2 takes them, the bins as count_cells_avx2 computes them
// (floor, then the fix-up of a negative value whose cell underflows to -0),
// the bin of 0 counted and the others left-packed through kPackTable; with
// kClamp, the clamped values summed as scan_batch_clamped sums them. kHot is
// lat.count_hot; kUpper false when the upper bound is +inf (Relu), where
// min(+inf, y) is y for every y, NaN included, and is left out.
template <bool kBins, bool kChecked, bool kClamp, bool kHot, bool kUpper>
__attribute__((target("avx2,fma,popcnt"))) BlockScan scan_block_avx2_pass(const float* x, int64_t n, double* lanes,
                                                                          const BinLattice& lat, int32_t* cold_bins,
                                                                          const ClampSum* clamp) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i largest_finite = _mm256_set1_epi32(0x7f7fffff);
  const __m256i inf_bits = _mm256_set1_epi32(0x7f800000);
  const __m256 pos_inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256 zero = _mm256_setzero_ps();
  const __m256 minus_one = _mm256_set1_ps(-1.0f);
  const __m256 scale = _mm256_set1_ps(kBins ? std::ldexp(1.0f, -lat.e) : 1.0f);
  const __m256i first_v = _mm256_set1_epi32(static_cast<int32_t>(lat.first));
  const __m256i hot_v = _mm256_set1_epi32(lat.hot);
  const __m256i nibble_shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m256i seven = _mm256_set1_epi32(7);
  const bool may_underflow = lat.e >= 1;  // as in scan_block_avx512
  __m256 vmin = pos_inf, vmax = neg_inf;
  __m256d acc_lo = _mm256_loadu_pd(lanes), acc_hi = _mm256_loadu_pd(lanes + 4);
  const __m256d vlo = _mm256_set1_pd(kClamp ? clamp->lo : 0.0), vhi = _mm256_set1_pd(kClamp ? clamp->hi : 0.0);
  __m256d y_lo = _mm256_setzero_pd(), y_hi = _mm256_setzero_pd();  // lanes 0-3, 4-7
  if constexpr (kClamp) y_lo = _mm256_loadu_pd(clamp->lanes), y_hi = _mm256_loadu_pd(clamp->lanes + 4);
  uint64_t nan = 0, inf = 0, hot = 0;
  int64_t cold = 0, i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    __m256 v = _mm256_loadu_ps(x + i);
    unsigned good = 0xff;
    if constexpr (kChecked) {
      const __m256i abs = _mm256_and_si256(_mm256_castps_si256(v), abs_mask);
      const __m256i bad = _mm256_cmpgt_epi32(abs, largest_finite);
      if (!_mm256_testz_si256(bad, bad)) {
        const unsigned bad_bits = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(bad)));
        const unsigned nan_bits =
            static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(abs, inf_bits))));
        nan += static_cast<uint64_t>(__builtin_popcount(nan_bits));
        inf += static_cast<uint64_t>(__builtin_popcount(bad_bits & ~nan_bits));
        good = ~bad_bits & 0xffu;
        const __m256 bad_ps = _mm256_castsi256_ps(bad);
        v = _mm256_andnot_ps(bad_ps, v);  // +0 adds nothing to a lane
        vmin = _mm256_min_ps(vmin, _mm256_blendv_ps(v, pos_inf, bad_ps));
        vmax = _mm256_max_ps(vmax, _mm256_blendv_ps(v, neg_inf, bad_ps));
      } else {
        vmin = _mm256_min_ps(vmin, v);
        vmax = _mm256_max_ps(vmax, v);
      }
    } else {
      vmin = _mm256_min_ps(vmin, v);
      vmax = _mm256_max_ps(vmax, v);
    }
    // Unchecked, the halves are converted straight from memory: VCVTPS2PD
    // from a register takes the shuffle port, which the bins below need.
    const __m256d d_lo = _mm256_cvtps_pd(kChecked ? _mm256_castps256_ps128(v) : _mm_loadu_ps(x + i));
    const __m256d d_hi = _mm256_cvtps_pd(kChecked ? _mm256_extractf128_ps(v, 1) : _mm_loadu_ps(x + i + 4));
    acc_lo = _mm256_add_pd(acc_lo, d_lo);
    acc_hi = _mm256_add_pd(acc_hi, d_hi);
    if constexpr (kClamp) {
      // y = min(max(x, lo), hi) in double: x converts exactly, so this is the
      // float clamp's value, which converts exactly too (max then min, x
      // second: a NaN passes, as clip() lets it).
      const __m256d c_lo = _mm256_max_pd(vlo, d_lo), c_hi = _mm256_max_pd(vlo, d_hi);
      y_lo = _mm256_add_pd(y_lo, kUpper ? _mm256_min_pd(vhi, c_lo) : c_lo);
      y_hi = _mm256_add_pd(y_hi, kUpper ? _mm256_min_pd(vhi, c_hi) : c_hi);
    }
    if constexpr (kBins) {
      // Bins not clamped to [0, bins): used only when the block lies in the
      // lattice's range (scan_block's contract).
      __m256 cell = _mm256_floor_ps(_mm256_mul_ps(v, scale));
      if (may_underflow) {
        const __m256 negative_to_zero =
            _mm256_and_ps(_mm256_cmp_ps(v, zero, _CMP_LT_OQ), _mm256_cmp_ps(cell, zero, _CMP_EQ_OQ));
        cell = _mm256_blendv_ps(cell, minus_one, negative_to_zero);
      }
      const __m256i bin = _mm256_sub_epi32(_mm256_cvttps_epi32(cell), first_v);
      unsigned is_hot = 0;
      if constexpr (kHot)
        is_hot = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(bin, hot_v))));
      if (is_hot == 0 && good == 0xffu) {
        // Every value cold (most steps outside a Relu's output): stored as
        // they are, no counting beyond the step's 8.
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(cold_bins + cold), bin);
        cold += kLanes;
        continue;
      }
      const unsigned is_cold = ~is_hot & good;
      const int cold_here = __builtin_popcount(is_cold);
      hot += static_cast<uint64_t>(__builtin_popcount(good) - cold_here);
      if (cold_here) {
        const __m256i perm =
            _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int32_t>(kPackTable[is_cold])), nibble_shifts),
                             seven);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(cold_bins + cold), _mm256_permutevar8x32_epi32(bin, perm));
        cold += cold_here;
      }
    }
  }
  ScalarScan tail;  // the last n % 8 values, added to the lanes in index order
  _mm256_storeu_pd(tail.lanes, acc_lo);
  _mm256_storeu_pd(tail.lanes + 4, acc_hi);
  alignas(32) float mins[kLanes], maxs[kLanes];
  _mm256_store_ps(mins, vmin);
  _mm256_store_ps(maxs, vmax);
  for (int k = 0; k < kLanes; ++k) {
    tail.min = std::min(tail.min, mins[k]);
    tail.max = std::max(tail.max, maxs[k]);
  }
  tail.nan = nan;
  tail.inf = inf;
  if constexpr (kClamp) _mm256_storeu_pd(clamp->lanes, y_lo), _mm256_storeu_pd(clamp->lanes + 4, y_hi);
  return finish_block(tail, x, i, n, lat, kBins, cold_bins, cold, hot, lanes, clamp);
}

bool cpu_has_avx512() { return kernels::cpu_supports("avx512f"); }

// scan_batch_avx2's statistics and count_cells_avx2's bins in one pass, 16
// values at a time. kChecked masks NaN/Inf lanes out of everything; without it
// the loop assumes there are none (the caller checks the sums afterwards).
// GCC 12 warns inside its own AVX-512 headers (their _mm512_undefined_* sources).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
template <bool kBins, bool kChecked, bool kClamp, bool kHot, bool kUpper>
__attribute__((target("avx512f,popcnt"))) BlockScan scan_block_avx512(const float* x, int64_t n, double* lanes,
                                                                       const BinLattice& lat, int32_t* cold_bins,
                                                                       const ClampSum* clamp) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i largest_finite = _mm512_set1_epi32(0x7f7fffff);
  const __m512i inf_bits = _mm512_set1_epi32(0x7f800000);
  const __m512 zero = _mm512_setzero_ps();
  const __m512 scale = _mm512_set1_ps(kBins ? std::ldexp(1.0f, -lat.e) : 1.0f);
  const __m512i first_v = _mm512_set1_epi32(static_cast<int32_t>(lat.first));
  const __m512i minus_one = _mm512_set1_epi32(-1);
  const __m512i zero_i = _mm512_setzero_si512();
  const __m512i hot_v = _mm512_set1_epi32(lat.hot);
  // A nonzero float (|v| >= 2^-149) times 2^-e rounds to 0 only at or below
  // 2^-150, so only for e >= 1: activations' lattices (e < 0) skip the fix-up below.
  const bool may_underflow = lat.e >= 1;
  __m512 vmin = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  __m512 vmax = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512d acc = _mm512_loadu_pd(lanes);
  const __m512d vlo = _mm512_set1_pd(kClamp ? clamp->lo : 0.0), vhi = _mm512_set1_pd(kClamp ? clamp->hi : 0.0);
  __m512d yacc = kClamp ? _mm512_loadu_pd(clamp->lanes) : _mm512_setzero_pd();
  uint64_t nan = 0, inf = 0, hot = 0;
  int64_t cold = 0, i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    __mmask16 good = 0xffff;
    if constexpr (kChecked) {
      const __m512i abs = _mm512_and_si512(_mm512_castps_si512(v), abs_mask);
      const __mmask16 bad = _mm512_cmpgt_epi32_mask(abs, largest_finite);
      if (bad) {
        const unsigned nan_bits = _mm512_cmpgt_epi32_mask(abs, inf_bits);
        nan += static_cast<uint64_t>(__builtin_popcount(nan_bits));
        inf += static_cast<uint64_t>(__builtin_popcount(bad & ~nan_bits & 0xffffu));
      }
      good = static_cast<__mmask16>(~bad);
      v = _mm512_maskz_mov_ps(good, v);  // +0 adds nothing to a lane
      vmin = _mm512_mask_min_ps(vmin, good, vmin, v);
      vmax = _mm512_mask_max_ps(vmax, good, vmax, v);
    } else {
      vmin = _mm512_min_ps(vmin, v);
      vmax = _mm512_max_ps(vmax, v);
    }
    // Elements i..i+7 to lanes 0-7, then i+8..i+15 to the same lanes: each lane
    // adds its elements in index order, as the portable scan does. Unchecked,
    // both halves are converted straight from memory (no shuffle, no extract).
    const __m512d d_lo = _mm512_cvtps_pd(kChecked ? _mm512_castps512_ps256(v) : _mm256_loadu_ps(x + i));
    const __m512d d_hi = _mm512_cvtps_pd(
        kChecked ? _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)) : _mm256_loadu_ps(x + i + 8));
    acc = _mm512_add_pd(acc, d_lo);
    acc = _mm512_add_pd(acc, d_hi);
    if constexpr (kClamp) {
      // As scan_block_avx2_pass: the clamp in double, max then min, x second.
      const __m512d c_lo = _mm512_maskz_max_pd(0xFF, vlo, d_lo), c_hi = _mm512_maskz_max_pd(0xFF, vlo, d_hi);
      yacc = _mm512_add_pd(yacc, kUpper ? _mm512_maskz_min_pd(0xFF, vhi, c_lo) : c_lo);
      yacc = _mm512_add_pd(yacc, kUpper ? _mm512_maskz_min_pd(0xFF, vhi, c_hi) : c_hi);
    }
    if constexpr (kBins) {
      // floor(v * 2^-e) in one conversion rounding down (exact: |v * 2^-e| < 2^25).
      // The bins are not clamped to [0, bins): the caller uses them only when
      // the block lies inside the lattice's range, where they are in it already.
      __m512i cell = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v, scale), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
      if (may_underflow) {
        // As count_cells_avx2: a negative value whose scaled cell underflows to -0 is in cell -1.
        const __mmask16 negative_to_zero =
            _mm512_mask_cmpeq_epi32_mask(_mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), cell, zero_i);
        cell = _mm512_mask_mov_epi32(cell, negative_to_zero, minus_one);
      }
      const __m512i bin = _mm512_sub_epi32(cell, first_v);
      const __mmask16 is_cold = kHot ? _mm512_mask_cmpneq_epi32_mask(good, bin, hot_v) : good;
      if (is_cold == 0xffff) {  // every value cold: stored as they are (as scan_block_avx2_pass)
        _mm512_storeu_si512(cold_bins + cold, bin);
        cold += 16;
        continue;
      }
      const int cold_here = __builtin_popcount(is_cold);
      hot += static_cast<uint64_t>(__builtin_popcount(good) - cold_here);
      _mm512_storeu_si512(cold_bins + cold, _mm512_maskz_compress_epi32(is_cold, bin));
      cold += cold_here;
    }
  }
  ScalarScan tail;  // the last n % 16 values, added to the lanes in index order
  _mm512_storeu_pd(tail.lanes, acc);
  tail.min = _mm512_reduce_min_ps(vmin);
  tail.max = _mm512_reduce_max_ps(vmax);
  tail.nan = nan;
  tail.inf = inf;
  if constexpr (kClamp) _mm512_storeu_pd(clamp->lanes, yacc);
  return finish_block(tail, x, i, n, lat, kBins, cold_bins, cold, hot, lanes, clamp);
}

#pragma GCC diagnostic pop
#endif

}  // namespace

ClampedScan scan_batch_clamped(const float* x, int64_t n, float lo, float hi) {
  assert(lo <= hi);
  ScalarScan xs, ys;
  for (int64_t i = 0; i < n; ++i) {
    xs.step(x[i], static_cast<int>(i % kLanes));
    ys.step(clip(x[i], lo, hi), static_cast<int>(i % kLanes));
  }
  const BatchStats xstats = xs.finish(n);
  ClampedScan out;
  out.y = ys.finish(n);
  out.x_min = xstats.min;
  out.x_max = xstats.max;
  out.x_nan = xstats.nan;
  out.x_inf = xstats.inf;
  return out;
}

double combine_lanes(const double* l) { return ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7])); }

bool lattice_fits_simd(int e, int64_t first) {
  return e >= -127 && e <= 126 && first > -kCellLimit && first < kCellLimit;
}

bool scan_block_available() {
#if defined(__x86_64__)
  static const bool avx512 = cpu_has_avx512();
  return avx512 || batch_scan_uses_avx2();
#else
  return false;
#endif
}

#if defined(__x86_64__)
namespace {
// A block pass in one of its forms (bins or not, the hot bin told apart or
// not, clamped sum or not, with an upper bound or not), chosen at run time,
// unchecked first: Kernel<kBins, kChecked, kClamp, kHot, kUpper>::run.
template <template <bool, bool, bool, bool, bool> class Kernel>
BlockScan pick_pass(const float* x, int64_t n, double* lanes, const BinLattice* lattice, int32_t* cold_bins,
                    const ClampSum* clamp) {
  const BinLattice& lat = lattice ? *lattice : BinLattice{};
  auto pass = [&](auto bins, auto clamped, auto hot, auto upper) {
    return unchecked_first(lanes, clamp, [&](auto checked) {
      return Kernel<decltype(bins)::value, decltype(checked)::value, decltype(clamped)::value, decltype(hot)::value,
                    decltype(upper)::value>::run(x, n, lanes, lat, cold_bins, clamp);
    });
  };
  auto with_bounds = [&](auto bins, auto hot) {
    if (!clamp) return pass(bins, std::false_type{}, hot, std::false_type{});
    if (clamp->hi == std::numeric_limits<float>::infinity()) return pass(bins, std::true_type{}, hot, std::false_type{});
    return pass(bins, std::true_type{}, hot, std::true_type{});
  };
  if (!lattice) return with_bounds(std::false_type{}, std::false_type{});
  if (lattice->count_hot) return with_bounds(std::true_type{}, std::true_type{});
  return with_bounds(std::true_type{}, std::false_type{});
}
template <bool kBins, bool kChecked, bool kClamp, bool kHot, bool kUpper>
struct Avx2Pass {
  static constexpr auto run = scan_block_avx2_pass<kBins, kChecked, kClamp, kHot, kUpper>;
};
template <bool kBins, bool kChecked, bool kClamp, bool kHot, bool kUpper>
struct Avx512Pass {
  static constexpr auto run = scan_block_avx512<kBins, kChecked, kClamp, kHot, kUpper>;
};
}  // namespace
#endif

BlockScan scan_block_avx2(const float* x, int64_t n, double* lanes, const BinLattice* lattice, int32_t* cold_bins,
                          const ClampSum* clamp) {
  assert(batch_scan_uses_avx2());
  assert(!lattice || lattice_fits_simd(lattice->e, lattice->first));
#if defined(__x86_64__)
  return pick_pass<Avx2Pass>(x, n, lanes, lattice, cold_bins, clamp);
#else
  (void)x, (void)n, (void)lanes, (void)lattice, (void)cold_bins, (void)clamp;
  return {};
#endif
}

BlockScan scan_block(const float* x, int64_t n, double* lanes, const BinLattice* lattice, int32_t* cold_bins,
                     const ClampSum* clamp) {
  assert(scan_block_available());
  assert(!lattice || lattice_fits_simd(lattice->e, lattice->first));
#if defined(__x86_64__)
  static const bool avx512 = cpu_has_avx512();
  if (!avx512) return scan_block_avx2(x, n, lanes, lattice, cold_bins, clamp);
  return pick_pass<Avx512Pass>(x, n, lanes, lattice, cold_bins, clamp);
#else
  (void)x, (void)n, (void)lanes, (void)lattice, (void)cold_bins, (void)clamp;
  return {};
#endif
}

BatchStats scan_batch_portable(const float* x, int64_t n) {
  ScalarScan scan;
  for (int64_t i = 0; i < n; ++i) scan.step(x[i], static_cast<int>(i % kLanes));
  return scan.finish(n);
}

void count_cells_portable(const float* x, int64_t n, int e, int64_t first, uint64_t* counts, int bins) {
  const double scale = std::ldexp(1.0, -e);  // exact: multiplying by a power of two
  const int64_t last = bins - 1;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) counts[bin_of(x[i], scale, first, last)]++;
}

bool batch_scan_uses_avx2() {
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2();
  return avx2;
#else
  return false;
#endif
}

BatchStats scan_batch(const float* x, int64_t n) {
#if defined(__x86_64__)
  if (batch_scan_uses_avx2()) return scan_batch_avx2(x, n);
#endif
  return scan_batch_portable(x, n);
}

void count_cells(const float* x, int64_t n, int e, int64_t first, uint64_t* counts, int bins) {
#if defined(__x86_64__)
  // The float path needs 2^-e to be a normal float and cells to fit int32.
  if (batch_scan_uses_avx2() && lattice_fits_simd(e, first))
    return count_cells_avx2(x, n, e, first, counts, bins);
#endif
  count_cells_portable(x, n, e, first, counts, bins);
}

}  // namespace quant::profile
