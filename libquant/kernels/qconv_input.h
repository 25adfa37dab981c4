// The int8 fast convolution's B operand, the activations, as qconv_fast.cpp
// lays it out (internal to it): the shape it derives from a ConvGeometry,
// the zero-padded phase planes of the wide path and their channel-interleaved
// form (the direct path), B panels packed per block, and the copy of a wide
// block's rows back to y.
#pragma once

#include <cstdint>

#include "libquant/kernels/conv.h"
#include "libquant/kernels/qconv_shape.h"
#include "libquant/kernels/qgemm_ukernel.h"

namespace quant::kernels::detail {

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
struct QFastShape : QConvShape {
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

// The shape of g's convolution as qconv_fast computes it: pointwise, wide
// (its phase planes' sizes) or neither (rows gathered per block).
QFastShape qfast_shape(const ConvGeometry& g);

// Where tap `tap` of a wide conv reads for wide pixel 0, in pixels from the
// start of a channel's phase planes: tap (ky, kx) reads phase (d1 ky % S1,
// d2 kx % S2) at (d1 ky / S1) * pw + d2 kx / S2 (QFastShape).
int64_t wide_tap_offset(const QFastShape& c, int64_t tap);

// The phase planes of the wide path for one image: channel ch of x into
// dst + ch * pitch, phase (a, b) at + slot[a][b] * phase_pitch (the phases
// no tap reads are skipped).
template <class TX>
void pad_planes(const QFastShape& c, const TX* x, TX zx, int64_t channels, TX* dst, int threads);

// The line stores (QLineStores) of a wide tile: `cols` wide pixels
// from q0, two panels of 16; each panel's lanes grouped by output line, the
// dropped columns (ox >= out_w) in none, each group shifted back by the
// columns dropped before its line.
void line_stores(const QFastShape& c, int64_t q0, int64_t cols, QLineStores& ls);

// Pixels per channel quad of the direct path's planes: the phase planes'
// pitch rounded up to whole 16-pixel panels.
int64_t quad_pixels(const QFastShape& c);

// The direct path's input for one image: the phase planes of channels
// 4q .. 4q + 3 interleaved, quad q at dst + q * quad_pixels * 4 * eb bytes,
// pixel i's four channels at + i * 4 * eb (in the uint8 domain, as int16
// when kWide): 16 pixels of a quad are exactly a B panel's group of four k,
// so the kernels read their panels here with no packing at all.
template <class TX, bool kWide>
void pad_quads(const QFastShape& c, const TX* x, TX zx, int64_t channels, uint8_t* dst, int threads);

// Packs output pixels [p0, p0+count) (wide pixels when c.wide, x then being
// the padded planes) of one image and group as B panels
// (uint8 domain) and, when col_sum is not null, their column sums.
template <class TX>
void pack_block(const QFastShape& c, const TX* x, TX zx, int64_t p0, int64_t count, uint8_t* rows_buf, uint8_t* panels,
                int32_t* col_sum, bool tap_major, bool wide_b);

// Copies the wide block (wide pixels [p0, p0+count), row r at src + r * ld)
// of rows [r0, r1) to y (row r at y + r * out_plane), dropping the columns
// past the output line.
template <class TY>
void copy_wide(const QFastShape& c, const TY* src, int64_t ld, int64_t r0, int64_t r1, int64_t p0, int64_t count, TY* y);

}  // namespace quant::kernels::detail
