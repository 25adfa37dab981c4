#include "libquant/kernels/pool_max_2d.h"
#include "libquant/kernels/cpu.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QTOOL_POOL_SIMD 1
#endif

namespace quant::kernels {

#ifdef QTOOL_POOL_SIMD
// GCC 12 warns inside its own AVX-512 headers (their _mm512_undefined_* sources).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace {

// Lanes [0, lanes) whose column col + lane lies in [0, w), as a bit mask.
inline uint64_t inside_mask(int64_t col, int64_t w, int64_t lanes) {
  const int64_t lo = std::clamp<int64_t>(-col, 0, lanes), hi = std::clamp<int64_t>(w - col, lo, lanes);
  const uint64_t below_hi = hi == 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1;
  return below_hi & ~((uint64_t{1} << lo) - 1);
}

// row + col as an address for a masked load, formed as an integer: col may
// be negative (the masked-off lanes are never read).
template <class T>
const T* shifted(const T* row, int64_t col) {
  return reinterpret_cast<const T*>(reinterpret_cast<uintptr_t>(row) + static_cast<uintptr_t>(col) * sizeof(T));
}

// The whole input of a call (every plane), which a load may read past a
// row's ends without leaving.
template <class T>
struct Readable {
  const T* begin;
  const T* end;
};

// The vector operations the pool needs, per element type: 16 floats or 64 bytes.
struct F32Lanes {
  using T = float;
  using Vec = __m512;
  static constexpr int64_t kLanes = 16;
  // BW too: pool_plane is compiled for both, and the compiler may use it anywhere there.
  static bool cpu() { return cpu_supports("avx512f") && cpu_supports("avx512bw"); }
  __attribute__((target("avx512f"))) static Vec load(const T* p) { return _mm512_loadu_ps(p); }
  __attribute__((target("avx512f"))) static void store(T* p, Vec v) { _mm512_storeu_ps(p, v); }
  __attribute__((target("avx512f"))) static void store_first(T* p, Vec v, int64_t n) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((uint32_t{1} << n) - 1), v);
  }
  __attribute__((target("avx512f"))) static Vec splat(T v) { return _mm512_set1_ps(v); }
  // Elements [col, col + 16) of a row of w, low outside it (the edge
  // buffer is for the types without masked loads).
  __attribute__((target("avx512f"))) static Vec load_edge(const T* row, int64_t col, int64_t w, Vec low, T*,
                                                      const Readable<T>&) {
    return _mm512_mask_loadu_ps(low, static_cast<__mmask16>(inside_mask(col, w, 16)), shifted(row, col));
  }
  // v > m ? v : m: VMAXPS returns its second operand unless the first is greater (NaN included).
  __attribute__((target("avx512f"))) static Vec keep_max(Vec v, Vec m) { return _mm512_max_ps(v, m); }
  // Elements 0, 2, ..., 30 and 1, 3, ..., 31 of the 32 in a then b.
  __attribute__((target("avx512f"))) static void split(Vec a, Vec b, Vec& even, Vec& odd) {
    const __m512i e = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i o = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    even = _mm512_permutex2var_ps(a, e, b);
    odd = _mm512_permutex2var_ps(a, o, b);
  }
  // Lanes 1 to 15 of a, then lane 0 of b: the window's third column (stride 2).
  __attribute__((target("avx512f"))) static Vec next_lane(Vec a, Vec b) {
    const __m512i up = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
    return _mm512_permutex2var_ps(a, up, b);
  }
};

template <class Byte>
struct ByteLanes {
  using T = Byte;
  using Vec = __m512i;
  static constexpr int64_t kLanes = 64;
  static bool cpu() { return cpu_supports("avx512f") && cpu_supports("avx512bw"); }
  __attribute__((target("avx512f,avx512bw"))) static Vec load(const T* p) { return _mm512_loadu_si512(p); }
  __attribute__((target("avx512f,avx512bw"))) static void store(T* p, Vec v) { _mm512_storeu_si512(p, v); }
  __attribute__((target("avx512f,avx512bw"))) static void store_first(T* p, Vec v, int64_t n) {
    _mm512_mask_storeu_epi8(p, n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1, v);
  }
  __attribute__((target("avx512f,avx512bw"))) static Vec splat(T v) { return _mm512_set1_epi8(static_cast<char>(v)); }
  __attribute__((target("avx512f,avx512bw"))) static Vec load_edge(const T* row, int64_t col, int64_t w, Vec low, T*,
                                                      const Readable<T>&) {
    return _mm512_mask_loadu_epi8(low, inside_mask(col, w, 64), shifted(row, col));
  }
  __attribute__((target("avx512f,avx512bw"))) static Vec keep_max(Vec v, Vec m) {
    if constexpr (std::is_signed_v<T>) return _mm512_max_epi8(v, m);
    return _mm512_max_epu8(v, m);
  }
  // The low bytes of the 16-bit words of lo then hi.
  __attribute__((target("avx512f,avx512bw"))) static Vec low_bytes(Vec lo, Vec hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi16_epi8(lo)), _mm512_cvtepi16_epi8(hi), 1);
  }
  // Even bytes are the low bytes of the 16-bit words, odd bytes the high ones.
  __attribute__((target("avx512f,avx512bw"))) static void split(Vec a, Vec b, Vec& even, Vec& odd) {
    even = low_bytes(a, b);
    odd = low_bytes(_mm512_srli_epi16(a, 8), _mm512_srli_epi16(b, 8));
  }
  // Bytes 1 to 63 of a, then byte 0 of b: VALIGNQ gives each 128-bit lane
  // the next one, VPALIGNR takes its first byte.
  __attribute__((target("avx512f,avx512bw"))) static Vec next_lane(Vec a, Vec b) {
    return _mm512_alignr_epi8(_mm512_alignr_epi64(b, a, 2), a, 1);
  }
};

// The same operations in AVX2 vectors: 8 floats or 32 bytes.
struct F32Lanes8 {
  using T = float;
  using Vec = __m256;
  static constexpr int64_t kLanes = 8;
  static bool cpu() { return cpu_supports("avx2"); }
  __attribute__((target("avx2"))) static Vec load(const T* p) { return _mm256_loadu_ps(p); }
  __attribute__((target("avx2"))) static void store(T* p, Vec v) { _mm256_storeu_ps(p, v); }
  __attribute__((target("avx2"))) static void store_first(T* p, Vec v, int64_t n) {
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), iota), v);
  }
  __attribute__((target("avx2"))) static Vec splat(T v) { return _mm256_set1_ps(v); }
  __attribute__((target("avx2"))) static Vec load_edge(const T* row, int64_t col, int64_t w, Vec low, T*,
                                                      const Readable<T>&) {
    const __m256i c = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(col)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i inside = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), c),
                                               _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(w)), c));
    return _mm256_blendv_ps(low, _mm256_maskload_ps(shifted(row, col), inside), _mm256_castsi256_ps(inside));
  }
  // VMAXPS ymm: the second operand unless the first is greater, as above.
  __attribute__((target("avx2"))) static Vec keep_max(Vec v, Vec m) { return _mm256_max_ps(v, m); }
  // VSHUFPS picks even (odd) elements within each 128-bit half of a and b; the
  // 64-bit permute puts a's pairs before b's.
  __attribute__((target("avx2"))) static void split(Vec a, Vec b, Vec& even, Vec& odd) {
    even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
    odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8));
  }
  // Lanes 1 to 7 of a, then lane 0 of b: VPERM2I128 gives each 128-bit half
  // the next one, VPALIGNR takes its first float.
  __attribute__((target("avx2"))) static Vec next_lane(Vec a, Vec b) {
    const __m256i ai = _mm256_castps_si256(a);
    return _mm256_castsi256_ps(_mm256_alignr_epi8(_mm256_permute2x128_si256(ai, _mm256_castps_si256(b), 0x21), ai, 4));
  }
};

template <class Byte>
struct ByteLanes32 {
  using T = Byte;
  using Vec = __m256i;
  static constexpr int64_t kLanes = 32;
  static bool cpu() { return cpu_supports("avx2"); }
  __attribute__((target("avx2"))) static Vec load(const T* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  __attribute__((target("avx2"))) static void store(T* p, Vec v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  // AVX2 has no byte-masked store: the first n bytes go through a copy.
  __attribute__((target("avx2"))) static void store_first(T* p, Vec v, int64_t n) {
    alignas(32) T lanes[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
    std::memcpy(p, lanes, static_cast<size_t>(n));
  }
  __attribute__((target("avx2"))) static Vec splat(T v) { return _mm256_set1_epi8(static_cast<char>(v)); }
  // No masked byte loads. Where the 32 bytes at row + col lie inside the
  // input (a neighbouring row's bytes, or the plane before or after), they
  // are loaded whole and the lanes off the row replaced by `low`; at the
  // input's two ends the row's bytes are copied into `edge` instead. (A byte
  // loop into `edge` at both ends of every row took two thirds of resnet18's
  // int8 MaxPool: 366 us against 115 with AVX-512's masked loads.)
  __attribute__((target("avx2"))) static Vec load_edge(const T* row, int64_t col, int64_t w, Vec low, T* edge,
                                                      const Readable<T>& in) {
    const int64_t l0 = std::clamp<int64_t>(-col, 0, 32), l1 = std::clamp<int64_t>(w - col, l0, 32);
    const uintptr_t at = reinterpret_cast<uintptr_t>(shifted(row, col));
    if (at >= reinterpret_cast<uintptr_t>(in.begin) && at + 32 <= reinterpret_cast<uintptr_t>(in.end)) {
      const __m256i iota = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                                            21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
      const __m256i inside = _mm256_andnot_si256(_mm256_cmpgt_epi8(_mm256_set1_epi8(static_cast<char>(l0)), iota),
                                                 _mm256_cmpgt_epi8(_mm256_set1_epi8(static_cast<char>(l1)), iota));
      return _mm256_blendv_epi8(low, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at)), inside);
    }
    store(edge, low);
    if (l1 > l0) std::memcpy(edge + l0, row + col + l0, static_cast<size_t>(l1 - l0));
    return load(edge);
  }
  __attribute__((target("avx2"))) static Vec keep_max(Vec v, Vec m) {
    if constexpr (std::is_signed_v<T>) return _mm256_max_epi8(v, m);
    return _mm256_max_epu8(v, m);
  }
  // Even bytes are the low bytes of the 16-bit words, odd bytes the high
  // ones; VPACKUSWB packs within 128-bit halves, the permute restores order.
  __attribute__((target("avx2"))) static void split(Vec a, Vec b, Vec& even, Vec& odd) {
    const __m256i low = _mm256_set1_epi16(0xff);
    even = _mm256_permute4x64_epi64(_mm256_packus_epi16(_mm256_and_si256(a, low), _mm256_and_si256(b, low)), 0xd8);
    odd = _mm256_permute4x64_epi64(_mm256_packus_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8)), 0xd8);
  }
  // Bytes 1 to 31 of a, then byte 0 of b (as the float lanes' next_lane).
  __attribute__((target("avx2"))) static Vec next_lane(Vec a, Vec b) {
    return _mm256_alignr_epi8(_mm256_permute2x128_si256(a, b, 0x21), a, 1);
  }
};

constexpr int64_t kMaxWindowWidth = 16;

// Elements per part of a scratch row: a vector beyond the output row's
// vectors, as the window is at most 16 columns wide (at most 15 of padding).
template <class L>
int64_t scratch_width(int64_t out_w) {
  return L::kLanes * ((out_w + L::kLanes - 1) / L::kLanes + 1);
}

// pool_plane_avx512 and pool_plane_avx2: one plane, written once
// (pool_max_2d_plane.inc) and compiled for each ISA.
#define QTOOL_PLANE_TARGET __attribute__((target("avx512f,avx512bw")))
#define QTOOL_PLANE_NAME pool_plane_avx512
#define QTOOL_FLAT_NAME pool_flat_avx512
#include "libquant/kernels/pool_max_2d_plane.inc"
#undef QTOOL_PLANE_TARGET
#undef QTOOL_PLANE_NAME
#undef QTOOL_FLAT_NAME
#define QTOOL_PLANE_TARGET __attribute__((target("avx2")))
#define QTOOL_PLANE_NAME pool_plane_avx2
#define QTOOL_FLAT_NAME pool_flat_avx2
#include "libquant/kernels/pool_max_2d_plane.inc"
#undef QTOOL_PLANE_TARGET
#undef QTOOL_PLANE_NAME
#undef QTOOL_FLAT_NAME

// 3 x 3 windows at stride 2 without padding, all inside the plane: the
// flat path (pool_max_2d_plane.inc).
inline bool flat_3x3_stride_2(const PoolGeometry& g) {
  return g.kernel[0] == 3 && g.kernel[1] == 3 && g.strides[0] == 2 && g.strides[1] == 2 && g.pads_begin[0] == 0 &&
         g.pads_begin[1] == 0 && 2 * (g.out_spatial[0] - 1) + 3 <= g.in_spatial[0] &&
         2 * (g.out_spatial[1] - 1) + 3 <= g.in_spatial[1];
}

template <class L>
bool pool_planes(const PoolGeometry& g, const typename L::T* x, typename L::T* y, int64_t planes,
                 const PlaneSteps& steps) {
  static const bool cpu = L::cpu();
  const bool covered = cpu && g.in_spatial.size() == 2 && g.dilations[0] == 1 && g.dilations[1] == 1 &&
                       (g.strides[1] == 1 || g.strides[1] == 2) && g.kernel[1] <= kMaxWindowWidth &&
                       g.pads_begin[1] < kMaxWindowWidth;
  if (!covered) return false;
  const int64_t in_plane = g.in_spatial[0] * g.in_spatial[1], out_plane = g.out_spatial[0] * g.out_spatial[1];
  if (planes == 0 || out_plane == 0) return true;
  const int64_t in_step = steps.in_step > 0 ? steps.in_step : in_plane;
  const int64_t out_step = steps.out_step > 0 ? steps.out_step : out_plane;
  const int64_t width = scratch_width<L>(g.out_spatial[1]);
  thread_local std::vector<typename L::T> scratch;
  const size_t ring = static_cast<size_t>(4 * width + g.kernel[0] * (width - L::kLanes));
  scratch.resize(ring + static_cast<size_t>(width));  // then the flat path's carried row
  // Each lane type's own ISA only (`if constexpr`: the other instance
  // would pass its vectors without the ISA enabled).
  using T = typename L::T;
  using Plane = void (*)(const PoolGeometry&, const T*, T*, T*, const Readable<T>&);
  using Flat = void (*)(const PoolGeometry&, const T*, T*, int64_t, int64_t, int64_t, T*, const Readable<T>&, T*,
                        Plane);
  Plane plane = nullptr;
  Flat flat = nullptr;
  const int64_t nv = (g.out_spatial[1] + L::kLanes - 1) / L::kLanes;
  if constexpr (L::kLanes * sizeof(T) == 64) {
    plane = g.kernel[1] != 3 ? pool_plane_avx512<L> : g.strides[1] == 2 ? pool_plane_avx512<L, 3, 2> : pool_plane_avx512<L, 3, 1>;
    flat = nv == 1 ? pool_flat_avx512<L, 1> : nv == 2 ? pool_flat_avx512<L, 2> : pool_flat_avx512<L, 0>;
  } else {
    plane = g.kernel[1] != 3 ? pool_plane_avx2<L> : g.strides[1] == 2 ? pool_plane_avx2<L, 3, 2> : pool_plane_avx2<L, 3, 1>;
    flat = nv == 1 ? pool_flat_avx2<L, 1> : nv == 2 ? pool_flat_avx2<L, 2> : pool_flat_avx2<L, 0>;
  }
  const Readable<T> in{x, x + std::max((planes - 1) * in_step + in_plane, steps.readable)};
  if (flat_3x3_stride_2(g)) {
    flat(g, x, y, planes, in_step, out_step, scratch.data(), in, scratch.data() + ring, plane);
    return true;
  }
  for (int64_t p = 0; p < planes; ++p) plane(g, x + p * in_step, y + p * out_step, scratch.data(), in);
  return true;
}

}  // namespace

// Each element type's lanes in either ISA.
template <class T>
using Lanes512 = std::conditional_t<std::is_same_v<T, float>, F32Lanes, ByteLanes<T>>;
template <class T>
using Lanes256 = std::conditional_t<std::is_same_v<T, float>, F32Lanes8, ByteLanes32<T>>;

template <class T>
bool max_pool_2d_avx512(const PoolGeometry& g, const T* x, T* y, int64_t planes, const PlaneSteps& steps) {
  return pool_planes<Lanes512<T>>(g, x, y, planes, steps);
}
template <class T>
bool max_pool_2d_avx2(const PoolGeometry& g, const T* x, T* y, int64_t planes, const PlaneSteps& steps) {
  return pool_planes<Lanes256<T>>(g, x, y, planes, steps);
}

#pragma GCC diagnostic pop
#else

template <class T>
bool max_pool_2d_avx512(const PoolGeometry&, const T*, T*, int64_t, const PlaneSteps&) {
  return false;
}
template <class T>
bool max_pool_2d_avx2(const PoolGeometry&, const T*, T*, int64_t, const PlaneSteps&) {
  return false;
}

#endif

template <class T>
bool max_pool_2d_simd(const PoolGeometry& g, const T* x, T* y, int64_t planes, const PlaneSteps& steps) {
  return max_pool_2d_avx512<T>(g, x, y, planes, steps) || max_pool_2d_avx2<T>(g, x, y, planes, steps);
}

#define QTOOL_POOL_INSTANTIATE(T)                                                     \
  template bool max_pool_2d_avx512<T>(const PoolGeometry&, const T*, T*, int64_t, const PlaneSteps&); \
  template bool max_pool_2d_avx2<T>(const PoolGeometry&, const T*, T*, int64_t, const PlaneSteps&);   \
  template bool max_pool_2d_simd<T>(const PoolGeometry&, const T*, T*, int64_t, const PlaneSteps&);
QTOOL_POOL_INSTANTIATE(float)
QTOOL_POOL_INSTANTIATE(uint8_t)
QTOOL_POOL_INSTANTIATE(int8_t)
#undef QTOOL_POOL_INSTANTIATE

}  // namespace quant::kernels
