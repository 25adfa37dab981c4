#include "libquant/kernels/conv_fast.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "libquant/kernels/spatial.h"

namespace quant::kernels {
namespace {

// d[t] = src[t * stride] for t < n: one run of an im2col row (a window row's
// taps inside the input). Runs are short (an output row, cut at panel
// boundaries), so a library memcpy call or a scalar loop per run cost more
// than the copy itself on small maps.
using RunCopy = void (*)(float* d, const float* src, int64_t stride, int64_t n);

void copy_run_portable(float* d, const float* src, int64_t stride, int64_t n) {
  for (int64_t t = 0; t < n; ++t) d[t] = src[t * stride];
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) void copy_run_avx512(float* d, const float* src, int64_t stride, int64_t n) {
  // Masked loads and stores: no element past the run is read or written.
  const auto first = [](int64_t k) { return static_cast<__mmask16>((1u << std::clamp<int64_t>(k, 0, 16)) - 1u); };
  if (stride == 1) {
    for (; n > 0; n -= 16, src += 16, d += 16)
      _mm512_mask_storeu_ps(d, first(n), _mm512_maskz_loadu_ps(first(n), src));
    return;
  }
  if (stride == 2) {
    // Even elements of src[0..31]: the run reads src[0], src[2], ..., src[2n-2].
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (; n > 0; n -= 16, src += 32, d += 16) {
      const int64_t used = 2 * std::min<int64_t>(n, 16) - 1;  // elements read from src
      const __m512 a = _mm512_maskz_loadu_ps(first(used), src);
      const __m512 b = _mm512_maskz_loadu_ps(first(used - 16), src + 16);
      _mm512_mask_storeu_ps(d, first(n), _mm512_permutex2var_ps(a, even, b));
    }
    return;
  }
  copy_run_portable(d, src, stride, n);
}
#endif

RunCopy pick_run_copy() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return copy_run_avx512;
#endif
  return copy_run_portable;
}

const RunCopy copy_run = pick_run_copy();

// The implicit im2col matrix of one image and group: row k = (c, kd, kh, kw),
// column j = (od, oh, ow), element = x[c, od*s+kd*d-p, oh*s+kh*d-p, ow*s+kw*d-p]
// or 0 in the padding.
class Im2colSource final : public PanelSource {
 public:
  Im2colSource(const detail::Spatial3& s, const float* x) : s_(s), x_(x) {
    in_plane_ = s.in[0] * s.in[1] * s.in[2];
    k_volume_ = s.kernel[0] * s.kernel[1] * s.kernel[2];
  }

  void pack(int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float* dst) const override {
    const int64_t n_panels = (nc + nr - 1) / nr;
    for (int64_t kk = 0; kk < kc; ++kk) {
      PanelCursor out{dst + kk * nr, kc * nr, nr, 0};
      gather_row(k0 + kk, j0, nc, out);
      // Zero the columns of the last panel past nc.
      const int64_t tail = n_panels * nr - nc;
      std::fill(dst + (n_panels - 1) * kc * nr + kk * nr + (nr - tail), dst + (n_panels - 1) * kc * nr + (kk + 1) * nr, 0.0f);
    }
  }

 private:
  // Writes consecutive columns of one im2col row into the panels: nr floats
  // per panel, then a jump of kc*nr to the same row of the next panel.
  struct PanelCursor {
    float* p;
    int64_t panel_step;
    int nr;
    int lane;

    void zeros(int64_t n) {
      while (n > 0) {
        const int64_t seg = std::min<int64_t>(n, nr - lane);
        std::fill(p + lane, p + lane + seg, 0.0f);
        advance(seg);
        n -= seg;
      }
    }
    void copy(const float* src, int64_t stride, int64_t n) {
      while (n > 0) {
        const int64_t seg = std::min<int64_t>(n, nr - lane);
        copy_run(p + lane, src, stride, seg);
        src += seg * stride;
        advance(seg);
        n -= seg;
      }
    }
    void advance(int64_t seg) {
      lane += static_cast<int>(seg);
      if (lane == nr) {
        lane = 0;
        p += panel_step;
      }
    }
  };

  // Columns [j0, j0+nc) of im2col row k, written through the cursor.
  void gather_row(int64_t k, int64_t j0, int64_t nc, PanelCursor& out) const {
    const int64_t c = k / k_volume_, r = k % k_volume_;
    const int64_t kd = r / (s_.kernel[1] * s_.kernel[2]);
    const int64_t kh = (r / s_.kernel[2]) % s_.kernel[1];
    const int64_t kw = r % s_.kernel[2];
    const int64_t off_d = kd * s_.dilations[0] - s_.pads_begin[0];
    const int64_t off_h = kh * s_.dilations[1] - s_.pads_begin[1];
    const int64_t off_w = kw * s_.dilations[2] - s_.pads_begin[2];
    const float* xc = x_ + c * in_plane_;
    // Output columns whose tap lands inside the input row.
    const detail::IndexRange rw = detail::valid_range(off_w, s_.strides[2], s_.in[2], s_.out[2]);
    const int64_t sw = s_.strides[2];
    int64_t j = j0;
    int64_t ow = j % s_.out[2], oh = (j / s_.out[2]) % s_.out[1], od = j / (s_.out[2] * s_.out[1]);
    while (j < j0 + nc) {
      const int64_t run = std::min(s_.out[2] - ow, j0 + nc - j);
      const int64_t id = od * s_.strides[0] + off_d, ih = oh * s_.strides[1] + off_h;
      if (id < 0 || id >= s_.in[0] || ih < 0 || ih >= s_.in[1]) {
        out.zeros(run);
      } else {
        const float* xrow = xc + (id * s_.in[1] + ih) * s_.in[2];
        const int64_t lo = std::clamp(rw.lo - ow, int64_t{0}, run), hi = std::clamp(rw.hi - ow, lo, run);
        out.zeros(lo);
        out.copy(xrow + (ow + lo) * sw + off_w, sw, hi - lo);
        out.zeros(run - hi);
      }
      j += run;
      ow = 0;
      if (++oh == s_.out[1]) {
        oh = 0;
        ++od;
      }
    }
  }

  detail::Spatial3 s_;
  const float* x_;
  int64_t in_plane_, k_volume_;
};

int64_t kernel_volume(const ConvGeometry& g) {
  int64_t v = 1;
  for (int64_t k : g.kernel) v *= k;
  return v;
}

}  // namespace

PackedConvWeights::PackedConvWeights(const float* w, int64_t out_channels, int64_t group, int64_t depth_per_group) {
  const int64_t m_per_group = out_channels / group;
  for (int64_t gi = 0; gi < group; ++gi)
    groups_.push_back(PackedMatrix::pack_a(MatrixView{w + gi * m_per_group * depth_per_group, depth_per_group, 1},
                                           m_per_group, depth_per_group, detail::best_gemm_isa()));
}

void conv_f32_fast(const ConvGeometry& g, const float* x, const float* w, const PackedConvWeights* packed,
                   const float* bias, float* y, int threads, const ConvActivation& act) {
  assert(g.group >= 1 && g.in_channels % g.group == 0 && g.out_channels % g.group == 0);
  const int64_t C = g.in_channels, M = g.out_channels;
  const int64_t c_per_group = C / g.group, m_per_group = M / g.group;
  if (c_per_group == 1 && m_per_group == 1) return conv_f32_depthwise(g, x, w, bias, y, threads, act);

  const detail::Spatial3 s =
      detail::to_spatial3(g.in_spatial, g.out_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end);
  const int64_t in_plane = s.in[0] * s.in[1] * s.in[2];
  const int64_t out_plane = s.out[0] * s.out[1] * s.out[2];
  const int64_t K = c_per_group * kernel_volume(g);
  bool pointwise = kernel_volume(g) == 1;
  for (int i = 0; i < 3; ++i) pointwise = pointwise && s.strides[i] == 1 && s.pads_begin[i] == 0 && s.pads_end[i] == 0;

  GemmEpilogue ep;
  ep.clamp = act.clamp;
  ep.lo = act.lo;
  ep.hi = act.hi;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t gi = 0; gi < g.group; ++gi) {
      const float* xg = x + (n * C + gi * c_per_group) * in_plane;
      GemmA a;
      if (packed && !packed->empty())
        a.packed = &packed->group(gi);
      else
        a.view = MatrixView{w + gi * m_per_group * K, K, 1};
      const Im2colSource im2col(s, xg);
      GemmB b;
      if (pointwise)
        b.view = MatrixView{xg, in_plane, 1};  // [C/group, H*W] as it lies in memory
      else
        b.source = &im2col;
      ep.row_bias = bias ? bias + gi * m_per_group : nullptr;
      ep.residual = act.residual ? act.residual + (n * M + gi * m_per_group) * out_plane : nullptr;
      ep.ldr = out_plane;
      // A widening 1x1 conv (mobilenet_v2's expand) splits its output
      // channels over the threads, as the depthwise conv after it does.
      const GemmSplit split = pointwise && m_per_group > K ? GemmSplit::Rows : GemmSplit::Auto;
      gemm_f32_packed(m_per_group, out_plane, K, a, b, y + (n * M + gi * m_per_group) * out_plane, out_plane, ep, threads,
                      detail::best_gemm_isa(), split);
    }
  }
}

}  // namespace quant::kernels
