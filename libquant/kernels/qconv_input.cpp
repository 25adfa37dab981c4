// qconv_input.h: the int8 fast convolution's activations as its kernels
// read them (phase planes, channel quads, packed B panels).
#include "libquant/kernels/qconv_input.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <type_traits>
#include <vector>

#include "libquant/kernels/qgemm_packed.h"
#include "libquant/kernels/spatial.h"
#include "libquant/kernels/threadpool.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>

#include "libquant/kernels/cpu.h"
#endif

namespace quant::kernels::detail {

namespace {

// Four rows of 16 bytes (row t at rows[t] + j) into one 64-byte panel group:
// column c's four bytes at dst + 4c, every byte xor `flip`; kWide: each byte
// stored as its int16 (zero-extended), 128 bytes, for a kernel on B widened
// when packed (QGemmIsa::a_signed_wide_wb_requant).
template <bool kWide = false>
__attribute__((always_inline)) inline void transpose_4x16(const uint8_t* const rows[4], int64_t j, uint8_t flip,
                                                          uint8_t* dst) {
#if defined(__SSE2__)
  const __m128i x = _mm_set1_epi8(static_cast<char>(flip));
  const __m128i r0 = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[0] + j)), x);
  const __m128i r1 = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[1] + j)), x);
  const __m128i r2 = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2] + j)), x);
  const __m128i r3 = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[3] + j)), x);
  const __m128i t01l = _mm_unpacklo_epi8(r0, r1), t01h = _mm_unpackhi_epi8(r0, r1);
  const __m128i t23l = _mm_unpacklo_epi8(r2, r3), t23h = _mm_unpackhi_epi8(r2, r3);
  const __m128i out[4] = {_mm_unpacklo_epi16(t01l, t23l), _mm_unpackhi_epi16(t01l, t23l), _mm_unpacklo_epi16(t01h, t23h),
                          _mm_unpackhi_epi16(t01h, t23h)};
  const __m128i zero = _mm_setzero_si128();
  for (int q = 0; q < 4; ++q) {
    if (kWide) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 32 * q), _mm_unpacklo_epi8(out[q], zero));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 32 * q + 16), _mm_unpackhi_epi8(out[q], zero));
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16 * q), out[q]);
    }
  }
#else
  for (int c = 0; c < kQNr; ++c)
    for (int t = 0; t < kQKGroup; ++t) {
      const uint8_t v = rows[t][j + c] ^ flip;
      if (kWide) {
        const uint16_t w = v;
        std::memcpy(dst + 2 * (c * 4 + t), &w, 2);
      } else {
        dst[c * 4 + t] = v;
      }
    }
#endif
}

#if defined(__x86_64__)
// transpose_4x16<false> for the columns [0, full) of one row group, 32 at a
// time (two panels, `panel` bytes apart): the same bytes with half the loads
// and stores. The in-lane unpacks leave panel P's quarters in the low lanes
// and panel P + 1's in the high ones; VPERM2I128 pairs them up.
__attribute__((target("avx2"))) int64_t transpose_4x32_avx2(const uint8_t* const rows[4], int64_t full, uint8_t flip,
                                                             int64_t panel, uint8_t* dst) {
  const __m256i x = _mm256_set1_epi8(static_cast<char>(flip));
  int64_t j = 0;
  for (; j + 2 * kQNr <= full; j += 2 * kQNr) {
    __m256i r[4];
    for (int t = 0; t < 4; ++t)
      r[t] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[t] + j)), x);
    const __m256i t01l = _mm256_unpacklo_epi8(r[0], r[1]), t01h = _mm256_unpackhi_epi8(r[0], r[1]);
    const __m256i t23l = _mm256_unpacklo_epi8(r[2], r[3]), t23h = _mm256_unpackhi_epi8(r[2], r[3]);
    const __m256i o0 = _mm256_unpacklo_epi16(t01l, t23l), o1 = _mm256_unpackhi_epi16(t01l, t23l);
    const __m256i o2 = _mm256_unpacklo_epi16(t01h, t23h), o3 = _mm256_unpackhi_epi16(t01h, t23h);
    uint8_t* d = dst + (j / kQNr) * panel;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), _mm256_permute2x128_si256(o0, o1, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 32), _mm256_permute2x128_si256(o2, o3, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + panel), _mm256_permute2x128_si256(o0, o1, 0x31));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + panel + 32), _mm256_permute2x128_si256(o2, o3, 0x31));
  }
  return j;
}
#endif

// Columns [0, n) of four rows (n a multiple of 16) as B panel groups, panel
// j / 16 at dst + (j / 16) * panel: transpose_4x16, bytes 32 columns at a
// time where the CPU has AVX2.
template <bool kWide>
void transpose_rows(const uint8_t* const rows[4], int64_t n, uint8_t flip, int64_t panel, uint8_t* dst) {
  int64_t j = 0;
#if defined(__x86_64__)
  static const bool avx2 = cpu_supports("avx2");
  if (avx2 && !kWide) j = transpose_4x32_avx2(rows, n, flip, panel, dst);
#endif
  for (; j < n; j += kQNr) transpose_4x16<kWide>(rows, j, flip, dst + j / kQNr * panel);
}

// The phase planes' line width pw: the narrowest that holds every input
// column of a line and lets each valid output read its padding as well. A
// line's right padding and the next line's left padding are one run of
// zero-point columns, so they may overlap: a read past the line's end lands
// in the next line's left padding, which holds the zero point as the right
// padding would. (resnet18's 7 x 7 maps, 3 x 3 pad 1: pw = 8, not 9; the
// AVX2 kernels compute 56 columns where they computed 64.)
// Per column phase b (phase column j = padded column S2 j + b), with input
// columns at phase columns [j0, j1) and valid outputs reading up to column
// jmax, pw must reach j1, cover out_w outputs, and keep jmax - pw (a read
// wrapped onto the next line) under j0.
int64_t wide_line_width(const Spatial3& s) {
  const int64_t s2 = s.strides[2], d2 = s.dilations[2], iw = s.in[2], pb = s.pads_begin[2];
  int64_t pw = s.out[2];
  for (int64_t b = 0; b < s2; ++b) {
    const int64_t j0 = pb > b ? (pb - b + s2 - 1) / s2 : 0;
    const int64_t j1 = iw - 1 + pb - b >= 0 ? (iw - 1 + pb - b) / s2 + 1 : 0;
    int64_t reach = -1;  // the furthest column offset of a tap in this phase
    for (int64_t kx = 0; kx < s.kernel[2]; ++kx)
      if (d2 * kx % s2 == b) reach = std::max(reach, d2 * kx / s2);
    pw = std::max(pw, j1);
    if (reach >= 0) pw = std::max(pw, s.out[2] + reach - j0);
  }
  return pw;
}

// dst[0, n) = src[0, n) for the short lines of an output plane (7 to 56
// bytes in resnet18): whole 16-byte chunks, the last one overlapping the one
// before, instead of a call to memcpy per line (which took 4% of resnet18's
// int8 run with VNNI).
inline void copy_line(uint8_t* dst, const uint8_t* src, size_t n) {
  auto move = [&](size_t at, auto chunk) {
    std::memcpy(&chunk, src + at, sizeof chunk);
    std::memcpy(dst + at, &chunk, sizeof chunk);
  };
  struct Bytes16 {
    uint64_t lo, hi;
  };
  if (n >= 16) {
    for (size_t at = 0; at + 16 < n; at += 16) move(at, Bytes16{});
    move(n - 16, Bytes16{});
  } else if (n >= 8) {
    move(0, uint64_t{}), move(n - 8, uint64_t{});
  } else if (n >= 4) {
    move(0, uint32_t{}), move(n - 4, uint32_t{});
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

// dst[o] = line[o * 2] for o < n: the input under one tap of a stride-2
// convolution. SSE2: the even bytes of 32 (16, 8) are the low bytes of 16 (8,
// 4) words. Reads stay within line[0 .. 2n - 2], the bytes the copy needs:
// a line's last chunk is taken from the odd bytes of a load that ends at
// line[2n - 2], overlapping the chunk before it. Lines of 7 to 28 pixels
// (resnet18's 1x1/2 downsamples) otherwise ended in a scalar loop that was
// a quarter of their packing.
inline void copy_stride2(const uint8_t* line, int64_t n, uint8_t* dst) {
  int64_t o = 0;
#if defined(__SSE2__)
  const __m128i low = _mm_set1_epi16(0x00FF);
  for (; o + 16 <= n && 2 * o + 32 <= 2 * n - 1; o += 16) {
    const __m128i a = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(line + 2 * o)), low);
    const __m128i b = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(line + 2 * o + 16)), low);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + o), _mm_packus_epi16(a, b));
  }
  if (n >= 9) {
    for (; o + 8 <= n && 2 * o + 16 <= 2 * n - 1; o += 8) {
      const __m128i a = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(line + 2 * o)), low);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + o), _mm_packus_epi16(a, a));
    }
    if (o < n) {  // outputs n - 8 .. n - 1: the odd bytes of line[2n - 17 .. 2n - 2]
      const __m128i a = _mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(line + 2 * n - 17)), 8);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + n - 8), _mm_packus_epi16(a, a));
      return;
    }
  } else if (n >= 5) {
    for (; o + 4 <= n && 2 * o + 8 <= 2 * n - 1; o += 4) {
      const __m128i a = _mm_and_si128(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(line + 2 * o)), low);
      const int32_t four = _mm_cvtsi128_si32(_mm_packus_epi16(a, a));
      std::memcpy(dst + o, &four, 4);
    }
    if (o < n) {  // outputs n - 4 .. n - 1: the odd bytes of line[2n - 9 .. 2n - 2]
      const __m128i a = _mm_srli_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(line + 2 * n - 9)), 8);
      const int32_t four = _mm_cvtsi128_si32(_mm_packus_epi16(a, a));
      std::memcpy(dst + n - 4, &four, 4);
      return;
    }
  }
#endif
  for (; o < n; ++o) dst[o] = line[2 * o];
}

// The line copies that build a channel's phase planes (wide path), worked
// out once per call for every channel: only the lines of phases some tap
// reads. (Worked out per channel, with a division per line, this took 14% of
// a 1x1/2 downsample's time; 1% now.)
struct PadLine {
  int64_t from, to;  // offsets in the input plane and in a channel's planes
  int64_t n;         // elements
};

const std::vector<PadLine>& pad_lines(const QFastShape& c) {
  const Spatial3& s = c.s;
  const int64_t s1 = s.strides[1], s2 = s.strides[2], iw = s.in[2], pb = s.pads_begin[2];
  // Column phase b: phase column j holds input column x = S2 j + b - pb, for
  // x in [0, iw): columns [j0, j1), read from the line at S2 j0 + b - pb.
  int64_t j0[4], j1[4];
  for (int64_t b = 0; b < s2; ++b) {
    j0[b] = pb - b > 0 ? (pb - b + s2 - 1) / s2 : 0;
    j1[b] = iw - 1 + pb - b >= 0 ? std::min(c.pw, (iw - 1 + pb - b) / s2 + 1) : 0;
  }
  thread_local std::vector<PadLine> lines;
  lines.clear();
  for (int64_t y = 0; y < s.in[1]; ++y) {
    const int64_t row = y + s.pads_begin[1], a = row % s1, i = row / s1;
    for (int64_t b = 0; b < s2; ++b)
      if (c.slot[a][b] >= 0 && j1[b] > j0[b])
        lines.push_back({y * iw + s2 * j0[b] + b - pb, c.slot[a][b] * c.phase_pitch + i * c.pw + j0[b], j1[b] - j0[b]});
  }
  return lines;
}

// One channel's phase planes: c.pitch elements at d, the zero point where no
// line lands.
template <class TX>
void pad_channel(const QFastShape& c, const PadLine* lines, size_t count, const TX* src, TX zx, TX* d) {
  const int64_t s2 = c.s.strides[2];
  std::fill(d, d + c.pitch, zx);
  for (size_t k = 0; k < count; ++k) {
    const PadLine& l = lines[k];
    if (s2 == 1) std::memcpy(d + l.to, src + l.from, static_cast<size_t>(l.n) * sizeof(TX));
    else if (s2 == 2) copy_stride2(reinterpret_cast<const uint8_t*>(src + l.from), l.n, reinterpret_cast<uint8_t*>(d + l.to));
    else for (int64_t j = 0; j < l.n; ++j) d[l.to + j] = src[l.from + s2 * j];
  }
}

#if defined(__x86_64__)
// Pixels [to, to + n) of four channels' interleaved planes (dst: pixel i's
// four bytes at 4 i, each xor flip) from every other byte of the lines at
// src[t] + from: pad_channel's copy_stride2 and transpose_rows' interleave
// in one pass, for lines of at least 17 pixels. resnet18's 1x1/2 downsample
// at 56 x 56 spent 6.8% of its time in those passes and the zero-point fill
// (perf, QTOOL_ISA=avx2), 5.6% now: medians of 2000 calls 0.98-0.99 of the
// time over four alternations (stop 53). 16 pixels at a time; the last 16
// from the odd bytes of loads that end at the line's last byte read (from +
// 2n - 2), as copy_stride2 ends, so nothing past it is read.
__attribute__((target("avx2"))) void interleave_stride2_avx2(const uint8_t* const src[4], int64_t from, int64_t n,
                                                             uint8_t flip, uint8_t* dst) {
  const __m256i low = _mm256_set1_epi16(0x00FF), x = _mm256_set1_epi8(static_cast<char>(flip));
  const auto chunk = [&](int64_t o, bool tail) __attribute__((target("avx2"))) {
    __m256i w[4];
    for (int t = 0; t < 4; ++t) {
      const __m256i v =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src[t] + from + (tail ? 2 * n - 33 : 2 * o)));
      w[t] = tail ? _mm256_srli_epi16(v, 8) : _mm256_and_si256(v, low);  // pixel o + i in word i
    }
    const __m256i w01 = _mm256_or_si256(w[0], _mm256_slli_epi16(w[1], 8));
    const __m256i w23 = _mm256_or_si256(w[2], _mm256_slli_epi16(w[3], 8));
    // Per 128-bit lane: pixels 0-3 | 8-11 (lo), 4-7 | 12-15 (hi).
    const __m256i lo = _mm256_unpacklo_epi16(w01, w23), hi = _mm256_unpackhi_epi16(w01, w23);
    uint8_t* d = dst + 4 * (tail ? n - 16 : o);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), _mm256_xor_si256(_mm256_permute2x128_si256(lo, hi, 0x20), x));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 32),
                        _mm256_xor_si256(_mm256_permute2x128_si256(lo, hi, 0x31), x));
  };
  // A whole chunk before the last reads up to from + 2o + 31 <= from + 2n - 3.
  int64_t o = 0;
  for (; o + 16 < n; o += 16) chunk(o, false);
  chunk(o, true);
}
#endif

// Patch row k (weight order c, k0, k1, k2) for output pixels [p0, p0+count)
// of one image and group: input values under tap k, x_zero_point in padding.
// Walks the block line by line (the pixel's coordinates advance, no division
// per line): late layers have lines of 7 pixels.
template <class TX>
void gather_row(const QFastShape& c, const TX* x, TX zx, int64_t kk, int64_t p0, int64_t count, TX* dst) {
  const Spatial3& s = c.s;
  const int64_t ch = kk / c.taps, tap = kk % c.taps;
  const int64_t k2 = tap % s.kernel[2], k1 = (tap / s.kernel[2]) % s.kernel[1], k0 = tap / (s.kernel[2] * s.kernel[1]);
  const TX* plane = x + ch * c.in_plane;
  const int64_t off2 = k2 * s.dilations[2] - s.pads_begin[2];
  const IndexRange valid = valid_range(off2, s.strides[2], s.in[2], s.out[2]);
  int64_t o2 = p0 % s.out[2], o1 = (p0 / s.out[2]) % s.out[1], o0 = p0 / (s.out[2] * s.out[1]);
  for (int64_t j = 0; j < count;) {
    const int64_t len = std::min(s.out[2] - o2, count - j);
    const int64_t i0 = o0 * s.strides[0] + k0 * s.dilations[0] - s.pads_begin[0];
    const int64_t i1 = o1 * s.strides[1] + k1 * s.dilations[1] - s.pads_begin[1];
    TX* d = dst + j;
    if (i0 < 0 || i0 >= s.in[0] || i1 < 0 || i1 >= s.in[1]) {
      std::fill(d, d + len, zx);
    } else {
      const TX* line = plane + (i0 * s.in[1] + i1) * s.in[2];
      const int64_t lo = std::clamp(valid.lo, o2, o2 + len), hi = std::clamp(valid.hi, lo, o2 + len);
      std::fill(d, d + (lo - o2), zx);
      if (s.strides[2] == 1) {
        std::memcpy(d + (lo - o2), line + lo + off2, static_cast<size_t>(hi - lo) * sizeof(TX));
      } else if (s.strides[2] == 2) {
        copy_stride2(reinterpret_cast<const uint8_t*>(line + lo * 2 + off2), hi - lo,
                     reinterpret_cast<uint8_t*>(d + (lo - o2)));
      } else {
        for (int64_t o = lo; o < hi; ++o) d[o - o2] = line[o * s.strides[2] + off2];
      }
      std::fill(d + (hi - o2), d + len, zx);
    }
    j += len;
    o2 += len;
    if (o2 == s.out[2]) {
      o2 = 0;
      if (++o1 == s.out[1]) o1 = 0, ++o0;
    }
  }
}

}  // namespace

QFastShape qfast_shape(const ConvGeometry& g) {
  QFastShape c{qconv_shape(g)};
  const Spatial3& s = c.s;
  c.pointwise = true;
  for (int d = 0; d < 3; ++d)
    c.pointwise = c.pointwise && s.kernel[d] == 1 && s.strides[d] == 1 && s.pads_begin[d] == 0 && s.pads_end[d] == 0;
  c.plane = c.out_plane;
  if (c.pointwise || s.in[0] != 1 || s.out[0] != 1 || s.kernel[0] != 1 || s.pads_begin[0] != 0 || s.pads_end[0] != 0 ||
      s.out[1] <= 0 || s.out[2] <= 0 || s.strides[1] > 4 || s.strides[2] > 4)
    return c;
  const int64_t s1 = s.strides[1], s2 = s.strides[2];
  const int64_t pw = wide_line_width(s);
  const int64_t ph = (s.in[1] + s.pads_begin[1] + s.pads_end[1] + s1 - 1) / s1;
  const int64_t panels = (c.out_plane + kQNr - 1) / kQNr, wide_panels = (s.out[1] * pw + kQNr - 1) / kQNr;
  if (wide_panels > panels + panels / 4 + 1) return c;  // the dropped columns would cost more than gathering
  c.wide = true;
  c.pw = pw, c.ph = ph;
  // The furthest read: wide pixel out_h * pw - 1 under the last tap.
  const int64_t reach = (s.out[1] + s.dilations[1] * (s.kernel[1] - 1) / s1) * pw + s.dilations[2] * (s.kernel[2] - 1) / s2;
  c.phase_pitch = std::max(ph * pw, reach) + 64;
  // The phases are a grid: (a, b) is read when some tap row reads row phase a
  // and some tap column reads column phase b.
  bool row_read[4] = {}, col_read[4] = {};
  for (int64_t k = 0; k < s.kernel[1]; ++k) row_read[k * s.dilations[1] % s1] = true;
  for (int64_t k = 0; k < s.kernel[2]; ++k) col_read[k * s.dilations[2] % s2] = true;
  int slots = 0;
  for (int64_t a = 0; a < s1; ++a)
    for (int64_t b = 0; b < s2; ++b) c.slot[a][b] = static_cast<int8_t>(row_read[a] && col_read[b] ? slots++ : -1);
  c.pitch = slots * c.phase_pitch;
  c.plane = s.out[1] * pw;
  c.scratch = pw != s.out[2];
  return c;
}

int64_t wide_tap_offset(const QFastShape& c, int64_t tap) {
  const int64_t s1 = c.s.strides[1], s2 = c.s.strides[2];
  const int64_t rx = tap % c.s.kernel[2] * c.s.dilations[2], ry = tap / c.s.kernel[2] * c.s.dilations[1];
  return c.slot[ry % s1][rx % s2] * c.phase_pitch + (ry / s1) * c.pw + rx / s2;
}

template <class TX>
void pad_planes(const QFastShape& c, const TX* x, TX zx, int64_t channels, TX* dst, int threads) {
  const std::vector<PadLine>& lines = pad_lines(c);
  const PadLine* const first = lines.data();
  const size_t count = lines.size();
  parallel_for(threads, channels, [=, &c](int64_t ch) { pad_channel(c, first, count, x + ch * c.in_plane, zx, dst + ch * c.pitch); });
}

void line_stores(const QFastShape& c, int64_t q0, int64_t cols, QLineStores& ls) {
  const int64_t out_w = c.s.out[2], drop = c.pw - out_w;
  for (int h = 0; h < 2; ++h) {
    ls.count[h] = 0;
    const int64_t n = std::min<int64_t>(kQNr, cols - h * kQNr);
    for (int64_t i = 0; i < n;) {
      const int64_t q = q0 + h * kQNr + i, row = q / c.pw, col = q % c.pw;
      if (col >= out_w) {
        i += c.pw - col;
        continue;
      }
      const int64_t len = std::min(n - i, out_w - col);
      assert(ls.count[h] < kQLineStores);
      ls.mask[h][ls.count[h]] = static_cast<uint16_t>(((1u << len) - 1) << i);
      ls.shift[h][ls.count[h]] = static_cast<int32_t>(row * drop);
      ++ls.count[h];
      i += len;
    }
  }
}

int64_t quad_pixels(const QFastShape& c) { return (c.pitch + kQNr - 1) / kQNr * kQNr; }

template <class TX, bool kWide>
void pad_quads(const QFastShape& c, const TX* x, TX zx, int64_t channels, uint8_t* dst, int threads) {
  const std::vector<PadLine>& lines = pad_lines(c);
  const PadLine* const first = lines.data();
  const size_t count = lines.size();
  const int64_t qp = quad_pixels(c), eb = kWide ? 2 : 1;
  const uint8_t flip = std::is_signed_v<TX> ? 0x80 : 0;
#if defined(__x86_64__)
  // Stride-2 lines of 17 pixels or more, bytes: straight into the quads.
  static const bool avx2 = cpu_supports("avx2");
  bool fused = avx2 && !kWide && c.s.strides[2] == 2;
  for (size_t k = 0; fused && k < count; ++k) fused = first[k].n >= 17;
  if (fused) {
    parallel_for(threads, channels / 4, [=, &c](int64_t q) {
      uint8_t* d = dst + q * qp * 4;
      const uint8_t fill = static_cast<uint8_t>(zx) ^ flip;
      std::memset(d, fill, static_cast<size_t>(qp) * 4);
      const uint8_t* src[4];
      for (int t = 0; t < 4; ++t) src[t] = reinterpret_cast<const uint8_t*>(x + (4 * q + t) * c.in_plane);
      for (size_t k = 0; k < count; ++k)
        interleave_stride2_avx2(src, first[k].from, first[k].n, flip, d + 4 * first[k].to);
    });
    return;
  }
#endif
  parallel_for(threads, channels / 4, [=, &c](int64_t q) {
    thread_local AlignedBytes planes_buf;
    TX* planes = reinterpret_cast<TX*>(planes_buf.reserve(static_cast<size_t>(4 * qp) * sizeof(TX)));
    const uint8_t* rows[4];
    for (int t = 0; t < 4; ++t) {
      TX* d = planes + t * qp;
      pad_channel(c, first, count, x + (4 * q + t) * c.in_plane, zx, d);
      std::fill(d + c.pitch, d + qp, zx);
      rows[t] = reinterpret_cast<const uint8_t*>(d);
    }
    transpose_rows<kWide>(rows, qp, flip, kQNr * 4 * eb, dst + q * qp * 4 * eb);
  });
}

template <class TX>
void pack_block(const QFastShape& c, const TX* x, TX zx, int64_t p0, int64_t count, uint8_t* rows_buf, uint8_t* panels,
                int32_t* col_sum, bool tap_major, bool wide_b) {
  const bool flip = std::is_signed_v<TX>;
  const int64_t kp = q_padded_k(c.reduction), stride = (count + kQNr - 1) / kQNr * kQNr;
  // Row pointers: the input planes themselves (pointwise) or gathered rows.
  thread_local std::vector<const uint8_t*> rows;
  thread_local AlignedBytes zero_row;
  rows.resize(static_cast<size_t>(kp));
  uint8_t* zeros = zero_row.reserve(static_cast<size_t>(stride));
  std::memset(zeros, flip ? 0x80 : 0, static_cast<size_t>(stride));  // flipped to 0 while packing
  if (c.wide) {  // x: the phase planes; each tap's offset in a channel's planes, then every channel
    thread_local std::vector<int64_t> tap_at;
    tap_at.resize(static_cast<size_t>(c.taps));
    for (int64_t tap = 0; tap < c.taps; ++tap) tap_at[static_cast<size_t>(tap)] = wide_tap_offset(c, tap) + p0;
    for (int64_t ch = 0, kk = 0; ch < c.group_in; ++ch)
      for (int64_t tap = 0; tap < c.taps; ++tap, ++kk)
        rows[static_cast<size_t>(kk)] = reinterpret_cast<const uint8_t*>(x + ch * c.pitch + tap_at[static_cast<size_t>(tap)]);
  }
  for (int64_t kk = 0; kk < c.reduction && !c.wide; ++kk) {
    if (c.pointwise) {
      rows[static_cast<size_t>(kk)] = reinterpret_cast<const uint8_t*>(x + kk * c.in_plane + p0);
    } else {
      TX* r = reinterpret_cast<TX*>(rows_buf + kk * stride);
      gather_row(c, x, zx, kk, p0, count, r);
      rows[static_cast<size_t>(kk)] = reinterpret_cast<const uint8_t*>(r);
    }
  }
  if (tap_major) {  // the weights' K order (PackedQConvWeights::k_tap_major): row (tap, channel)
    thread_local std::vector<const uint8_t*> by_channel;
    by_channel.assign(rows.begin(), rows.begin() + c.reduction);
    for (int64_t ch = 0; ch < c.group_in; ++ch)
      for (int64_t tap = 0; tap < c.taps; ++tap)
        rows[static_cast<size_t>(tap * c.group_in + ch)] = by_channel[static_cast<size_t>(ch * c.taps + tap)];
  }
  for (int64_t kk = c.reduction; kk < kp; ++kk) rows[static_cast<size_t>(kk)] = zeros;
  const uint8_t flip_byte = flip ? 0x80 : 0;
  // Wide rows may be read past count (into the next line or the plane's
  // slack, all initialised): the last panel is transposed whole, its extra
  // columns computed and never stored.
  const int64_t full = c.wide ? stride : count / kQNr * kQNr;
  const int64_t eb = wide_b ? 2 : 1;  // bytes per packed element
  // A branch, not a pointer to one of the two instances: through a pointer
  // neither is inlined.
  auto transpose = [wide_b](const uint8_t* const* r, int64_t n, uint8_t flip, int64_t panel, uint8_t* dst) {
    if (wide_b)
      transpose_rows<true>(r, n, flip, panel, dst);
    else
      transpose_rows<false>(r, n, flip, panel, dst);
  };
  const int64_t panel = kp * kQNr * eb;  // bytes between panels
  for (int64_t g = 0; g < kp; g += kQKGroup) {
    const uint8_t* const* r = rows.data() + g;
    uint8_t* const dst = panels + g * kQNr * eb;
    transpose(r, full, flip_byte, panel, dst);
    if (full < count) {  // last partial panel: copy the tails, padded with (flipped) zeros
      uint8_t tail[4][kQNr];
      const uint8_t* tr[4];
      for (int t = 0; t < 4; ++t) {
        std::memset(tail[t], flip_byte, kQNr);
        std::memcpy(tail[t], r[t] + full, static_cast<size_t>(count - full));
        tr[t] = tail[t];
      }
      transpose(tr, kQNr, flip_byte, panel, dst + (full / kQNr) * panel);
    }
  }
  if (col_sum) {
    // uint32 sums: they wrap (defined) for K past 2^31 / 255, as the accumulators do.
    uint32_t* sums = reinterpret_cast<uint32_t*>(col_sum);
    std::fill(sums, sums + count, 0u);
    for (int64_t kk = 0; kk < c.reduction; ++kk) {
      const TX* r = reinterpret_cast<const TX*>(rows[static_cast<size_t>(kk)]);
      for (int64_t j = 0; j < count; ++j) sums[j] += static_cast<uint32_t>(stored_value(r[j], flip));
    }
  }
}

template <class TY>
void copy_wide(const QFastShape& c, const TY* src, int64_t ld, int64_t r0, int64_t r1, int64_t p0, int64_t count, TY* y) {
  // The block's line segments first, then row by row: each row's reads and
  // writes advance through memory (segment by segment, every row in turn,
  // touched a new line of each of hundreds of rows per step).
  struct Segment {
    int64_t from, to, bytes;  // offset in a scratch row, in an output row; length
  };
  thread_local std::vector<Segment> segments;
  segments.clear();
  const int64_t ow = c.s.out[2];
  for (int64_t q = p0; q < p0 + count;) {
    const int64_t oy = q / c.pw, ox = q % c.pw, end = std::min(p0 + count, (oy + 1) * c.pw);
    const int64_t n = std::min(ow, ox + (end - q)) - ox;
    if (n > 0) segments.push_back({q - p0, oy * ow + ox, n * static_cast<int64_t>(sizeof(TY))});
    q = end;
  }
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src + r * ld);
    uint8_t* d = reinterpret_cast<uint8_t*>(y + r * c.out_plane);
    for (const Segment& g : segments)
      copy_line(d + g.to * static_cast<int64_t>(sizeof(TY)), s + g.from * static_cast<int64_t>(sizeof(TY)),
                static_cast<size_t>(g.bytes));
  }
}

template void pad_planes<uint8_t>(const QFastShape&, const uint8_t*, uint8_t, int64_t, uint8_t*, int);
template void pad_planes<int8_t>(const QFastShape&, const int8_t*, int8_t, int64_t, int8_t*, int);
template void pad_quads<uint8_t, false>(const QFastShape&, const uint8_t*, uint8_t, int64_t, uint8_t*, int);
template void pad_quads<uint8_t, true>(const QFastShape&, const uint8_t*, uint8_t, int64_t, uint8_t*, int);
template void pad_quads<int8_t, false>(const QFastShape&, const int8_t*, int8_t, int64_t, uint8_t*, int);
template void pad_quads<int8_t, true>(const QFastShape&, const int8_t*, int8_t, int64_t, uint8_t*, int);
template void pack_block<uint8_t>(const QFastShape&, const uint8_t*, uint8_t, int64_t, int64_t, uint8_t*, uint8_t*,
                                  int32_t*, bool, bool);
template void pack_block<int8_t>(const QFastShape&, const int8_t*, int8_t, int64_t, int64_t, uint8_t*, uint8_t*,
                                 int32_t*, bool, bool);
template void copy_wide<uint8_t>(const QFastShape&, const uint8_t*, int64_t, int64_t, int64_t, int64_t, int64_t,
                                 uint8_t*);
template void copy_wide<int8_t>(const QFastShape&, const int8_t*, int64_t, int64_t, int64_t, int64_t, int64_t,
                                int8_t*);
template void copy_wide<int32_t>(const QFastShape&, const int32_t*, int64_t, int64_t, int64_t, int64_t, int64_t,
                                 int32_t*);

}  // namespace quant::kernels::detail
