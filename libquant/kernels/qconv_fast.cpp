#include "libquant/kernels/qconv_fast.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <type_traits>
#include <vector>

#include "libquant/kernels/qconv_shape.h"
#include "libquant/kernels/spatial.h"
#include "libquant/kernels/threadpool.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>

#include "libquant/kernels/cpu.h"
#endif

namespace quant::kernels {

using detail::kQKGroup;
using detail::kQNr;
using detail::q_padded_k;
using detail::stored_value;

namespace {

// Output pixels per packed block: the block's panels (K x pixels bytes) stay
// within this many bytes, so they sit in L2 while every weight panel sweeps
// them: 192 KiB where the L2 holds 512 KiB or more, 3/8 of a smaller one
// (96 KiB of a 256 KiB L2). On this project's 2 MiB-L2 hosts blocks of 96 KiB
// ran resnet18 and mobilenet_v2 int8 at 0.99-1.01x the time of 192 KiB ones
// (QTOOL_ISA=avx2, 1 thread, per-step minima alternating in one process).
int64_t block_bytes() { return std::min<int64_t>(int64_t{192} << 10, l2_cache_bytes() * 3 / 8); }
// Tasks per thread where a conv has the work for them (qconv_fast): at most
// kTasksPerThread, each at least kMinTaskMacs multiply-adds (about 15 us
// with VNNI).
constexpr int64_t kTasksPerThread = 4;
constexpr int64_t kMinTaskMacs = int64_t{4} << 20;

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

// Where the patch rows come from:
//  - pointwise (1x1, stride 1, no padding): the input planes themselves;
//  - wide (other 2-D / 1-D convolutions, unless it computes many more
//    panels): each input channel copied once per call into planes padded
//    with the zero point and split by phase for strides S1 x S2: phase
//    (a, b) holds padded element (S1 i + a, S2 j + b) at i * pw + j, pw at
//    most ceil(padded width / S2) (wide_line_width: neighbouring lines may
//    share their padding; S = 1: one phase, the padded plane). Output (oy,
//    ox) is computed at the "wide" pixel q = oy * pw + ox, whose tap (ky, kx)
//    (padded row S1 oy + d1 ky, column S2 ox + d2 kx) reads phase
//    (d1 ky % S1, d2 kx % S2) at q + (d1 ky / S1) * pw + d2 kx / S2: every
//    patch row is a contiguous slice of a phase plane, nothing is gathered.
//    Only the phases some tap reads are copied. The columns ox >= out_w
//    (pw - out_w per line) are computed into a scratch block and dropped
//    when it is copied to y (they read past their line, never past the
//    plane's slack); with none (pw = out_w: a strided 1x1), the wide pixels
//    are the output's and go to y directly; in its direct form (qconv_fast.h)
//    the planes interleave four channels per pixel (pad_quads) and the
//    kernels read B there, unpacked;
//  - otherwise rows gathered per block (gather_row, im2col).
struct Shape : detail::QConvShape {
  bool pointwise = false;
  bool wide = false;
  int64_t pw = 0, ph = 0;     // wide: the phase planes' line width and height
  int64_t phase_pitch = 0;    // elements per phase plane (with slack)
  int64_t pitch = 0;          // elements per channel (the phases some tap reads)
  // Where phase (a, b) starts in a channel's planes, in units of phase_pitch
  // (slot[a][b]), or -1 for a phase no tap reads, which is not copied: a
  // strided 1x1 (resnet's downsamples) reads one phase of S1 x S2.
  int8_t slot[4][4] = {};
  int64_t plane = 0;          // output pixels the GEMM computes per channel: out_plane, or out_h * pw when wide
  bool scratch = false;       // wide with columns to drop: computed into a scratch block, copied to y
};

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
int64_t wide_line_width(const detail::Spatial3& s) {
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

Shape conv_shape(const ConvGeometry& g) {
  Shape c{detail::qconv_shape(g)};
  const detail::Spatial3& s = c.s;
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

// Copies the wide block (wide pixels [p0, p0+count), row r at src + r * ld)
// of rows [r0, r1) to y (row r at y + r * out_plane), dropping the columns
// past the output line.
template <class TY>
void copy_wide(const Shape& c, const TY* src, int64_t ld, int64_t r0, int64_t r1, int64_t p0, int64_t count, TY* y) {
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

// Where tap `tap` of a wide conv reads for wide pixel 0, in pixels from the
// start of a channel's phase planes: tap (ky, kx) reads phase (d1 ky % S1,
// d2 kx % S2) at (d1 ky / S1) * pw + d2 kx / S2 (Shape).
int64_t wide_tap_offset(const Shape& c, int64_t tap) {
  const int64_t s1 = c.s.strides[1], s2 = c.s.strides[2];
  const int64_t rx = tap % c.s.kernel[2] * c.s.dilations[2], ry = tap / c.s.kernel[2] * c.s.dilations[1];
  return c.slot[ry % s1][rx % s2] * c.phase_pitch + (ry / s1) * c.pw + rx / s2;
}

// The line copies that build a channel's phase planes (wide path), worked
// out once per call for every channel: only the lines of phases some tap
// reads. (Worked out per channel, with a division per line, this took 14% of
// a 1x1/2 downsample's time; 1% now.)
struct PadLine {
  int64_t from, to;  // offsets in the input plane and in a channel's planes
  int64_t n;         // elements
};

const std::vector<PadLine>& pad_lines(const Shape& c) {
  const detail::Spatial3& s = c.s;
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
void pad_channel(const Shape& c, const PadLine* lines, size_t count, const TX* src, TX zx, TX* d) {
  const int64_t s2 = c.s.strides[2];
  std::fill(d, d + c.pitch, zx);
  for (size_t k = 0; k < count; ++k) {
    const PadLine& l = lines[k];
    if (s2 == 1) std::memcpy(d + l.to, src + l.from, static_cast<size_t>(l.n) * sizeof(TX));
    else if (s2 == 2) copy_stride2(reinterpret_cast<const uint8_t*>(src + l.from), l.n, reinterpret_cast<uint8_t*>(d + l.to));
    else for (int64_t j = 0; j < l.n; ++j) d[l.to + j] = src[l.from + s2 * j];
  }
}

// The phase planes of the wide path for one image: channel ch of x into
// dst + ch * pitch, phase (a, b) at + slot[a][b] * phase_pitch (the phases
// no tap reads are skipped).
template <class TX>
void pad_planes(const Shape& c, const TX* x, TX zx, int64_t channels, TX* dst, int threads) {
  const std::vector<PadLine>& lines = pad_lines(c);
  const PadLine* const first = lines.data();
  const size_t count = lines.size();
  parallel_for(threads, channels, [=, &c](int64_t ch) { pad_channel(c, first, count, x + ch * c.in_plane, zx, dst + ch * c.pitch); });
}

// The line stores (detail::QLineStores) of a wide tile: `cols` wide pixels
// from q0, two panels of 16; each panel's lanes grouped by output line, the
// dropped columns (ox >= out_w) in none, each group shifted back by the
// columns dropped before its line.
void line_stores(const Shape& c, int64_t q0, int64_t cols, detail::QLineStores& ls) {
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
      assert(ls.count[h] < detail::kQLineStores);
      ls.mask[h][ls.count[h]] = static_cast<uint16_t>(((1u << len) - 1) << i);
      ls.shift[h][ls.count[h]] = static_cast<int32_t>(row * drop);
      ++ls.count[h];
      i += len;
    }
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

// Pixels per channel quad of the direct path's planes: the phase planes'
// pitch rounded up to whole 16-pixel panels.
int64_t quad_pixels(const Shape& c) { return (c.pitch + kQNr - 1) / kQNr * kQNr; }

// The direct path's input for one image: the phase planes of channels
// 4q .. 4q + 3 interleaved, quad q at dst + q * quad_pixels * 4 * eb bytes,
// pixel i's four channels at + i * 4 * eb (in the uint8 domain, as int16
// when kWide): 16 pixels of a quad are exactly a B panel's group of four k,
// so the kernels read their panels here with no packing at all.
template <class TX, bool kWide>
void pad_quads(const Shape& c, const TX* x, TX zx, int64_t channels, uint8_t* dst, int threads) {
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

// Patch row k (weight order c, k0, k1, k2) for output pixels [p0, p0+count)
// of one image and group: input values under tap k, x_zero_point in padding.
// Walks the block line by line (the pixel's coordinates advance, no division
// per line): late layers have lines of 7 pixels.
template <class TX>
void gather_row(const Shape& c, const TX* x, TX zx, int64_t kk, int64_t p0, int64_t count, TX* dst) {
  const detail::Spatial3& s = c.s;
  const int64_t ch = kk / c.taps, tap = kk % c.taps;
  const int64_t k2 = tap % s.kernel[2], k1 = (tap / s.kernel[2]) % s.kernel[1], k0 = tap / (s.kernel[2] * s.kernel[1]);
  const TX* plane = x + ch * c.in_plane;
  const int64_t off2 = k2 * s.dilations[2] - s.pads_begin[2];
  const detail::IndexRange valid = detail::valid_range(off2, s.strides[2], s.in[2], s.out[2]);
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

// Packs output pixels [p0, p0+count) (wide pixels when c.wide, x then being
// the padded planes) of one image and group as B panels
// (uint8 domain) and, when col_sum is not null, their column sums.
template <class TX>
void pack_block(const Shape& c, const TX* x, TX zx, int64_t p0, int64_t count, uint8_t* rows_buf, uint8_t* panels,
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

// Whether the pairs kernel's pairs (k, k + 1 for even k, within each of the
// `rows` rows of `depth` weights, as packed: uint8 weights flipped to int8)
// all pass s8_pairs_fit_int16: what PackedQConvWeights::pairs_bounded()
// reports once these rows are packed in this order (padding pairs are zeros).
template <class TW>
bool rows_pairs_fit(const TW* w, int64_t rows, int64_t depth, bool flip) {
  std::vector<uint8_t> row(static_cast<size_t>((depth + 1) / 2 * 2), 0);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t t = 0; t < depth; ++t) row[static_cast<size_t>(t)] = static_cast<uint8_t>(w[m * depth + t]) ^ (flip ? 0x80 : 0);
    if (!detail::s8_pairs_fit_int16(row.data(), static_cast<int64_t>(row.size()))) return false;
  }
  return true;
}

}  // namespace

template <class TW>
PackedQConvWeights::PackedQConvWeights(const TW* w, int64_t out_channels, int64_t group, int64_t depth_per_group,
                                       const TW* zero_points, int64_t zero_point_count, const detail::QGemmIsa& isa,
                                       int64_t taps)
    : isa_(&isa), out_channels_(out_channels), depth_(depth_per_group) {
  const bool flip = std::is_unsigned_v<TW>;  // the kernels take the weights as int8
  const int mr = isa.mr;
  const int64_t group_out = out_channels / group, panels = (group_out + mr - 1) / mr, kp = q_padded_k(depth_per_group);
  group_bytes_ = panels * mr * kp;
  // Only the depthwise path (one output channel per group) reads centered weights.
  const bool depthwise = group == out_channels;
  // Room to widen the bytes in place (below); where they are not widened the
  // second half is never touched, so it takes no memory.
  const int64_t room = isa.a_signed_wide && !depthwise ? 2 : 1;
  uint8_t* d = data_.reserve(static_cast<size_t>(std::max<int64_t>(room * group_bytes_ * group, 1)));
  row_sum_.assign(static_cast<size_t>(out_channels), 0);
  row_zp_.assign(static_cast<size_t>(out_channels), 0);
  if (depthwise) centered_.resize(static_cast<size_t>(out_channels * depth_per_group));
  auto pack = [&](const TW* src, uint8_t* dst) {
    for (int64_t g = 0; g < group; ++g)
      for (int64_t p = 0; p < panels; ++p) {
        const int64_t m0 = g * group_out + p * mr;
        detail::pack_q_rows(src + m0 * depth_per_group, depth_per_group, std::min<int64_t>(mr, group_out - p * mr),
                            depth_per_group, mr, flip, dst + g * group_bytes_ + p * mr * kp, row_sum_.data() + m0);
      }
  };
  // K tap major (row (tap, channel)) instead of the weights' channel major
  // order, for two reasons:
  //  - with channels a multiple of 4, each group of four k is four channels
  //    of one tap, which is how qconv_fast's direct path reads the input
  //    (channel-interleaved planes, no packing): an ISA without a pairs
  //    kernel packs them so;
  //  - weights bounded for ONNX Runtime's AVX2 kernels (a target's
  //    pair_bound) pair neighbouring channels of one tap
  //    (kernels/qdot_sat16.h): an ISA with a pairs kernel packs them in that
  //    order when its own does not bound every pair and this one does, or
  //    bounds neither but channels come in fours (the direct path again).
  const int64_t channels = taps > 0 ? depth_per_group / taps : 0;
  const bool reorderable = !depthwise && taps > 1 && channels > 1 && channels * taps == depth_per_group;
  const bool quads = reorderable && channels % 4 == 0;
  std::vector<TW> reordered;
  if (reorderable && (quads || isa.a_signed_pairs)) {
    reordered.resize(static_cast<size_t>(out_channels * depth_per_group));
    for (int64_t m = 0; m < out_channels; ++m)
      for (int64_t ch = 0; ch < channels; ++ch)
        for (int64_t t = 0; t < taps; ++t)
          reordered[static_cast<size_t>(m * depth_per_group + t * channels + ch)] = w[m * depth_per_group + ch * taps + t];
  }
  // The order is chosen before packing, so that the weights are packed once:
  // packing both orders to compare them left the unused one's buffer in
  // malloc's heap (its mmap threshold rises as large blocks are freed), 9 MiB
  // of resnet18 int8's peak RSS under QTOOL_ISA=avx2.
  if (isa.a_signed_pairs && reorderable) {
    const bool natural = rows_pairs_fit(w, out_channels, depth_per_group, flip);
    tap_major_ = !natural && (quads || rows_pairs_fit(reordered.data(), out_channels, depth_per_group, flip));
  } else {
    tap_major_ = quads;
  }
  pack(tap_major_ ? reordered.data() : w, d);
  // Zero points move no packed byte (they act through the row sums): the
  // kernel pairs exactly these bytes, padding rows and K padding included.
  const int64_t bytes = group_bytes_ * group;
  pairs_bounded_ = detail::s8_pairs_fit_int16(d, bytes);
  if (!pairs_bounded_ && isa.a_signed_wide && !depthwise) {  // d is data_'s, with room for twice the bytes
    detail::widen_q_panels(d, bytes, reinterpret_cast<int16_t*>(d));
    group_bytes_ *= 2, widened_ = true;
  }
  for (int64_t m = 0; m < out_channels; ++m) {
    const TW z = zero_point_count == 0 ? TW{0} : zero_points[zero_point_count == 1 ? 0 : m];
    row_zp_[static_cast<size_t>(m)] = stored_value(z, flip);
    has_zp_ = has_zp_ || row_zp_[static_cast<size_t>(m)] != 0;
    for (int64_t t = 0; depthwise && t < depth_per_group; ++t)
      centered_[static_cast<size_t>(m * depth_per_group + t)] =
          static_cast<int32_t>(w[m * depth_per_group + t]) - static_cast<int32_t>(z);
  }
}

template <class TX, class TY>
void qconv_fast(const ConvGeometry& g, const TX* x, TX x_zero_point, const PackedQConvWeights& packed,
                const int32_t* bias, const Requantizer* requant, TY* y, int threads) {
  const Shape c = conv_shape(g);
  assert(packed.out_channels() == g.out_channels && packed.depth() == c.reduction);
  if (c.group_in == 1 && c.group_out == 1 && !c.pointwise) {
    detail::qconv_depthwise(g, x, x_zero_point, packed, bias, requant, y, threads);
    return;
  }
  if (c.out_plane == 0 || g.batch == 0 || g.out_channels == 0) return;
  const detail::QGemmIsa& isa = packed.isa();
  const bool flip = std::is_signed_v<TX>;
  const uint32_t zx = static_cast<uint32_t>(stored_value(x_zero_point, flip));
  const int64_t kp = q_padded_k(c.reduction), groups = kp / kQKGroup;
  // The row terms of the product, - zx' rowsum(w') + K zw' zx', plus the bias.
  thread_local std::vector<int32_t> row_add;
  row_add.resize(static_cast<size_t>(g.out_channels));
  for (int64_t m = 0; m < g.out_channels; ++m) {
    uint32_t v = static_cast<uint32_t>(c.reduction) * static_cast<uint32_t>(packed.row_zp()[m]) * zx -
                 zx * static_cast<uint32_t>(packed.row_sum()[m]);
    if (bias) v += static_cast<uint32_t>(bias[m]);
    row_add[static_cast<size_t>(m)] = static_cast<int32_t>(v);
  }
  detail::QOutput o;
  o.row_add = row_add.data();
  o.row_zp = packed.has_zero_points() ? packed.row_zp() : nullptr;
  o.requant = requant;
  o.channel_is_row = true;
  o.vector_ok = detail::requant_vector_ok(requant);
  o.type = std::is_same_v<TY, int32_t> ? detail::QOutType::S32
           : std::is_same_v<TY, uint8_t> ? detail::QOutType::U8
                                         : detail::QOutType::S8;
  o.ldy = c.out_plane;
  // The output stage fused into the micro-kernel where the ISA has one (uint8
  // / int8 outputs, Float requantization): per-call constants computed here
  // once. Inside the task only `rt` may be used: the thread_local vectors
  // name the running thread's instances there.
  thread_local std::vector<float> row_scale;
  detail::QRequantTile rt;
  // Weights whose pairs fit int16 take the ISA's pairs kernel (one panel at
  // a time), others the exact kernels: the same bits.
  // Others take the kernel on A widened at packing time where the ISA has
  // one (same bits again), else the byte kernels.
  const bool pairs = packed.pairs_bounded() && isa.a_signed_pairs;
  const bool wide_a = packed.widened();  // never with pairs_bounded()
  detail::QMicroKernelRequant requant_kernel = pairs && isa.a_signed_pairs_requant ? isa.a_signed_pairs_requant
                                               : wide_a ? isa.a_signed_wide_requant
                                                        : isa.a_signed_requant;
  const bool fused = requant_kernel && !std::is_same_v<TY, int32_t> && o.vector_ok;
  // The pairs kernel's whole tiles of a row panel in one call where the ISA
  // has a run form (AVX2): resnet18's 64 -> 128 downsample (K = 64) took
  // 0.91-0.92 of its time so (int8 harness, medians of 400 calls).
  const detail::QMicroKernelRequantRun requant_run =
      pairs && requant_kernel == isa.a_signed_pairs_requant ? isa.a_signed_pairs_requant_run : nullptr;
  // Weights widened when packed, and the ISA can take B widened as well:
  // the activation panels are packed as int16 (twice the bytes, half the
  // pixels per block), and the kernel widens nothing.
  const bool wide_b = fused && wide_a && isa.a_signed_wide_wb_requant;
  if (wide_b) requant_kernel = isa.a_signed_wide_wb_requant;
  const int64_t b_bytes = wide_b ? 2 : 1;  // per packed activation
  const detail::QMicroKernel one_panel = pairs ? isa.a_signed_pairs : wide_a ? isa.a_signed_wide : isa.a_signed;
  const detail::QMicroKernel2 two_panels = pairs || wide_a ? nullptr : isa.a_signed_x2;
  const int64_t a_bytes = wide_a ? 2 : 1;  // per packed weight
  if (fused) {
    const detail::QFinishParams fp = detail::finish_params(o);
    row_scale.resize(static_cast<size_t>(g.out_channels));
    for (int64_t m = 0; m < g.out_channels; ++m)
      row_scale[static_cast<size_t>(m)] = requant->scale[fp.per_channel ? static_cast<size_t>(m) : 0];
    rt.row_add = o.row_add, rt.row_scale = row_scale.data(), rt.row_zp = o.row_zp;
    rt.lo = static_cast<float>(fp.lo), rt.hi = static_cast<float>(fp.hi), rt.zero_point = fp.zero_point;
  }
  // The wide path's padded planes, for every image (only this call's task
  // lambda reads them, through `padded`).
  thread_local AlignedBytes padded_buf;
  const TX* padded = nullptr;
  // The direct path: fused output stage, tap-major weights (or one tap) whose
  // groups of four k are four channels of one tap, no weight zero points (no column
  // sums to add): the kernels read B from channel-interleaved planes
  // (pad_quads) at each tap's offset, and nothing is packed per block.
  // Columns past a block's end read on into the planes' slack (or the next
  // quad), computed and never stored, as the wide rows are.
  const bool direct = fused && c.wide && (packed.k_tap_major() || c.taps == 1) && c.group_in % 4 == 0 && !o.row_zp;
  const int64_t quad_bytes = direct ? quad_pixels(c) * 4 * b_bytes : 0;  // per channel quad
  thread_local std::vector<int64_t> tap_off;
  if (direct) {
    uint8_t* d = padded_buf.reserve(static_cast<size_t>(g.batch * g.in_channels / 4 * quad_bytes));
    for (int64_t n = 0; n < g.batch; ++n) {
      const TX* xn = x + n * g.in_channels * c.in_plane;
      uint8_t* dn = d + n * g.in_channels / 4 * quad_bytes;
      if (wide_b) pad_quads<TX, true>(c, xn, x_zero_point, g.in_channels, dn, threads);
      else pad_quads<TX, false>(c, xn, x_zero_point, g.in_channels, dn, threads);
    }
    padded = reinterpret_cast<const TX*>(d);
    tap_off.resize(static_cast<size_t>(c.taps));
    for (int64_t tap = 0; tap < c.taps; ++tap) tap_off[static_cast<size_t>(tap)] = wide_tap_offset(c, tap) * 4 * b_bytes;
    rt.direct = detail::QDirectB{tap_off.data(), c.taps, c.group_in / 4, quad_bytes};
  } else if (c.wide) {
    TX* d = reinterpret_cast<TX*>(padded_buf.reserve(static_cast<size_t>(g.batch * g.in_channels * c.pitch) * sizeof(TX)));
    for (int64_t n = 0; n < g.batch; ++n)
      pad_planes(c, x + n * g.in_channels * c.in_plane, x_zero_point, g.in_channels, d + n * g.in_channels * c.pitch,
                 threads);
    padded = d;
  }

  const int mr = isa.mr;
  int64_t nc = std::clamp<int64_t>(block_bytes() / (kp * b_bytes) / kQNr * kQNr, kQNr, (c.plane + kQNr - 1) / kQNr * kQNr);
  // Tasks per thread: up to kTasksPerThread when each still has
  // kMinTaskMacs of work. With one task per thread, a thread on a slower
  // core (or one the OS interrupts) holds the others up, where with several
  // the thread pool hands its last tasks to the one that is done; on small
  // convs (mobilenet_v2's, 5-50 us) the extra tasks cost more than that.
  const int64_t macs = g.batch * g.group * c.plane * c.reduction * c.group_out;
  const int64_t per_thread = std::clamp<int64_t>(macs / (kMinTaskMacs * std::max(threads, 1)), 1, kTasksPerThread);
  if (threads > 1 && g.batch * g.group == 1) {
    // Pixel blocks of equal size, as many as a multiple of the threads and
    // `per_thread` per thread while a block keeps two panels: the L2-sized
    // blocks could leave one thread 12288 pixels and the other 256
    // (mobilenet_v2's 112x112 expand conv, K = 16). A map too small for two
    // blocks per thread (7x7: 49 pixels made blocks of 32 and 17, one
    // thread doing two thirds) is one block, and its output channels are
    // split instead (below), even with one task per thread: mobilenet_v2
    // int8's 7 x 7 project convs left the worker thread idle for 20-35% of
    // their time so (2 threads, QTOOL_ISA=avx2, the thread pool's own
    // per-job timing, 2026-11-30).
    const int64_t most = c.plane / (2 * kQNr);
    if (most < 2 * threads) {
      nc = (c.plane + kQNr - 1) / kQNr * kQNr;
    } else {
      const int64_t want = (std::min(std::max<int64_t>(most, 1), std::max((c.plane + nc - 1) / nc, per_thread * threads)) +
                            threads - 1) /
                           threads * threads;
      nc = std::max<int64_t>(kQNr, (c.plane + want * kQNr - 1) / (want * kQNr) * kQNr);
    }
  }
  // The wide columns to drop: dropped by the kernel's line stores where the
  // ISA's can (lines of at least 6 pixels: a tile's panel then spans at most
  // kQLineStores lines), else computed into a scratch block copied to y.
  // Not for a short K (mobilenet_v2's stem: 27, 7 groups), where the
  // kernel's stores weigh more than its multiply-adds: that stem ran 5%
  // slower with line stores than with the scratch copy (VNNI, best and
  // median of 300 calls); resnet18's (37 groups) the same either way.
  const bool own_lines = fused && c.scratch && isa.requant_lines && c.pw >= 6 && groups >= 16;
  const bool scratch = c.scratch && !own_lines;
  // Direct blocks pack nothing: whole 32-pixel tiles, none split into a
  // tile and a lone (slower) 16-pixel panel at every block's end. Rounded
  // down: blocks sized for the threads (48 pixels of a 14 x 14 map's 210)
  // rounded up had made fewer, uneven ones (64, 64, 64, 18).
  if (direct) nc = std::max<int64_t>(2 * kQNr, nc / (2 * kQNr) * (2 * kQNr));
  const int64_t blocks = (c.plane + nc - 1) / nc, row_panels = (c.group_out + mr - 1) / mr;
  // Where block b starts: whole panels, the blocks as even as that allows
  // (a 14 x 14 map's 196 pixels in two blocks: 96 + 100, where blocks of nc
  // made 112 + 84 and left one thread idle a sixth of the time). Direct
  // blocks keep nc's (whole 32-pixel tiles, above). nc becomes the largest
  // block, which sizes the buffers below.
  const auto block_start = [&, blocks](int64_t i) {
    return direct ? std::min(c.plane, i * nc) : i >= blocks ? c.plane : i * c.plane / blocks / kQNr * kQNr;
  };
  if (!direct)
    for (int64_t i = 0; i < blocks; ++i) nc = std::max(nc, block_start(i + 1) - block_start(i));
  const int64_t outer = g.batch * g.group * blocks;
  // Fewer pixel blocks than threads (late, small layers): split the output
  // channels too, `per_thread` chunks per thread, with each pixel block
  // packed once beforehand and shared: packing it again per chunk took 5x
  // its single-thread time with twice as many chunks as threads, and made
  // mobilenet_v2's project convs slower on 2 threads than on 1.
  int64_t chunks = 1;
  const bool shared = threads > 1 && outer < threads;
  if (shared) chunks = std::min<int64_t>(row_panels, (per_thread * threads + outer - 1) / outer);
  // A 1x1 conv that widens its input (mobilenet_v2's expand convs) splits
  // its output channels instead, channel-major, so that with the thread
  // pool's per-thread shares each thread writes the channels it will read
  // in the depthwise conv that follows (which splits by channel too); only
  // the narrow input crosses between cores, and packing it twice is cheap.
  // 2 threads: depthwise convs 540-550 us in all instead of 639-659, the
  // whole model 1571-1600 instead of 1711-1774 (sum of per-op minima).
  const bool by_channel = threads > 1 && c.pointwise && g.group == 1 && c.group_in < c.group_out;
  if (by_channel) chunks = std::min<int64_t>(row_panels, threads);
  // Direct blocks (nothing packed per task) that do not divide among the
  // threads split their output channels too: resnet18's 14 x 14 layers made
  // 7 blocks, 4 for one thread and 3 for the other, and ran 1.63-1.68x
  // faster on 2 threads than on 1 where the 7 x 7 ones ran 2.1x (after:
  // 1.88-1.93x, QTOOL_ISA=avx2, per-step minima). So do blocks whose last
  // one is short: 14 x 14 maps (210 wide pixels) made blocks of 64, 64, 64
  // and 18 pixels, 128 for one thread and 82 for the other.
  if (direct && !shared && !by_channel && threads > 1 && (outer % threads != 0 || c.plane % nc != 0))
    chunks = std::min<int64_t>(row_panels, threads);
  const int64_t per_chunk = (row_panels + chunks - 1) / chunks;
  // Pixel block b: its pixels and where its input starts.
  struct Block {
    int64_t grp, n, p0, count, stride;
    const TX* xg;
  };
  auto block_of = [&](int64_t b) {
    Block k;
    const int64_t blk = b % blocks;
    k.grp = (b / blocks) % g.group, k.n = b / (blocks * g.group);
    k.p0 = block_start(blk), k.count = block_start(blk + 1) - k.p0;
    k.stride = (k.count + kQNr - 1) / kQNr * kQNr;
    const int64_t first = k.n * g.in_channels + k.grp * c.group_in;
    k.xg = direct ? reinterpret_cast<const TX*>(reinterpret_cast<const uint8_t*>(padded) + first / 4 * quad_bytes)
           : c.wide ? padded + first * c.pitch
                    : x + first * c.in_plane;
    return k;
  };
  const bool gather = !c.pointwise && !c.wide;
  // Shared blocks, in the calling thread's buffers: outer blocks of kp x nc
  // bytes and nc column sums each, packed before the product by all threads,
  // each a run of whole panels of a block (on the calling thread alone,
  // packing a 7 x 7 map's block of K = 960 took 15-17 us, the worker idle).
  thread_local AlignedBytes shared_panels;
  thread_local std::vector<int32_t> shared_sums;
  const size_t block_bytes = static_cast<size_t>(kp * ((nc + kQNr - 1) / kQNr * kQNr) * b_bytes);
  // With one chunk per thread each task packs the block itself, as the
  // widening 1x1 convs do (by_channel): no job before the product, and each
  // thread reads its own copy. mobilenet_v2 int8's 7 x 7 project convs, 2
  // threads, per-step minima: 0.86-0.95 of their time with the block packed
  // by both threads beforehand.
  const bool pack_shared = shared && chunks > threads;
  if (pack_shared && !direct) {
    uint8_t* const panels = shared_panels.reserve(static_cast<size_t>(outer) * block_bytes);
    shared_sums.resize(static_cast<size_t>(outer * nc + kQNr));
    int32_t* const sums = shared_sums.data();
    const int64_t runs = std::min<int64_t>(threads, (nc + kQNr - 1) / kQNr);
    parallel_for(threads, outer * runs, [&](int64_t task) {
      thread_local AlignedBytes rows_buf;
      const Block k = block_of(task / runs);
      const int64_t run = task % runs, block_panels = (k.count + kQNr - 1) / kQNr;
      const int64_t j0 = run * block_panels / runs * kQNr, j1 = std::min(k.count, (run + 1) * block_panels / runs * kQNr);
      if (j0 >= j1) return;
      const int64_t stride = (j1 - j0 + kQNr - 1) / kQNr * kQNr;
      uint8_t* rb = gather ? rows_buf.reserve(static_cast<size_t>(c.reduction * stride * sizeof(TX))) : nullptr;
      pack_block(c, k.xg, x_zero_point, k.p0 + j0, j1 - j0, rb,
                 panels + static_cast<size_t>(task / runs) * block_bytes + static_cast<size_t>(j0 * kp * b_bytes),
                 o.row_zp ? sums + task / runs * nc + j0 : nullptr, packed.k_tap_major(), wide_b);
    });
  }
  const uint8_t* const shared_base = pack_shared ? shared_panels.data() : nullptr;
  const int32_t* const shared_sum = pack_shared ? shared_sums.data() : nullptr;
  parallel_for(threads, outer * chunks, [&](int64_t task) {
    thread_local AlignedBytes rows_buf, panel_buf, wide_out;
    thread_local std::vector<int32_t> col_sum;
    const int64_t chunk = by_channel ? task / outer : task % chunks, b = by_channel ? task % outer : task / chunks;
    const Block k = block_of(b);
    const int64_t grp = k.grp, n = k.n, p0 = k.p0, count = k.count, stride = k.stride;
    // Output row m of this image at ybase + m * yld: y itself, or (scratch) a
    // scratch block of every output channel, copied to y at the end.
    TY* const y_image = y + n * g.out_channels * c.out_plane;
    TY* const ybase =
        scratch ? reinterpret_cast<TY*>(wide_out.reserve(static_cast<size_t>(g.out_channels * stride) * sizeof(TY)))
                : y_image + p0;
    const int64_t yld = scratch ? stride : c.out_plane;
    // Kernel-side line stores: each 32-pixel tile's, worked out once per block.
    thread_local std::vector<detail::QLineStores> tile_lines;
    if (own_lines) {
      tile_lines.resize(static_cast<size_t>((count + 2 * kQNr - 1) / (2 * kQNr)));
      for (int64_t j = 0; j < count; j += 2 * kQNr) line_stores(c, p0 + j, std::min<int64_t>(2 * kQNr, count - j),
                                                               tile_lines[static_cast<size_t>(j / (2 * kQNr))]);
    }
    const uint8_t* pb;
    const int32_t* sums;
    if (direct) {
      pb = reinterpret_cast<const uint8_t*>(k.xg);
      sums = nullptr;
    } else if (pack_shared) {
      pb = shared_base + static_cast<size_t>(b) * block_bytes;
      sums = shared_sum + b * nc;
    } else {
      uint8_t* rb = gather ? rows_buf.reserve(static_cast<size_t>(c.reduction * stride * sizeof(TX))) : nullptr;
      uint8_t* own = panel_buf.reserve(static_cast<size_t>(kp * stride * b_bytes));
      col_sum.resize(static_cast<size_t>(stride));
      pack_block(c, k.xg, x_zero_point, p0, count, rb, own, o.row_zp ? col_sum.data() : nullptr, packed.k_tap_major(),
                 wide_b);
      pb = own;
      sums = col_sum.data();
    }
    detail::QOutput ot = o;
    ot.ldy = yld;
    alignas(64) int32_t tile[2][detail::kQMaxMr * kQNr];
    const uint8_t* wg = packed.panels(grp);
    const int64_t p_begin = chunk * per_chunk, p_end = std::min(row_panels, p_begin + per_chunk);
    auto finish = [&](const int32_t* t, int64_t i0, int64_t mv, int64_t j) {
      ot.y = ybase + j;
      ot.col_sum = o.row_zp ? sums + j : nullptr;
      isa.finish(t, kQNr, mv, std::min<int64_t>(kQNr, count - j), i0, 0, ot);
    };
    for (int64_t p = p_begin; p < p_end; ++p) {
      const int64_t i0 = grp * c.group_out + p * mr;
      const int64_t mv = std::min<int64_t>(mr, c.group_out - p * mr);
      const uint8_t* wp = wg + p * mr * kp * a_bytes;
      if (fused) {
        detail::QRequantTile t = rt;
        t.row_add = rt.row_add + i0, t.row_scale = rt.row_scale + i0, t.row_zp = rt.row_zp ? rt.row_zp + i0 : nullptr;
        t.rows = static_cast<int>(mv), t.ldy = yld;
        const int64_t panel_bytes = direct ? kQNr * 4 * b_bytes : kQNr * kp * b_bytes;
        int64_t j = 0;
        if (requant_run && mv == mr && !own_lines && count >= 2 * kQNr) {  // whole tiles, then the rest as before
          const int64_t tiles = count / (2 * kQNr);
          t.y = reinterpret_cast<uint8_t*>(ybase + i0 * yld);
          t.col_sum = rt.row_zp ? sums : nullptr;
          requant_run(groups, wp, direct ? pb + p0 * 4 * b_bytes : pb, panel_bytes, tiles, t);
          j = tiles * 2 * kQNr;
        }
        for (; j < count; j += 2 * kQNr) {
          t.cols = static_cast<int>(std::min<int64_t>(2 * kQNr, count - j));
          t.y = reinterpret_cast<uint8_t*>(ybase + i0 * yld + j);
          t.col_sum = rt.row_zp ? sums + j : nullptr;
          if (own_lines) t.lines = &tile_lines[static_cast<size_t>(j / (2 * kQNr))];
          // B panel j: packed (K x 16 bytes each), or direct: at wide pixel p0 + j.
          const uint8_t* b0 = direct ? pb + (p0 + j) * 4 * b_bytes : pb + j * kp * b_bytes;
          requant_kernel(groups, wp, b0, t.cols > kQNr ? b0 + panel_bytes : b0, t);
        }
        continue;
      }
      int64_t j = 0;
      if (two_panels) {
        for (; j + kQNr < count; j += 2 * kQNr) {  // two panels, the second possibly partial
          two_panels(groups, wp, pb + j * kp, pb + (j + kQNr) * kp, tile[0], tile[1]);
          finish(tile[0], i0, mv, j);
          finish(tile[1], i0, mv, j + kQNr);
        }
      }
      for (; j < count; j += kQNr) {
        one_panel(groups, wp, pb + j * kp, tile[0]);
        finish(tile[0], i0, mv, j);
      }
    }
    if (scratch) {
      const int64_t r0 = grp * c.group_out + p_begin * mr, r1 = grp * c.group_out + std::min(c.group_out, p_end * mr);
      copy_wide(c, ybase, yld, r0, r1, p0, count, y_image);
    }
  });
}

#define QT_INSTANTIATE_PACKED_QCONV(TW)                                                                        \
  template PackedQConvWeights::PackedQConvWeights(const TW*, int64_t, int64_t, int64_t, const TW*, int64_t, \
                                                  const detail::QGemmIsa&, int64_t);
QT_INSTANTIATE_PACKED_QCONV(uint8_t)
QT_INSTANTIATE_PACKED_QCONV(int8_t)
#undef QT_INSTANTIATE_PACKED_QCONV

#define QT_INSTANTIATE_QCONV_FAST(TX, TY)                                                                      \
  template void qconv_fast<TX, TY>(const ConvGeometry&, const TX*, TX, const PackedQConvWeights&, const int32_t*, \
                                   const Requantizer*, TY*, int);
QT_INSTANTIATE_QCONV_FAST(uint8_t, uint8_t)
QT_INSTANTIATE_QCONV_FAST(uint8_t, int8_t)
QT_INSTANTIATE_QCONV_FAST(uint8_t, int32_t)
QT_INSTANTIATE_QCONV_FAST(int8_t, uint8_t)
QT_INSTANTIATE_QCONV_FAST(int8_t, int8_t)
QT_INSTANTIATE_QCONV_FAST(int8_t, int32_t)
#undef QT_INSTANTIATE_QCONV_FAST

}  // namespace quant::kernels
