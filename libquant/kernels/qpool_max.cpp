#include "libquant/kernels/qpool_max.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "libquant/kernels/pool_max_2d.h"
#include "libquant/kernels/threadpool.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace quant::kernels {
namespace {

// line[i] = max(line[i], row[i]) for i < n.
template <class T>
void max_into(T* line, const T* row, int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)
  // SSE2 has only the unsigned byte max: int8 is moved into uint8 order by
  // flipping the sign bit, which keeps the ordering, and flipped back.
  const __m128i flip = _mm_set1_epi8(std::is_signed_v<T> ? static_cast<char>(0x80) : 0);
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(line + i)), flip);
    const __m128i b = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i)), flip);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(line + i), _mm_xor_si128(_mm_max_epu8(a, b), flip));
  }
#endif
  for (; i < n; ++i) line[i] = std::max(line[i], row[i]);
}

template <class T>
void pool_plane_2d(const PoolGeometry& g, const T* x, T* y, T* line) {
  const int64_t ih = g.in_spatial[0], iw = g.in_spatial[1], oh = g.out_spatial[0], ow = g.out_spatial[1];
  const int64_t kh = g.kernel[0], kw = g.kernel[1], sh = g.strides[0], sw = g.strides[1];
  const int64_t ph = g.pads_begin[0], pw = g.pads_begin[1];
  // A window with no tap inside the input gives the reference's starting value.
  constexpr T kLowest = std::numeric_limits<T>::lowest();
  for (int64_t r = 0; r < oh; ++r) {
    T* out = y + r * ow;
    const int64_t r0 = std::max<int64_t>(r * sh - ph, 0), r1 = std::min(r * sh - ph + kh, ih);
    if (r0 >= r1) {
      std::fill(out, out + ow, kLowest);
      continue;
    }
    std::memcpy(line, x + r0 * iw, static_cast<size_t>(iw) * sizeof(T));
    for (int64_t i = r0 + 1; i < r1; ++i) max_into(line, x + i * iw, iw);
    for (int64_t c = 0; c < ow; ++c) {
      const int64_t c0 = std::max<int64_t>(c * sw - pw, 0), c1 = std::min(c * sw - pw + kw, iw);
      T m = kLowest;
      for (int64_t i = c0; i < c1; ++i) m = std::max(m, line[i]);
      out[c] = m;
    }
  }
}

}  // namespace

template <class T>
void max_pool_8bit_fast(const PoolGeometry& g, const T* x, T* y, int threads) {
  const bool plain_2d = g.in_spatial.size() == 2 && g.dilations[0] == 1 && g.dilations[1] == 1;
  if (!plain_2d) {
    max_pool<T>(g, x, y, nullptr, false);
    return;
  }
  const int64_t planes = g.batch * g.channels;
  const int64_t in_plane = g.in_spatial[0] * g.in_spatial[1], out_plane = g.out_spatial[0] * g.out_spatial[1];
  if (planes == 0 || out_plane == 0) return;
  // AVX-512 or AVX2 rows where the CPU and geometry allow (asked with no planes),
  // in runs of planes per thread.
  if (max_pool_2d_simd<T>(g, nullptr, nullptr, 0)) {
    const int64_t parts = std::min<int64_t>(planes, threads > 1 ? 4 * static_cast<int64_t>(threads) : 1);
    parallel_for(threads, parts, [&](int64_t t) {
      const int64_t p0 = t * planes / parts, p1 = (t + 1) * planes / parts;
      max_pool_2d_simd(g, x + p0 * in_plane, y + p0 * out_plane, p1 - p0);
    });
    return;
  }
  parallel_for(threads, planes, [&](int64_t p) {
    thread_local std::vector<T> line;
    line.resize(static_cast<size_t>(g.in_spatial[1]));
    pool_plane_2d(g, x + p * in_plane, y + p * out_plane, line.data());
  });
}

template void max_pool_8bit_fast<uint8_t>(const PoolGeometry&, const uint8_t*, uint8_t*, int);
template void max_pool_8bit_fast<int8_t>(const PoolGeometry&, const int8_t*, int8_t*, int);

}  // namespace quant::kernels
