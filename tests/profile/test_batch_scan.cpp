#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "libquant/kernels/cpu.h"
#include "libquant/profile/batch_scan.h"
#include "libquant/profile/histogram.h"
#include "tests/skip.h"

using quant::profile::BatchStats;
using quant::profile::Histogram;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void check_same(const BatchStats& fast, const BatchStats& ref) {
  CHECK(same_bits(fast.min, ref.min));
  CHECK(same_bits(fast.max, ref.max));
  CHECK(same_bits(fast.sum, ref.sum));
  CHECK(fast.finite == ref.finite);
  CHECK(fast.nan == ref.nan);
  CHECK(fast.inf == ref.inf);
}

// Values of every kind the scans must agree on: normal values over a wide range,
// exact zeros of both signs (Relu outputs), subnormals, and NaN/Inf sprinkled in.
std::vector<float> mixed_values(size_t n, std::mt19937& rng, bool with_nonfinite) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::uniform_int_distribution<int> kind(0, 19);
  std::vector<float> v(n);
  for (float& x : v) {
    switch (kind(rng)) {
      case 0: x = 0.0f; break;
      case 1: x = -0.0f; break;
      case 2: x = std::numeric_limits<float>::denorm_min() * static_cast<float>(kind(rng) - 10); break;
      case 3: x = with_nonfinite ? kNaN : 1.0f; break;
      case 4: x = with_nonfinite ? (kind(rng) % 2 ? kInf : -kInf) : -1.0f; break;
      default: x = normal(rng) * std::ldexp(1.0f, kind(rng) - 10);
    }
  }
  return v;
}

// The lattice Histogram::add would choose for these values (and `bins`).
void lattice_of(const BatchStats& s, int bins, int& e, int64_t& first) {
  e = Histogram::fit_exponent(s.min, s.max, bins);
  first = static_cast<int64_t>(std::floor(std::ldexp(static_cast<double>(s.min), -e)));
}

void check_counts(const std::vector<float>& v, int bins) {
  const BatchStats s = quant::profile::scan_batch_portable(v.data(), static_cast<int64_t>(v.size()));
  if (s.finite == 0) return;
  int e = 0;
  int64_t first = 0;
  lattice_of(s, bins, e, first);
  std::vector<uint64_t> fast(static_cast<size_t>(bins), 0), ref(static_cast<size_t>(bins), 0);
  quant::profile::count_cells(v.data(), static_cast<int64_t>(v.size()), e, first, fast.data(), bins);
  quant::profile::count_cells_portable(v.data(), static_cast<int64_t>(v.size()), e, first, ref.data(), bins);
  CHECK(fast == ref);
  uint64_t total = 0;
  for (uint64_t c : fast) total += c;
  CHECK(total == s.finite);
}

}  // namespace

TEST_CASE("batch scan: the dispatcher uses AVX2 where the CPU has it", "[profile][batch_scan]") {
#if defined(__x86_64__)
  // The CPU's flags as capped by QTOOL_ISA (kernels/cpu.h): portable runs the scalar scans.
  CHECK(quant::profile::batch_scan_uses_avx2() ==
        (quant::kernels::cpu_supports("avx2") && quant::kernels::cpu_supports("fma")));
  CHECK(quant::kernels::cpu_supports("avx2") ==
        (__builtin_cpu_supports("avx2") && quant::kernels::isa_cap() != quant::kernels::IsaCap::Portable));
#else
  CHECK_FALSE(quant::profile::batch_scan_uses_avx2());  // and the body is not empty under --warn NoAssertions
#endif
}

TEST_CASE("batch scan: statistics equal the portable scan bit for bit on swept sizes", "[profile][batch_scan]") {
  if (!quant::profile::batch_scan_uses_avx2()) QTOOL_SKIP("no AVX2 on this CPU: scan_batch is the portable scan");
  std::mt19937 rng(7);
  for (size_t n = 0; n < 80; ++n) {
    for (bool nonfinite : {false, true}) {
      auto v = mixed_values(n, rng, nonfinite);
      check_same(quant::profile::scan_batch(v.data(), static_cast<int64_t>(n)),
                 quant::profile::scan_batch_portable(v.data(), static_cast<int64_t>(n)));
    }
  }
  for (size_t n : {1000u, 4099u, 70001u}) {
    auto v = mixed_values(n, rng, true);
    check_same(quant::profile::scan_batch(v.data(), static_cast<int64_t>(n)),
               quant::profile::scan_batch_portable(v.data(), static_cast<int64_t>(n)));
  }
}

TEST_CASE("batch scan: the portable scan follows the documented definition", "[profile][batch_scan]") {
  // Element i goes to lane i % 8; sum = ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)).
  std::vector<float> v{1e8f, 1.0f, -1e8f, 2.0f, 0.5f, kNaN, 3.0f, -kInf, 1.0f, 0.25f};
  double l[8] = {1e8 + 1.0, 1.0 + 0.25, -1e8, 2.0, 0.5, 0.0, 3.0, 0.0};
  const BatchStats s = quant::profile::scan_batch_portable(v.data(), static_cast<int64_t>(v.size()));
  CHECK(same_bits(s.sum, ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]))));
  CHECK(s.min == -1e8f);
  CHECK(s.max == 1e8f);
  CHECK(s.finite == 8);
  CHECK(s.nan == 1);
  CHECK(s.inf == 1);

  // Zero extremes are +0 whichever zero comes first; no finite value: +-inf.
  std::vector<float> zeros{-0.0f, 0.0f, 5.0f};
  for (auto* scan : {&quant::profile::scan_batch_portable, &quant::profile::scan_batch}) {
    const BatchStats z = (*scan)(zeros.data(), 3);
    CHECK(same_bits(z.min, 0.0f));
    std::vector<float> negative_zeros(9, -0.0f);
    negative_zeros[8] = -1.0f;
    CHECK(same_bits((*scan)(negative_zeros.data(), 9).max, 0.0f));
    std::vector<float> bad{kNaN, kInf, -kInf, kNaN, kNaN, kInf, kNaN, kNaN, -kInf};
    const BatchStats b = (*scan)(bad.data(), 9);
    CHECK(b.finite == 0);
    CHECK(b.nan == 5);
    CHECK(b.inf == 4);
    CHECK(b.min == kInf);
    CHECK(b.max == -kInf);
  }
}

TEST_CASE("batch scan: bin counts equal the portable count on swept sizes and lattices", "[profile][batch_scan]") {
  std::mt19937 rng(11);
  for (int bins : {16, 64, 2048}) {
    for (size_t n = 0; n < 70; ++n) check_counts(mixed_values(n, rng, true), bins);
    // Large enough for the interleaved copies of the bins (n >= 8 * bins).
    for (size_t n : {1000u, 20000u, 40003u}) {
      check_counts(mixed_values(n, rng, false), bins);
      check_counts(mixed_values(n, rng, true), bins);
    }
  }
  // Mostly exact zeros (after Relu): long runs into one bin.
  std::vector<float> relu(50000, 0.0f);
  for (size_t i = 0; i < relu.size(); i += 7) relu[i] = static_cast<float>(i % 100) * 0.01f;
  check_counts(relu, 2048);
  // Long runs of one value (Relu6: 0 and 6), at every alignment, between random values.
  std::vector<float> runs;
  std::uniform_real_distribution<float> some(-1.0f, 7.0f);
  for (size_t run = 1; runs.size() < 60000; run = run % 37 + 1) {
    runs.insert(runs.end(), run * 3, run % 2 ? 0.0f : 6.0f);
    for (size_t k = 0; k < run % 5; ++k) runs.push_back(some(rng));
  }
  for (int bins : {16, 2048}) check_counts(runs, bins);
}

TEST_CASE("batch scan: a negative value whose scaled cell underflows still lands in cell -1", "[profile][batch_scan]") {
  // With a coarse lattice (wide range), tiny negative values times 2^-e fall below
  // float's subnormals and would round to -0; their cell is -1, not 0.
  const float tiny = std::numeric_limits<float>::denorm_min();
  std::vector<float> v{-tiny, -2 * tiny, 3e30f, tiny, -1e-40f, 0.0f, -0.0f, 1.0f, -tiny};
  for (int bins : {16, 2048}) {
    const BatchStats s = quant::profile::scan_batch(v.data(), static_cast<int64_t>(v.size()));
    int e = 0;
    int64_t first = 0;
    lattice_of(s, bins, e, first);
    REQUIRE(first == -1);  // the negative tiny values own cell -1, bin 0
    std::vector<uint64_t> fast(static_cast<size_t>(bins), 0);
    quant::profile::count_cells(v.data(), static_cast<int64_t>(v.size()), e, first, fast.data(), bins);
    CHECK(fast[0] == 4);  // -tiny, -2 tiny, -1e-40, -tiny
    CHECK(fast[1] == 4);  // tiny, 0, -0, 1
    uint64_t rest = 0;
    for (size_t b = 2; b < fast.size(); ++b) rest += fast[b];
    CHECK(rest == 1);  // 3e30
  }
}

TEST_CASE("batch scan: histograms grow across samples to the histogram of all values at once", "[profile][batch_scan]") {
  std::mt19937 rng(3);
  std::vector<float> all;
  Histogram grown(256);
  for (int sample = 0; sample < 12; ++sample) {
    auto v = mixed_values(3000 + static_cast<size_t>(sample), rng, true);
    for (float& x : v) x *= static_cast<float>(1 + sample);  // each sample widens the range
    grown.add(v.data(), static_cast<int64_t>(v.size()));
    all.insert(all.end(), v.begin(), v.end());
  }
  Histogram once(256);
  once.add(all.data(), static_cast<int64_t>(all.size()));
  CHECK(grown.counts() == once.counts());
  CHECK(grown.lo() == once.lo());
  CHECK(grown.hi() == once.hi());
  CHECK(grown.min() == once.min());
  CHECK(grown.max() == once.max());
  CHECK(grown.count() == once.count());
  CHECK(grown.nan_count() == once.nan_count());
  CHECK(grown.inf_count() == once.inf_count());
  // And each bin holds exactly the values of its lattice cell.
  std::vector<uint64_t> naive(256, 0);
  for (float x : all)
    if (std::isfinite(x))
      naive[static_cast<size_t>(std::floor(std::ldexp(static_cast<double>(x), -once.exponent())) -
                                std::floor(std::ldexp(once.lo(), -once.exponent())))]++;
  CHECK(once.counts() == naive);
}

TEST_CASE("batch scan: the clamped scan equals scan_batch of x and of the clamped values", "[profile][batch_scan]") {
  std::mt19937 rng(23);
  for (size_t n : {0u, 1u, 15u, 16u, 17u, 100u, 4099u}) {
    for (bool nonfinite : {false, true}) {
      const auto x = mixed_values(n, rng, nonfinite);
      // Relu, Relu6, a clip around 0, a single point.
      for (auto [lo, hi] : std::vector<std::pair<float, float>>{{0.0f, kInf}, {0.0f, 6.0f}, {-1.0f, 1.0f}, {0.5f, 0.5f}}) {
        std::vector<float> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = std::min(std::max(x[i], lo), hi);
        const BatchStats want_x = quant::profile::scan_batch_portable(x.data(), static_cast<int64_t>(n));
        const BatchStats want_y = quant::profile::scan_batch_portable(y.data(), static_cast<int64_t>(n));
        const auto got = quant::profile::scan_batch_clamped(x.data(), static_cast<int64_t>(n), lo, hi);
        INFO("n " << n << " lo " << lo << " hi " << hi);
        check_same(got.y, want_y);
        CHECK(same_bits(got.x_min, want_x.min));
        CHECK(same_bits(got.x_max, want_x.max));
        CHECK(got.x_nan == want_x.nan);
        CHECK(got.x_inf == want_x.inf);
      }
    }
  }
}

TEST_CASE("batch scan: an infinity in the clamped scan's tail is counted, not taken as finite", "[profile][batch_scan]") {
  // Log(0) = -inf among 8 values (a tensor shorter than one 16-wide step) and
  // past the last full step: no NaN with it, so only the count can tell.
  for (size_t n : {8u, 17u, 31u}) {
    for (float bad : {-kInf, kInf}) {
      std::vector<float> x(n);
      for (size_t i = 0; i < n; ++i) x[i] = 0.25f * static_cast<float>(i) - 1.0f;
      x[n - 2] = bad;
      const BatchStats want_x = quant::profile::scan_batch_portable(x.data(), static_cast<int64_t>(n));
      const auto got = quant::profile::scan_batch_clamped(x.data(), static_cast<int64_t>(n), 0.0f, kInf);
      INFO("n " << n << " bad " << bad);
      CHECK(got.x_inf == 1);
      CHECK(want_x.inf == 1);
      CHECK(got.y.finite == (bad > 0 ? n - 1 : n));  // Relu(-inf) = 0 is finite, Relu(inf) is not
    }
  }
}
