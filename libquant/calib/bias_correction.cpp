#include "libquant/calib/bias_correction.h"

#include <cassert>

namespace quant::calib {
namespace {

// For one spatial dim: output positions o in [0, out) read input o * stride -
// pad + t * dilation for tap t; returns how many of them land inside [0, in)
// and calls f(input index) for each.
template <class F>
void for_reads(int64_t in, int64_t out, int64_t stride, int64_t pad, int64_t dilation, int64_t t, F f) {
  for (int64_t o = 0; o < out; ++o) {
    const int64_t i = o * stride - pad + t * dilation;
    if (i >= 0 && i < in) f(i);
  }
}

}  // namespace

bool add_conv_input_sums(const Tensor& x, const ConvGeometry& geo, InputMeans& m) {
  const size_t nd = geo.kernel.size();
  if (x.dtype() != DType::Float32 || nd < 1 || nd > 3 || x.rank() != static_cast<int64_t>(nd) + 2 ||
      geo.strides.size() != nd || geo.dilations.size() != nd || geo.pads.size() != 2 * nd)
    return false;
  const int64_t n = x.dim(0), c = x.dim(1);
  // Spatial sizes padded to 3 dims (missing dims: size 1, kernel 1).
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
  for (size_t i = 0; i < nd; ++i) {
    in[i] = x.dim(static_cast<int64_t>(i) + 2);
    k[i] = geo.kernel[i], s[i] = geo.strides[i], p[i] = geo.pads[i], d[i] = geo.dilations[i];
    if (k[i] < 1 || s[i] < 1 || d[i] < 1) return false;
    out[i] = (in[i] + geo.pads[i] + geo.pads[i + nd] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
    if (out[i] < 1) return false;
  }
  Dims shape{c};
  for (size_t i = 0; i < nd; ++i) shape.push_back(k[i]);
  if (m.sum.empty()) {
    m.shape = shape;
    m.sum.assign(static_cast<size_t>(c * k[0] * k[1] * k[2]), 0.0);
  } else if (m.shape != shape) {
    return false;
  }
  // Sum over outputs of x[i0(o0), i1(o1), i2(o2)] separates per dim: the
  // positions each tap reads along one dim do not depend on the others.
  const float* px = x.data<float>();
  const int64_t plane = in[0] * in[1] * in[2];
  std::vector<int64_t> r0, r1, r2;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* xc = px + (b * c + ch) * plane;
      for (int64_t t0 = 0; t0 < k[0]; ++t0) {
        r0.clear();
        for_reads(in[0], out[0], s[0], p[0], d[0], t0, [&](int64_t i) { r0.push_back(i); });
        for (int64_t t1 = 0; t1 < k[1]; ++t1) {
          r1.clear();
          for_reads(in[1], out[1], s[1], p[1], d[1], t1, [&](int64_t i) { r1.push_back(i); });
          for (int64_t t2 = 0; t2 < k[2]; ++t2) {
            r2.clear();
            for_reads(in[2], out[2], s[2], p[2], d[2], t2, [&](int64_t i) { r2.push_back(i); });
            double acc = 0;
            for (int64_t i0 : r0)
              for (int64_t i1 : r1)
                for (int64_t i2 : r2) acc += xc[(i0 * in[1] + i1) * in[2] + i2];
            m.sum[static_cast<size_t>(((ch * k[0] + t0) * k[1] + t1) * k[2] + t2)] += acc;
          }
        }
      }
    }
  m.count += n * out[0] * out[1] * out[2];
  return true;
}

bool add_gemm_input_sums(const Tensor& a, bool trans_a, InputMeans& m) {
  if (a.dtype() != DType::Float32 || a.rank() < 2 || (trans_a && a.rank() != 2) || a.dim(a.rank() - 1) == 0) return false;
  // MatMul's A may have leading batch dims: every row of the last dim counts.
  const int64_t k = trans_a ? a.dim(0) : a.dim(a.rank() - 1), rows = a.size() / k;
  if (m.sum.empty()) {
    m.shape = {k};
    m.sum.assign(static_cast<size_t>(k), 0.0);
  } else if (m.shape != Dims{k}) {
    return false;
  }
  const float* pa = a.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) m.sum[static_cast<size_t>(j)] += trans_a ? pa[j * rows + r] : pa[r * k + j];
  m.count += rows;
  return true;
}

std::vector<double> expected_output_shift(const Tensor& w, const Tensor& wq, const InputMeans& m, bool gemm, bool trans_b,
                                          int64_t group) {
  assert(w.shape() == wq.shape() && w.dtype() == DType::Float32 && wq.dtype() == DType::Float32);
  const float* pw = w.data<float>();
  const float* pq = wq.data<float>();
  if (gemm) {
    const int64_t k = trans_b ? w.dim(1) : w.dim(0), n = trans_b ? w.dim(0) : w.dim(1);
    assert(m.shape == Dims{k});
    std::vector<double> shift(static_cast<size_t>(n), 0.0);
    for (int64_t j = 0; j < k; ++j)
      for (int64_t o = 0; o < n; ++o) {
        const int64_t e = trans_b ? o * k + j : j * n + o;
        shift[static_cast<size_t>(o)] += (static_cast<double>(pq[e]) - pw[e]) * m.mean(j);
      }
    return shift;
  }
  const int64_t cout = w.dim(0), cin = w.dim(1), taps = w.size() / (cout * cin);
  assert(m.shape[0] == cin * group && static_cast<int64_t>(m.sum.size()) == cin * group * taps);
  std::vector<double> shift(static_cast<size_t>(cout), 0.0);
  for (int64_t o = 0; o < cout; ++o) {
    const int64_t first_in = (o / (cout / group)) * cin;
    double acc = 0;
    for (int64_t j = 0; j < cin; ++j)
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t e = (o * cin + j) * taps + t;
        acc += (static_cast<double>(pq[e]) - pw[e]) * m.mean((first_in + j) * taps + t);
      }
    shift[static_cast<size_t>(o)] = acc;
  }
  return shift;
}

}  // namespace quant::calib
