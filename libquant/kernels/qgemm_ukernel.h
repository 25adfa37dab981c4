// Integer GEMM micro-kernels and output stages (internal to qgemm_packed.cpp,
// qconv_fast.cpp and their tests).
//
// Operands are 8-bit and packed for the dot-product instructions (x86
// VPDPBUSD: four u8 x s8 products summed into one int32 lane):
//  - the row operand A (broadcast): panels of MR rows; for each group of four
//    k, the panel holds MR x 4 bytes (row r's four bytes at r*4);
//  - the column operand B: panels of kQNr = 16 columns; for each group of four
//    k, 64 bytes (column c's four bytes at c*4).
// K is padded with zeros to a multiple of 4, so padding adds nothing. One
// operand holds uint8 and the other int8 bytes (callers flip the sign bit of
// an operand of the other type and correct with the zero points); the
// micro-kernel variant says which: a_unsigned (A u8, B s8) or a_signed.
//
// A micro-kernel computes the full MR x 16 tile of raw dot products
//   tile[r][c] = sum_k A[r][k] * B[k][c]   (int32, wrapping modulo 2^32)
// over `groups` groups of four k. Every ISA's kernel is exact: VPDPBUSD does
// not saturate (only VPDPBUSDS does), and the AVX2 kernel widens to int16 and
// uses VPMADDWD, whose pair sums fit int32, instead of VPMADDUBSW, whose
// int16 pair sums saturate for u8 x s8 (255*127*2 > 32767; MLAS's AVX2 U8S8
// kernel accepts that saturation, its U8U8 kernel widens to int16 as here).
//
// The exception that proves it: an ISA may also have "pairs" kernels
// (QGemmIsa::a_unsigned_pairs / a_signed_pairs; AVX2's use VPMADDUBSW) that
// are exact only when every pair of neighbouring bytes (k, k+1 for even k:
// bytes 2i, 2i+1 of the packed int8 operand, as the layout above keeps four
// consecutive k of one row or column in each aligned 4 bytes) passes
// s8_pairs_fit_int16. The weights are checked once, when packed
// (PackedQB::pairs_bounded, PackedQConvWeights::pairs_bounded), and the
// callers pick a pairs kernel only for weights that pass, so its tile equals
// the exact kernel's bit for bit.
//
// The output stage (QOutput) then applies the zero-point corrections, bias
// and requantization:
//   acc(i, j) = tile + row_add[i] + col_add[j] - row_zp[i] * col_sum[j] - row_sum[i] * col_zp[j]
// (uint32 arithmetic, wrapping like the reference kernels) and stores acc as
// int32, or requantize_one(acc) as uint8 / int8, at y[i * ldy + j].
#pragma once

#include <cstdint>
#include <vector>

#include "libquant/kernels/requant.h"

namespace quant::kernels::detail {

inline constexpr int kQNr = 16;      // columns per B panel
inline constexpr int kQKGroup = 4;   // k per dot-product group
inline constexpr int kQMaxMr = 32;   // the tallest A panel of any ISA (AMX's)

inline int64_t q_padded_k(int64_t k) { return (k + kQKGroup - 1) / kQKGroup * kQKGroup; }

// tile: MR x kQNr int32, row-major, overwritten.
using QMicroKernel = void (*)(int64_t groups, const uint8_t* a, const uint8_t* b, int32_t* tile);
// Two B panels against one A panel (tile0 from b0, tile1 from b1): each A
// word loaded once feeds twice the products, and twice the accumulators hide
// the dot-product latency. Bit for bit two QMicroKernel calls.
using QMicroKernel2 = void (*)(int64_t groups, const uint8_t* a, const uint8_t* b0, const uint8_t* b1, int32_t* tile0,
                               int32_t* tile1);

enum class QOutType { S32, U8, S8 };

struct QOutput {
  const int32_t* row_add = nullptr;  // each pointer may be null (term absent)
  const int32_t* col_add = nullptr;
  const int32_t* row_zp = nullptr;   // with col_sum
  const int32_t* col_sum = nullptr;
  const int32_t* row_sum = nullptr;  // with col_zp
  const int32_t* col_zp = nullptr;
  const Requantizer* requant = nullptr;  // for U8 / S8
  bool channel_is_row = false;           // the Requantizer's channel is i (else j)
  bool vector_ok = false;                // Float mode with finite multipliers: SIMD rounding is exact
  QOutType type = QOutType::S32;
  void* y = nullptr;
  int64_t ldy = 0;
};

// True when a Requantizer's float multipliers let the vector output stage
// reproduce requantize_one exactly (all finite, so no NaN reaches the clamp).
bool requant_vector_ok(const Requantizer* r);

// One row of A (q_padded_k(k) uint8 values, as bytes and widened to int16)
// against one B panel: out[j] = sum_k a[k] b[k][j] for the panel's kQNr
// columns, exact for any bytes (no int16 pair sums). For M = 1, where a
// micro-kernel would compute MR rows to keep one.
using QRowKernel = void (*)(int64_t groups, const uint8_t* a, const int16_t* a_wide, const uint8_t* b, int32_t* out);

// Applies the output stage to rows [i0, i0+rows) x columns [j0, j0+cols);
// acc(i - i0, j - j0) at acc[(i - i0) * acc_stride + (j - j0)].
using QFinish = void (*)(const int32_t* acc, int64_t acc_stride, int64_t rows, int64_t cols, int64_t i0, int64_t j0,
                         const QOutput& o);

// Where a fused kernel finds B's groups of four k. Packed panels (taps = 0):
// group g at b + g * 64 * element bytes. A direct convolution (qconv_fast's
// channel-interleaved planes, no packing): group (tap, quad) at
// b + tap_off[tap] + quad * quad_pitch (bytes), taps x quads groups, tap
// major, the order of the weights' K; the second panel is the first's
// address plus 16 pixels either way, so one walk serves both.
struct QDirectB {
  const int64_t* tap_off = nullptr;
  int64_t taps = 0, quads = 0, quad_pitch = 0;
};

// The walk as kernels loop over it, for t < taps, q < quads: offset
// tap_off[t] + q * quad_pitch; packed panels as one tap of `groups` quads.
inline constexpr int64_t kNoTapOffset = 0;
inline QDirectB b_walk(int64_t groups, int64_t step, const QDirectB& d) {
  return d.taps ? d : QDirectB{&kNoTapOffset, 1, groups, step};
}

// Where a wide tile's columns go when the kernel drops the wide path's extra
// columns itself (QGemmIsa::requant_lines): per B panel (16 columns), up to
// kQLineStores stores of the panel's 16 output bytes, store s of panel h
// writing the lanes in mask[h][s] at y + r * ldy + 16 h - shift[h][s] (row r
// of the tile; count[h] stores). Each store is one output line's part of the
// panel, shifted back by the columns dropped before that line.
inline constexpr int kQLineStores = 4;
struct QLineStores {
  uint16_t mask[2][kQLineStores] = {};
  int32_t shift[2][kQLineStores] = {};
  int count[2] = {};
};

// The output stage fused into a micro-kernel, for the convolution (rows are
// output channels): the common case of requant_vector_ok Float
// requantization to uint8 / int8. Per valid element, the same operations in
// the same order as the vector q_finish stages (so the same bits):
//   v = tile + row_add[r] - row_zp[r] * col_sum[c]   (row_zp may be null)
//   y[r * ldy + c] = int(clamp(float(v) * row_scale[r], lo, hi)) + zero_point
// stored as a byte (the value is inside the output range). The accumulators
// never leave the registers, and everything constant per call is computed
// once by the caller rather than per tile.
struct QRequantTile {
  const int32_t* row_add = nullptr;    // rows entries
  const float* row_scale = nullptr;    // rows entries
  const int32_t* row_zp = nullptr;     // null, or rows entries (then col_sum: cols entries)
  const int32_t* col_sum = nullptr;
  float lo = 0, hi = 0;                // clamp bounds, less the zero point
  int32_t zero_point = 0;
  uint8_t* y = nullptr;
  int64_t ldy = 0;
  int rows = 0, cols = 0;              // valid rows (<= MR), columns (<= 2 * kQNr)
  QDirectB direct;                     // B's groups (b0 and b1 alike)
  const QLineStores* lines = nullptr;  // null: columns 0 .. cols - 1 stored contiguously
};
// A s8 against one (cols <= kQNr) or two u8 B panels (b1 read only when
// cols > kQNr), then the fused output stage.
using QMicroKernelRequant = void (*)(int64_t groups, const uint8_t* a, const uint8_t* b0, const uint8_t* b1,
                                     const QRequantTile& t);

// A QMicroKernelRequant over `tiles` whole tiles in a row: t.rows == mr, 2 *
// kQNr columns each, t.lines null. Tile i reads B panels b + 2 i panel_bytes
// and b + (2 i + 1) panel_bytes, writes t.y + 2 i kQNr and reads t.col_sum +
// 2 i kQNr (with row_zp): the bits of one QMicroKernelRequant call per tile.
using QMicroKernelRequantRun = void (*)(int64_t groups, const uint8_t* a, const uint8_t* b, int64_t panel_bytes,
                                        int64_t tiles, const QRequantTile& t);

struct QGemmIsa {
  const char* name;
  int mr;
  QMicroKernel a_unsigned;  // A u8, B s8
  QMicroKernel a_signed;    // A s8, B u8
  QFinish finish;
  QMicroKernel2 a_signed_x2;  // a_signed on two B panels; null: call a_signed twice
  QMicroKernelRequant a_signed_requant = nullptr;  // null: a_signed(_x2) then finish
  // a_unsigned / a_signed when the int8 operand (the weights: B of the
  // GEMM, A of the convolution) passes s8_pairs_fit_int16; null: none.
  QMicroKernel a_unsigned_pairs = nullptr;
  QMicroKernel a_signed_pairs = nullptr;
  // a_signed_pairs with the output stage fused; null: none.
  QMicroKernelRequant a_signed_pairs_requant = nullptr;
  // a_signed on A widened at packing time: each packed byte stored as the
  // int16 it stands for, in the same order (widen_q_panels), so the kernel
  // needs no per-use widening of A; and the same with the output stage
  // fused. Null: none.
  QMicroKernel a_signed_wide = nullptr;
  QMicroKernelRequant a_signed_wide_requant = nullptr;
  // a_unsigned on A (the activations, packed per call) widened as packed
  // (zero-extended); null: none.
  QMicroKernel a_unsigned_wide = nullptr;
  // a_signed_wide_requant on B panels widened as packed too (each uint8 byte
  // stored as its int16, same order: 2 bytes per element, panels of
  // kQNr * K elements); null: none.
  QMicroKernelRequant a_signed_wide_wb_requant = nullptr;
  // A_unsigned for a single row of A; null: none (the micro-kernel runs).
  QRowKernel a_unsigned_row = nullptr;
  // The fused kernels honour QRequantTile::lines.
  bool requant_lines = false;
  // a_signed_pairs_requant over whole tiles; null: one call per tile.
  QMicroKernelRequantRun a_signed_pairs_requant_run = nullptr;
  // A (the convolution's weights) packed as AMX tiles instead of the layout
  // above (pack_q_tiles): per panel of mr = kQAmxMr rows and chunk of
  // kQAmxGroups groups of four k, two tiles of 16 rows x 64 bytes, row r's
  // 64 k in order, K zero-padded to whole chunks. Only a_signed,
  // a_signed_x2 and a_signed_requant exist (no a_unsigned: the GEMM of
  // qgemm_packed.h keeps its ISA's layout); B is read as everywhere, a
  // chunk's 16 groups as the 16 rows of a tile, so a chunk must not cross
  // a tap of a direct B (taps == 1 or quads a multiple of kQAmxGroups).
  bool amx_tiles = false;
  // widen_q_panels of int8 bytes (sign-extended) into another buffer, at
  // the ISA's width: for weights kept as int8 and widened panel by panel
  // just before a_signed_wide reads them (PackedQConvWeights::
  // widen_on_use); null: none (weights widen when packed).
  void (*widen_panel)(const uint8_t* bytes, int64_t count, int16_t* out) = nullptr;
};

// Groups of four k per AMX chunk: a tile row of 64 bytes.
inline constexpr int64_t kQAmxGroups = 16;
// Rows (output channels) per AMX weight panel: two tiles of 16.
inline constexpr int kQAmxMr = 32;

// Packed bytes as int16, sign-extended (int8 weights, for a_signed_wide) or
// zero-extended (uint8 activations, for a_unsigned_wide); in place when out
// is bytes itself (2 * count bytes there), back to front.
void widen_q_panels(const uint8_t* bytes, int64_t count, int16_t* out, bool is_signed = true);

// Whether VPMADDUBSW (Intel SDM: "Multiply and Add Packed Signed and Unsigned
// Bytes": each unsigned byte of the first operand times the signed byte of the
// second, adjacent products added into a signed int16 with saturation) is
// exact for these packed int8 bytes against any uint8 bytes: for every pair
// (bytes 2i, 2i+1) the sum a0 w0 + a1 w1 over a in [0, 255]^2 reaches
// 255 * P at most and -255 * N at least, P the sum of the pair's positive
// values and N of its negative ones' magnitudes, so it fits int16 exactly
// when 255 P <= 32767 and 255 N <= 32768, i.e. P <= 128 and N <= 128. (Pairs
// of opposite signs always pass; |w0| + |w1| <= 128, calib/pair_bound.h,
// implies it.) `count` is even.
bool s8_pairs_fit_int16(const uint8_t* bytes, int64_t count);

// The fastest ISA this CPU runs (chosen once), and every ISA it runs,
// portable first (tests compare each against the reference kernels).
const QGemmIsa& best_qgemm_isa();
std::vector<const QGemmIsa*> supported_qgemm_isas();
// The same for the weights of a (not depthwise) convolution, where the AMX
// kernels may take part: AMX where the CPU and QTOOL_ISA allow it.
const QGemmIsa& best_conv_qgemm_isa();
std::vector<const QGemmIsa*> supported_conv_qgemm_isas();

// Panels of the A layout above (mr rows, per group mr x 4 bytes, K padded
// to `groups` groups) rewritten as AMX tiles (QGemmIsa::amx_tiles), panel by
// panel: `panels` panels of kQAmxMr rows from `src` to `dst`, which holds
// panels x kQAmxMr x chunks x 64 bytes (chunks = groups / kQAmxGroups rounded up).
void pack_q_tiles(const uint8_t* src, int64_t panels, int64_t groups, uint8_t* dst);

// What the vector output stages need of a QOutput, read once per call: the
// requantized range less the zero point, [lo, hi] (float clamp bounds), the
// zero point, and whether the multipliers are per channel.
struct QFinishParams {
  bool requant = false, per_channel = false;
  int32_t lo = 0, hi = 0, zero_point = 0;
};
QFinishParams finish_params(const QOutput& o);

// The portable output stage (scalar; the definition the SIMD ones match).
void q_finish_scalar(const int32_t* acc, int64_t acc_stride, int64_t rows, int64_t cols, int64_t i0, int64_t j0,
                     const QOutput& o);
// One value of the output stage, for SIMD tails.
void q_finish_one(uint32_t v, int64_t i, int64_t j, const QOutput& o);

// ISA kernels, defined in qgemm_ukernel_<isa>.cpp; null when not compiled in.
extern const QGemmIsa* const kQGemmIsaAvx2;
extern const QGemmIsa* const kQGemmIsaAvxVnni;
extern const QGemmIsa* const kQGemmIsaAvx512Vnni;
extern const QGemmIsa* const kQGemmIsaAmx;
// Loads the AMX kernels' tile configuration (tmm0-7: 16 rows of 64 bytes)
// in the calling thread, once; every AMX kernel calls it first, and so
// must other code running tile instructions in a thread those kernels use
// (kernel_bench's peak loop). Only where kQGemmIsaAmx runs.
void amx_configure_thread();
#if defined(__x86_64__) && defined(__GNUC__)
// The AVX2 output stage, shared by the x86 ISAs (qgemm_ukernel_avx2.cpp).
void q_finish_avx2(const int32_t* acc, int64_t acc_stride, int64_t rows, int64_t cols, int64_t i0, int64_t j0,
                   const QOutput& o);
// The AVX-512 output stage (qgemm_ukernel_avx512.cpp), AMX's too.
void q_finish_avx512(const int32_t* acc, int64_t acc_stride, int64_t rows, int64_t cols, int64_t i0, int64_t j0,
                     const QOutput& o);
#endif

}  // namespace quant::kernels::detail
