// AMX-INT8 kernels for the integer convolution (QGemmIsa::amx_tiles): a
// 32 x 32 block of output channels x pixels in four int32 tiles of 16 x 16,
// TDPBSUD (Intel SDM: "Dot Product of Signed/Unsigned Bytes with Dword
// Accumulation": each int32 element of the destination adds the four
// products of signed bytes of the first source's row with unsigned bytes of
// the second's column, no saturation) with the weights (int8, packed as
// tiles of 16 rows x 64 k) as the first source and B's panels (uint8, 16
// pixels x 4 k per 64-byte group, qgemm_ukernel.h) as the second: a chunk of
// 16 groups is one B tile of 16 rows. The sums are those of VPDPBUSD, the
// same wrapping int32 additions of the same exact products, so the output
// matches every other ISA's bit for bit; the output stage is the AVX-512
// one (qgemm_requant_avx512.h) on the sums read back from the tiles.
//
// Tile registers, one configuration for every call (each thread loads it
// once, LDTILECFG): tmm0-3 the sums (rows 0-15 and 16-31 against pixels
// 0-15 and 16-31), tmm4-5 the two weight tiles of a chunk, tmm6-7 the two B
// tiles, all 16 rows of 64 bytes. A chunk with fewer than 16 groups (K's
// last, or a one-tap direct B with fewer quads) still loads 16 B rows: the
// weights' zero padding multiplies the rows past K, which the callers keep
// readable (qconv_fast.cpp's slack after its panels and planes).
#include "libquant/kernels/qgemm_ukernel.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <immintrin.h>

#include <cstring>

#include "libquant/kernels/qgemm_requant_avx512.h"

namespace quant::kernels::detail {
namespace {

constexpr int kMr = kQAmxMr;
constexpr int64_t kTileBytes = 1024;  // 16 rows x 64 bytes

// The 64-byte operand of LDTILECFG (Intel SDM, "LDTILECFG"): palette 1,
// then per tile its bytes per row and its rows.
struct TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Sums of rows 0-15 (and, kHigh, 16-31) against b0's 16 pixels (and, kTwo,
// b1's) into tmm0 / tmm1 (tmm2 / tmm3). B's groups as `direct` says
// (QDirectB; packed panels when direct.taps is 0).
template <bool kTwo, bool kHigh>
__attribute__((target("amx-tile,amx-int8"), always_inline)) inline void dot_tiles(int64_t groups, const uint8_t* a,
                                                                                   const uint8_t* b0, const uint8_t* b1,
                                                                                   const QDirectB& direct) {
  amx_configure_thread();
  _tile_zero(0);
  if (kTwo) _tile_zero(1);
  if (kHigh) _tile_zero(2);
  if (kTwo && kHigh) _tile_zero(3);
  const int64_t chunks = (groups + kQAmxGroups - 1) / kQAmxGroups;
  for (int64_t c = 0; c < chunks; ++c, a += 2 * kTileBytes) {
    int64_t at = c * kTileBytes, stride = kQNr * kQKGroup;
    if (direct.taps) {  // a chunk within one tap (amx_tiles' contract)
      const int64_t g0 = c * kQAmxGroups, tap = g0 / direct.quads;
      at = direct.tap_off[tap] + (g0 - tap * direct.quads) * direct.quad_pitch, stride = direct.quad_pitch;
    }
    _tile_loadd(4, a, 64);
    _tile_loadd(6, b0 + at, stride);
    if (kTwo) _tile_loadd(7, b1 + at, stride);
    if (kHigh) _tile_loadd(5, a + kTileBytes, 64);
    _tile_dpbsud(0, 4, 6);
    if (kTwo) _tile_dpbsud(1, 4, 7);
    if (kHigh) _tile_dpbsud(2, 5, 6);
    if (kTwo && kHigh) _tile_dpbsud(3, 5, 7);
  }
}

// QMicroKernel (a_signed): the 32 x 16 tile of one B panel.
__attribute__((target("amx-tile,amx-int8"))) void amx_a_signed(int64_t groups, const uint8_t* a, const uint8_t* b,
                                                              int32_t* tile) {
  dot_tiles<false, true>(groups, a, b, b, QDirectB{});
  _tile_stored(0, tile, kQNr * 4);
  _tile_stored(2, tile + 16 * kQNr, kQNr * 4);
}

// QMicroKernel2 (a_signed_x2): two B panels.
__attribute__((target("amx-tile,amx-int8"))) void amx_a_signed_x2(int64_t groups, const uint8_t* a, const uint8_t* b0,
                                                                 const uint8_t* b1, int32_t* tile0, int32_t* tile1) {
  dot_tiles<true, true>(groups, a, b0, b1, QDirectB{});
  _tile_stored(0, tile0, kQNr * 4);
  _tile_stored(2, tile0 + 16 * kQNr, kQNr * 4);
  _tile_stored(1, tile1, kQNr * 4);
  _tile_stored(3, tile1 + 16 * kQNr, kQNr * 4);
}

// QMicroKernelRequant (a_signed_requant): the sums, stored from the tiles
// (rows of 32 int32), then the output stage row by row.
template <bool kTwo, bool kHigh, bool kLines>
__attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl"))) void amx_requant(int64_t groups, const uint8_t* a,
                                                                                      const uint8_t* b0, const uint8_t* b1,
                                                                                      const QRequantTile& t) {
  dot_tiles<kTwo, kHigh>(groups, a, b0, b1, t.direct);
  alignas(64) int32_t sums[kMr][2 * kQNr];
  constexpr int64_t kRowBytes = 2 * kQNr * 4;
  _tile_stored(0, &sums[0][0], kRowBytes);
  if (kTwo) _tile_stored(1, &sums[0][kQNr], kRowBytes);
  if (kHigh) _tile_stored(2, &sums[16][0], kRowBytes);
  if (kTwo && kHigh) _tile_stored(3, &sums[16][kQNr], kRowBytes);
  const int c0 = t.cols < kQNr ? t.cols : kQNr;
  const __mmask16 m0 = static_cast<__mmask16>((1u << c0) - 1);
  const __mmask16 m1 = static_cast<__mmask16>((1u << (t.cols - c0)) - 1);
  for (int r = 0; r < t.rows; ++r) {
    requant_row<kLines>(_mm512_load_si512(&sums[r][0]), r, 0, m0, t);
    if (kTwo) requant_row<kLines>(_mm512_load_si512(&sums[r][kQNr]), r, kQNr, m1, t);
  }
}

template <bool kLines>
void amx_requant_rows(int64_t groups, const uint8_t* a, const uint8_t* b0, const uint8_t* b1, const QRequantTile& t) {
  // Rows 16-31 only where the panel has them (mobilenet_v2's 16 and 24
  // output channels fill one tile or part of two).
  if (t.rows > 16) {
    if (t.cols > kQNr) amx_requant<true, true, kLines>(groups, a, b0, b1, t);
    else amx_requant<false, true, kLines>(groups, a, b0, b0, t);
  } else {
    if (t.cols > kQNr) amx_requant<true, false, kLines>(groups, a, b0, b1, t);
    else amx_requant<false, false, kLines>(groups, a, b0, b0, t);
  }
}

void amx_a_signed_requant(int64_t groups, const uint8_t* a, const uint8_t* b0, const uint8_t* b1,
                          const QRequantTile& t) {
  if (t.lines) amx_requant_rows<true>(groups, a, b0, b1, t);
  else amx_requant_rows<false>(groups, a, b0, b1, t);
}

const QGemmIsa kIsa = [] {
  QGemmIsa isa{"amx", kMr, nullptr, amx_a_signed, q_finish_avx512, amx_a_signed_x2, amx_a_signed_requant};
  isa.requant_lines = true;
  isa.amx_tiles = true;
  return isa;
}();

}  // namespace

const QGemmIsa* const kQGemmIsaAmx = &kIsa;

__attribute__((target("amx-tile"))) void amx_configure_thread() {
  thread_local bool configured = false;
  if (configured) return;
  TileConfig c;
  for (int i = 0; i < 8; ++i) c.colsb[i] = 64, c.rows[i] = 16;
  // Not GCC 12's _tile_loadconfig: its memory operand is 8 bytes (a
  // pointer's), so the compiler may drop the stores to the other 56 (it
  // did in kernel_bench: LDTILECFG then faulted on a garbage palette). Here
  // the operand is the whole 64-byte configuration.
  __asm__ volatile("ldtilecfg %0" : : "m"(c));
  configured = true;
}

}  // namespace quant::kernels::detail

#else

namespace quant::kernels::detail {
const QGemmIsa* const kQGemmIsaAmx = nullptr;
void amx_configure_thread() {}
}

#endif
