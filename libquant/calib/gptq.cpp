#include "libquant/calib/gptq.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace quant::calib {

bool add_hessian_rows(const Tensor& x, Hessian& h) {
  if (x.dtype() != DType::Float32 || x.rank() < 1) return false;
  const int64_t k = x.dim(x.rank() - 1);
  if (k <= 0) return false;
  if (h.k == 0) {
    h.k = k;
    h.sum.assign(static_cast<size_t>(k * k), 0.0);
  }
  if (h.k != k) return false;
  const int64_t n = x.size() / k;
  const float* d = x.data<float>();
  std::vector<double> row(static_cast<size_t>(k));
  for (int64_t r = 0; r < n; ++r) {
    const float* xr = d + r * k;
    if (!std::all_of(xr, xr + k, [](float v) { return std::isfinite(v); })) continue;
    for (int64_t i = 0; i < k; ++i) row[static_cast<size_t>(i)] = xr[i];
    // Lower triangle only; gptq_round mirrors it.
    for (int64_t i = 0; i < k; ++i) {
      const double xi = row[static_cast<size_t>(i)];
      if (xi == 0) continue;
      double* hi = h.sum.data() + i * k;
      for (int64_t j = 0; j <= i; ++j) hi[j] += xi * row[static_cast<size_t>(j)];
    }
    ++h.rows;
  }
  return true;
}

bool cholesky_lower(std::vector<double>& a, int64_t k) {
  for (int64_t j = 0; j < k; ++j) {
    double d = a[static_cast<size_t>(j * k + j)];
    for (int64_t p = 0; p < j; ++p) d -= a[static_cast<size_t>(j * k + p)] * a[static_cast<size_t>(j * k + p)];
    if (!(d > 0) || !std::isfinite(d)) return false;
    const double l = std::sqrt(d);
    a[static_cast<size_t>(j * k + j)] = l;
    for (int64_t i = j + 1; i < k; ++i) {
      double s = a[static_cast<size_t>(i * k + j)];
      for (int64_t p = 0; p < j; ++p) s -= a[static_cast<size_t>(i * k + p)] * a[static_cast<size_t>(j * k + p)];
      a[static_cast<size_t>(i * k + j)] = s / l;
    }
    for (int64_t i = 0; i < j; ++i) a[static_cast<size_t>(i * k + j)] = 0;
  }
  return true;
}

namespace {

// U with U^T U = (L L^T)^-1, from the lower Cholesky factor L of H: the
// reference's cholesky_inverse followed by cholesky(upper=True).
bool upper_factor_of_inverse(std::vector<double>& l, int64_t k) {
  // L^-1 (lower triangular), column by column by forward substitution.
  std::vector<double> li(static_cast<size_t>(k * k), 0.0);
  for (int64_t c = 0; c < k; ++c) {
    li[static_cast<size_t>(c * k + c)] = 1.0 / l[static_cast<size_t>(c * k + c)];
    for (int64_t i = c + 1; i < k; ++i) {
      double s = 0;
      for (int64_t p = c; p < i; ++p) s += l[static_cast<size_t>(i * k + p)] * li[static_cast<size_t>(p * k + c)];
      li[static_cast<size_t>(i * k + c)] = -s / l[static_cast<size_t>(i * k + i)];
    }
  }
  // H^-1 = L^-T L^-1 (symmetric).
  std::vector<double> inv(static_cast<size_t>(k * k), 0.0);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      double s = 0;
      for (int64_t p = i; p < k; ++p) s += li[static_cast<size_t>(p * k + i)] * li[static_cast<size_t>(p * k + j)];
      inv[static_cast<size_t>(i * k + j)] = inv[static_cast<size_t>(j * k + i)] = s;
    }
  if (!cholesky_lower(inv, k)) return false;
  // U = L2^T.
  l.assign(static_cast<size_t>(k * k), 0.0);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j <= i; ++j) l[static_cast<size_t>(j * k + i)] = inv[static_cast<size_t>(i * k + j)];
  return true;
}

}  // namespace

GptqResult gptq_round(const float* w, int64_t rows, int64_t cols, int64_t group, SymmetricCodes codes, const Hessian& h,
                      const GptqOptions& o) {
  GptqResult out;
  const int64_t k = cols;
  if (h.k != k || h.rows == 0) {
    out.fallback = h.rows == 0 ? "no input rows in the data" : "input width does not match the weight";
    out.weights = round_to_nearest(w, rows, cols, group, codes);
    return out;
  }
  if (!std::all_of(w, w + rows * cols, [](float v) { return std::isfinite(v); })) {
    out.fallback = "non-finite weights";
    out.weights = round_to_nearest(w, rows, cols, group, codes);
    return out;
  }
  // H = 2 X^T X / n, mirrored from the lower triangle.
  std::vector<double> hm(static_cast<size_t>(k * k));
  const double f = 2.0 / static_cast<double>(h.rows);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j <= i; ++j)
      hm[static_cast<size_t>(i * k + j)] = hm[static_cast<size_t>(j * k + i)] = f * h.sum[static_cast<size_t>(i * k + j)];
  std::vector<double> wd(static_cast<size_t>(rows * k));  // W in processing (permuted) column order
  std::vector<int64_t> perm(static_cast<size_t>(k));
  std::iota(perm.begin(), perm.end(), 0);
  if (o.act_order)
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
      return hm[static_cast<size_t>(a * k + a)] > hm[static_cast<size_t>(b * k + b)];
    });
  std::vector<bool> dead(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) dead[static_cast<size_t>(i)] = hm[static_cast<size_t>(i * k + i)] == 0;
  std::vector<double> hp(static_cast<size_t>(k * k));
  double mean_diag = 0;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t pi = perm[static_cast<size_t>(i)];
    for (int64_t j = 0; j < k; ++j) hp[static_cast<size_t>(i * k + j)] = hm[static_cast<size_t>(pi * k + perm[static_cast<size_t>(j)])];
    if (dead[static_cast<size_t>(pi)]) hp[static_cast<size_t>(i * k + i)] = 1;
    mean_diag += hp[static_cast<size_t>(i * k + i)] / static_cast<double>(k);
    for (int64_t r = 0; r < rows; ++r)
      wd[static_cast<size_t>(r * k + i)] = dead[static_cast<size_t>(pi)] ? 0.0 : w[r * cols + pi];
  }
  out.dead_inputs = std::count(dead.begin(), dead.end(), true);
  // Damping; raised tenfold while H + lambda I is not positive definite
  // (rounding on nearly singular H), as AutoGPTQ retries.
  std::vector<double> u;
  out.damp = o.damp;
  for (int attempt = 0;; ++attempt) {
    u = hp;
    for (int64_t i = 0; i < k; ++i) u[static_cast<size_t>(i * k + i)] += out.damp * mean_diag;
    if (cholesky_lower(u, k) && upper_factor_of_inverse(u, k)) break;
    if (attempt == 6) {
      out.fallback = "H + lambda I is not positive definite";
      out.weights = round_to_nearest(w, rows, cols, group, codes);
      return out;
    }
    out.damp = std::max(out.damp, 1e-4) * 10;
  }
  RoundedWeights& q = out.weights;
  q = {rows, cols, group, std::vector<int8_t>(static_cast<size_t>(rows * cols)), {}};
  const int64_t groups = q.groups_per_row();
  q.scale.assign(static_cast<size_t>(rows * groups), 0.0f);
  std::vector<bool> group_started(static_cast<size_t>(groups), false);
  const int64_t block = std::max<int64_t>(o.block, 1);
  std::vector<double> err(static_cast<size_t>(rows * block));
  std::vector<int64_t> pos(static_cast<size_t>(k));  // original column -> processing position
  for (int64_t i = 0; i < k; ++i) pos[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
  std::vector<float> current;
  for (int64_t i1 = 0; i1 < k; i1 += block) {
    const int64_t i2 = std::min(k, i1 + block);
    for (int64_t i = i1; i < i2; ++i) {
      const int64_t c = perm[static_cast<size_t>(i)], g = c / group;
      if (!group_started[static_cast<size_t>(g)]) {
        // The group's scale from its current weights: columns of this block
        // hold their updates; later ones still lack this block's (lazy) ones.
        group_started[static_cast<size_t>(g)] = true;
        const int64_t c0 = g * group, c1 = std::min(cols, c0 + group);
        current.resize(static_cast<size_t>(c1 - c0));
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t cc = c0; cc < c1; ++cc) {
            const int64_t p = pos[static_cast<size_t>(cc)];
            double v = wd[static_cast<size_t>(r * k + p)];
            if (p >= i2)
              for (int64_t t = i1; t < i; ++t)
                v -= err[static_cast<size_t>(r * block + (t - i1))] * u[static_cast<size_t>(t * k + p)];
            current[static_cast<size_t>(cc - c0)] = static_cast<float>(v);
          }
          q.scale[static_cast<size_t>(r * groups + g)] = symmetric_scale(current.data(), c1 - c0, codes);
        }
      }
      const double d = u[static_cast<size_t>(i * k + i)];
      for (int64_t r = 0; r < rows; ++r) {
        const double wv = wd[static_cast<size_t>(r * k + i)];
        const float s = q.scale[static_cast<size_t>(r * groups + g)];
        const int8_t code = round_code(static_cast<float>(wv), s, codes);
        q.q[static_cast<size_t>(r * cols + c)] = code;
        const double e = (wv - static_cast<double>(s) * code) / d;
        err[static_cast<size_t>(r * block + (i - i1))] = e;
        double* wr = wd.data() + r * k;
        const double* ui = u.data() + i * k;
        for (int64_t j = i + 1; j < i2; ++j) wr[j] -= e * ui[j];
      }
    }
    // The block's errors reach the columns after it (the lazy batch update).
    for (int64_t r = 0; r < rows; ++r) {
      double* wr = wd.data() + r * k;
      for (int64_t t = i1; t < i2; ++t) {
        const double e = err[static_cast<size_t>(r * block + (t - i1))];
        const double* ut = u.data() + t * k;
        for (int64_t j = i2; j < k; ++j) wr[j] -= e * ut[j];
      }
    }
  }
  return out;
}

}  // namespace quant::calib
