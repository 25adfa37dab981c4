// Histogram::add's one-pass path (batch_scan.h scan_block, block by block)
// against its definition, add_in_two_passes: every field to the bit. Without
// AVX-512 or AVX2 add() is add_in_two_passes, and these tests skip rather than
// compare a function with itself.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "libquant/profile/batch_scan.h"
#include "libquant/profile/histogram.h"
#include "tests/skip.h"

using quant::profile::BatchStats;
using quant::profile::BinLattice;
using quant::profile::BlockScan;
using quant::profile::Histogram;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void check_same(const Histogram& fast, const Histogram& ref) {
  CHECK(fast.counts() == ref.counts());
  CHECK(same_bits(fast.lo(), ref.lo()));
  CHECK(same_bits(fast.hi(), ref.hi()));
  CHECK(same_bits(fast.min(), ref.min()));
  CHECK(same_bits(fast.max(), ref.max()));
  CHECK(same_bits(fast.sum(), ref.sum()));
  CHECK(fast.count() == ref.count());
  CHECK(fast.nan_count() == ref.nan_count());
  CHECK(fast.inf_count() == ref.inf_count());
  CHECK(fast.on_lattice() == ref.on_lattice());
}

// Normal values at a scale, exact zeros of both signs (Relu), subnormals, and
// optionally NaN/Inf.
std::vector<float> values(size_t n, std::mt19937& rng, float scale, bool nonfinite) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::uniform_int_distribution<int> kind(0, 19);
  std::vector<float> v(n);
  for (float& x : v) {
    switch (kind(rng)) {
      case 0: case 1: case 2: x = 0.0f; break;
      case 3: x = -0.0f; break;
      case 4: x = std::numeric_limits<float>::denorm_min() * static_cast<float>(kind(rng) - 10); break;
      case 5: x = nonfinite ? kNaN : 1.0f; break;
      case 6: x = nonfinite ? (kind(rng) % 2 ? kInf : -kInf) : -1.0f; break;
      default: x = normal(rng);
    }
  }
  return v;
}

// Adds the same samples to a histogram with add() and one with add_in_two_passes().
void check_samples(const std::vector<std::vector<float>>& samples, int bins) {
  Histogram fast(bins), ref(bins);
  for (const auto& s : samples) {
    fast.add(s.data(), static_cast<int64_t>(s.size()));
    ref.add_in_two_passes(s.data(), static_cast<int64_t>(s.size()));
    check_same(fast, ref);
  }
}

}  // namespace

TEST_CASE("histogram add: one pass equals two passes on swept sizes, around block edges", "[profile][histogram]") {
  if (!quant::profile::scan_block_available())
    QTOOL_SKIP("no AVX-512 or AVX2 on this CPU: Histogram::add is add_in_two_passes, nothing to compare");
  std::mt19937 rng(5);
  // kBlock is 4096: sizes below, at and past one and several blocks, odd tails.
  std::vector<size_t> sizes;
  for (size_t n = 0; n < 70; ++n) sizes.push_back(n);
  for (size_t n : {4095u, 4096u, 4097u, 4104u, 4111u, 8192u, 8199u, 3u * 4096u + 17u, 70001u}) sizes.push_back(n);
  for (int bins : {16, 256, 2048}) {
    for (size_t n : sizes) {
      for (bool nonfinite : {false, true}) {
        // First sample sets the range; the next ones fall inside it (the binned
        // path), then one widens it, then inside again.
        check_samples({values(n, rng, 4.0f, nonfinite), values(n, rng, 1.0f, nonfinite), values(n, rng, 40.0f, nonfinite),
                       values(n, rng, 2.0f, nonfinite)},
                      bins);
      }
    }
  }
}

TEST_CASE("histogram add: one pass equals two passes when the range grows inside one tensor", "[profile][histogram]") {
  if (!quant::profile::scan_block_available())
    QTOOL_SKIP("no AVX-512 or AVX2 on this CPU: Histogram::add is add_in_two_passes, nothing to compare");
  // Values growing from block to block: nearly every block widens the lattice.
  std::vector<float> rising(5 * 4096 + 9);
  for (size_t i = 0; i < rising.size(); ++i) rising[i] = static_cast<float>(i) * 0.37f - 100.0f * static_cast<float>(i % 3);
  std::vector<float> falling(rising.rbegin(), rising.rend());
  // An outlier in the last block only, and one in the first only.
  std::mt19937 rng(9);
  auto late = values(3 * 4096, rng, 1.0f, false);
  late.back() = 1e6f;
  auto early = values(3 * 4096, rng, 1.0f, false);
  early.front() = -1e6f;
  for (int bins : {16, 2048}) {
    check_samples({rising}, bins);
    check_samples({falling, rising}, bins);
    check_samples({late, early, late}, bins);
  }
}

TEST_CASE("histogram add: one pass equals two passes on Relu outputs, zeros outside the range and extremes",
          "[profile][histogram]") {
  if (!quant::profile::scan_block_available())
    QTOOL_SKIP("no AVX-512 or AVX2 on this CPU: Histogram::add is add_in_two_passes, nothing to compare");
  std::mt19937 rng(13);
  // Relu / Relu6: half exact zeros (the bin of 0, counted without its own increment), some 6s.
  auto relu = values(20000, rng, 3.0f, false);
  for (float& x : relu) x = std::min(std::max(x, 0.0f), 6.0f);
  // Ranges without 0: the bin of 0 clamps to an edge bin, which values also use.
  std::vector<float> positive(9000), negative(9000);
  std::uniform_real_distribution<float> u(1.0f, 2.0f);
  for (size_t i = 0; i < positive.size(); ++i) {
    positive[i] = u(rng);
    negative[i] = -u(rng);
  }
  // Tiny negatives whose scaled cell underflows (cell -1, not 0) next to a huge value.
  const float tiny = std::numeric_limits<float>::denorm_min();
  std::vector<float> underflow(4096 * 2 + 5, 0.0f);
  for (size_t i = 0; i < underflow.size(); i += 3) underflow[i] = -tiny * static_cast<float>(1 + i % 4);
  underflow[17] = 3e30f;
  // Near the float limits: lattices whose 2^-e is no normal float (not binned by SIMD).
  std::vector<float> huge(5000);
  for (size_t i = 0; i < huge.size(); ++i) huge[i] = (i % 2 ? 1 : -1) * 3.0e38f * static_cast<float>(i % 97) / 97.0f;
  std::vector<float> small(5000);
  for (size_t i = 0; i < small.size(); ++i) small[i] = tiny * static_cast<float>(static_cast<int>(i % 50) - 25);
  // Nothing finite at all, then values.
  std::vector<float> bad(5000, kNaN);
  for (size_t i = 0; i < bad.size(); i += 5) bad[i] = -kInf;
  for (int bins : {16, 2048}) {
    check_samples({relu, relu, positive}, bins);
    check_samples({positive, positive, negative}, bins);
    check_samples({negative, negative}, bins);
    check_samples({underflow, underflow}, bins);
    check_samples({huge, huge, small}, bins);
    check_samples({small, small, huge}, bins);
    check_samples({bad, relu, bad, relu}, bins);
  }
}

TEST_CASE("histogram add: a hand-written histogram takes the two passes and gives their result", "[profile][histogram]") {
  if (!quant::profile::scan_block_available())
    QTOOL_SKIP("no AVX-512 or AVX2 on this CPU: Histogram::add is add_in_two_passes, nothing to compare");
  // A lattice coarser than the data needs and starting far below min.
  quant::profile::HistogramFields f;
  f.lo = -64;
  f.hi = 64;
  f.counts.assign(16, 0);
  f.counts[8] = 3;
  f.min = 0.5;
  f.max = 1.5;
  f.sum = 3;
  auto fast = Histogram::from_fields(f);
  auto ref = Histogram::from_fields(f);
  REQUIRE(fast.has_value());
  REQUIRE(ref.has_value());
  std::mt19937 rng(17);
  auto v = values(9000, rng, 1.0f, true);
  fast->add(v.data(), static_cast<int64_t>(v.size()));
  ref->add_in_two_passes(v.data(), static_cast<int64_t>(v.size()));
  check_same(*fast, *ref);
}

TEST_CASE("batch scan: scan_block's statistics and bins equal the portable scan and count", "[profile][batch_scan]") {
  if (!quant::profile::scan_block_available())
    QTOOL_SKIP("no AVX-512 or AVX2 on this CPU: scan_block is not used (Histogram::add makes two passes)");
  // The dispatched version (AVX-512 where the CPU has it) and the AVX2 one
  // alone, which a CPU without AVX-512 runs.
  using ScanFn = BlockScan (*)(const float*, int64_t, double*, const BinLattice*, int32_t*, const quant::profile::ClampSum*);
  std::vector<ScanFn> versions{quant::profile::scan_block};
  if (quant::profile::batch_scan_uses_avx2()) versions.push_back(quant::profile::scan_block_avx2);
  for (size_t version = 0; version < versions.size(); ++version) {
    const ScanFn scan_block = versions[version];
    INFO("version " << version);
    std::mt19937 rng(21);
    for (bool relu : {false, true})
    for (int bins : {16, 2048}) {
      for (size_t n : {0u, 1u, 7u, 8u, 15u, 16u, 17u, 31u, 33u, 100u, 4096u, 4099u}) {
        for (bool nonfinite : {false, true}) {
          const auto v = values(n, rng, 3.0f, nonfinite);
          const BatchStats ref = quant::profile::scan_batch_portable(v.data(), static_cast<int64_t>(n));
          // A Clip's bounds, and Relu's (no upper bound: its min is left out).
          const float lo = relu ? 0.0f : -0.5f, hi = relu ? std::numeric_limits<float>::infinity() : 2.0f;
          // Blocks of 8, 16 and 40 values carry the lanes: the sum is the portable
          // one; so is the clamped values' sum, taken in the same pass.
          const auto clamped_ref = quant::profile::scan_batch_clamped(v.data(), static_cast<int64_t>(n), lo, hi);
          for (int64_t block : {8, 16, 40, 4096}) {
            for (bool with_clamp : {false, true}) {
            double lanes[8] = {}, y_lanes[8] = {};
            const quant::profile::ClampSum clamp{lo, hi, y_lanes};
            uint64_t finite = 0, nan = 0, inf = 0;
            for (int64_t at = 0; at < static_cast<int64_t>(n); at += block) {
              const BlockScan b = scan_block(v.data() + at, std::min<int64_t>(block, static_cast<int64_t>(n) - at),
                                             lanes, nullptr, nullptr, with_clamp ? &clamp : nullptr);
              finite += b.stats.finite;
              nan += b.stats.nan;
              inf += b.stats.inf;
            }
            // The clamped sum means something only for finite values (ClampSum).
            if (with_clamp && !nonfinite) CHECK(same_bits(quant::profile::combine_lanes(y_lanes), clamped_ref.y.sum));
            CHECK(same_bits(quant::profile::combine_lanes(lanes), ref.sum));
            CHECK(finite == ref.finite);
            CHECK(nan == ref.nan);
            CHECK(inf == ref.inf);
            }
          }
          if (ref.finite == 0) continue;
          // Bins on the values' own lattice: hot bin counted, the others listed
          // (lattices of only subnormals are beyond the SIMD path: add() does not bin them there);
          // without count_hot every bin listed.
          const int e = Histogram::fit_exponent(ref.min, ref.max, bins);
          const auto first = static_cast<int64_t>(std::floor(std::ldexp(static_cast<double>(ref.min), -e)));
          if (!quant::profile::lattice_fits_simd(e, first)) continue;
          for (bool count_hot : {true, false}) {
            const BinLattice lattice{e, first, bins, static_cast<int32_t>(std::clamp<int64_t>(-first, 0, bins - 1)),
                                     count_hot};
            std::vector<int32_t> cold(n + 16);
            double lanes[8] = {};
            double y_lanes[8] = {};
            const quant::profile::ClampSum clamp{lo, hi, y_lanes};
            const BlockScan b =
                scan_block(v.data(), static_cast<int64_t>(n), lanes, &lattice, cold.data(), nonfinite ? nullptr : &clamp);
            if (!nonfinite) CHECK(same_bits(quant::profile::combine_lanes(y_lanes), clamped_ref.y.sum));
            CHECK(b.stats.min == ref.min);
            CHECK(b.stats.max == ref.max);
            if (!count_hot) CHECK(b.hot == 0);
            std::vector<uint64_t> counts(static_cast<size_t>(bins), 0), want(static_cast<size_t>(bins), 0);
            for (int64_t j = 0; j < b.cold; ++j) counts[static_cast<size_t>(cold[static_cast<size_t>(j)])]++;
            counts[static_cast<size_t>(lattice.hot)] += b.hot;
            quant::profile::count_cells_portable(v.data(), static_cast<int64_t>(n), e, first, want.data(), bins);
            CHECK(counts == want);
          }
        }
      }
    }
  }
}

TEST_CASE("histogram add_with_clamped: the histograms add(x) and add(clamp(x)) give, to the bit", "[profile][histogram]") {
  std::mt19937 rng(29);
  const float kInf = std::numeric_limits<float>::infinity();
  struct Bounds {
    float lo, hi;
  };
  // Relu, Relu6, a symmetric clip, and Clip's default upper bound (FLT_MAX).
  for (Bounds b : {Bounds{0.0f, kInf}, Bounds{0.0f, 6.0f}, Bounds{-1.5f, 1.5f}, Bounds{0.0f, std::numeric_limits<float>::max()}}) {
    for (int bins : {16, 2048}) {
      Histogram x_hist(bins), y_hist(bins), x_ref(bins), y_ref(bins);
      int paired = 0;
      // Scales that grow and shrink (lattices widen from sample to sample), a
      // sample with NaN/Inf and one that lies wholly below lo (both refused).
      std::vector<std::vector<float>> samples;
      for (float scale : {1.0f, 3.0f, 0.5f, 20.0f, 2.0f}) samples.push_back(values(5000, rng, scale, false));
      samples.push_back(values(3000, rng, 2.0f, true));
      samples.push_back(std::vector<float>(100, b.lo - 3.0f));
      samples.push_back(values(70001, rng, 7.0f, false));
      for (const auto& x : samples) {
        std::vector<float> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = std::min(std::max(x[i], b.lo), b.hi);
        const Histogram x_before = x_hist, y_before = y_hist;
        if (x_hist.add_with_clamped(x.data(), static_cast<int64_t>(x.size()), b.lo, b.hi, y_hist)) {
          ++paired;
        } else {
          // Refused: nothing changed; the caller adds both itself.
          check_same(x_hist, x_before);
          check_same(y_hist, y_before);
          x_hist.add(x.data(), static_cast<int64_t>(x.size()));
          y_hist.add(y.data(), static_cast<int64_t>(y.size()));
        }
        x_ref.add(x.data(), static_cast<int64_t>(x.size()));
        y_ref.add(y.data(), static_cast<int64_t>(y.size()));
        INFO("lo " << b.lo << " hi " << b.hi << " bins " << bins << " sample size " << x.size());
        check_same(x_hist, x_ref);
        check_same(y_hist, y_ref);
      }
      // The first samples were binned once; once x's range is far wider than
      // the bounds (scale 20), the finer lattice needs too many cells.
      CHECK(paired >= 3);
    }
  }
}

TEST_CASE("histogram add_with_clamped: a conv output and its Relu6 bin every value once", "[profile][histogram]") {
  std::mt19937 rng(31);
  Histogram x_hist(2048), y_hist(2048);
  for (int k = 0; k < 4; ++k) {
    const auto x = values(20000, rng, 2.5f, false);
    CHECK(x_hist.add_with_clamped(x.data(), static_cast<int64_t>(x.size()), 0.0f, 6.0f, y_hist));
  }
  CHECK(y_hist.min() == 0.0);
  CHECK(y_hist.count() == 80000);
}

namespace {

// add_with_clamped on one tensor `x`, checked against add(x) and add(clamp(x))
// on fresh histograms; returns whether the pair was taken in one.
bool check_pair(const std::vector<float>& x, float lo, float hi) {
  Histogram x_hist(2048), y_hist(2048), x_ref(2048), y_ref(2048);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = std::min(std::max(x[i], lo), hi);
  const bool paired = x_hist.add_with_clamped(x.data(), static_cast<int64_t>(x.size()), lo, hi, y_hist);
  if (!paired) {
    check_same(x_hist, Histogram(2048));  // refused: nothing changed
    check_same(y_hist, Histogram(2048));
    return false;
  }
  x_ref.add(x.data(), static_cast<int64_t>(x.size()));
  y_ref.add(y.data(), static_cast<int64_t>(y.size()));
  check_same(x_hist, x_ref);
  check_same(y_hist, y_ref);
  return true;
}

}  // namespace

TEST_CASE("histogram add_with_clamped: one pass while the range grows from block to block", "[profile][histogram]") {
  // 4096-value blocks (add_with_clamped's), each wider than the one before,
  // then narrower ones: the pair lattice coarsens and moves many times.
  std::mt19937 rng(37);
  std::vector<float> x;
  for (float scale : {0.01f, 0.02f, 0.1f, 0.25f, 0.5f, 0.3f, 1.0f, 0.1f, 0.8f}) {
    const auto block = values(4096, rng, scale, false);
    x.insert(x.end(), block.begin(), block.end());
  }
  x.push_back(0.5f);  // a short last block
  CHECK(check_pair(x, 0.0f, 6.0f));
  CHECK(check_pair(x, -2.5f, 2.5f));
}

TEST_CASE("histogram add_with_clamped: a first block wholly below lo is binned again once the range allows",
          "[profile][histogram]") {
  // A dead channel first (every value below 0: y is one point, whose lattice
  // is far too fine for x's range), then live ones.
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> negative(-4.0f, -0.25f);
  std::vector<float> x(3 * 4096);
  for (size_t i = 0; i < 4096; ++i) x[i] = negative(rng);
  const auto live = values(2 * 4096, rng, 2.0f, false);
  std::copy(live.begin(), live.end(), x.begin() + 4096);
  CHECK(check_pair(x, 0.0f, 6.0f));
  // Only the dead channel: y is constant, which add_with_clamped leaves to separate adds.
  x.resize(4096);
  CHECK_FALSE(check_pair(x, 0.0f, 6.0f));
}

TEST_CASE("histogram add_with_clamped: a NaN or an infinity in a late block leaves both histograms unchanged",
          "[profile][histogram]") {
  std::mt19937 rng(43);
  for (float bad : {kNaN, kInf, -kInf}) {
    auto x = values(5 * 4096, rng, 2.0f, false);
    x[4 * 4096 + 17] = bad;
    CHECK_FALSE(check_pair(x, 0.0f, 6.0f));
    x.back() = bad;  // in the scalar tail of the last block
    x[4 * 4096 + 17] = 1.0f;
    x.push_back(2.0f);
    CHECK_FALSE(check_pair(x, 0.0f, 6.0f));
  }
}

TEST_CASE("histogram add_with_clamped: a block whose largest value is where the working cells end", "[profile][histogram]") {
  // Values on a grid of 2^-15 in [-300, k] grid steps, k one step more in
  // each 4096-value block (add_with_clamped's), from 1100 to 1850. With y in
  // [0, k * 2^-15] the pair lattice's cells are the grid's (k in 1025..2048),
  // so every block maximum is a cell edge, and the growing maximum meets the
  // edge where the working cells end (1800: 1401 cells padded by half) exactly.
  std::mt19937 rng(47);
  std::vector<float> x;
  for (int k = 1100; k <= 1850; ++k) {
    std::uniform_int_distribution<int> grid(-300, k);
    const size_t at = x.size();
    for (int i = 0; i < 4096; ++i) x.push_back(std::ldexp(static_cast<float>(grid(rng)), -15));
    x[at] = std::ldexp(static_cast<float>(k), -15);
    x[at + 1] = std::ldexp(-300.0f, -15);
  }
  CHECK(check_pair(x, 0.0f, 6.0f));
}

TEST_CASE("histogram add: blocks with and without runs of zeros (the hot-bin probe) bin as two passes do",
          "[profile][histogram]") {
  if (!quant::profile::scan_block_available())
    QTOOL_SKIP("no AVX-512 or AVX2 on this CPU: Histogram::add is add_in_two_passes, nothing to compare");
  // 20 blocks of 4096: no zero in blocks 0-2 (the probe turns the hot test
  // off), long runs of zeros in 3-9 (seen again at the probe of block 8),
  // a few in 10-19 (under 1 in 32: off again after block 10), and a tail.
  std::mt19937 rng(41);
  std::normal_distribution<float> normal(0.5f, 2.0f);
  std::vector<float> x(20 * 4096 + 123);
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t block = i / 4096;
    const bool zero = block >= 3 && block <= 9 ? (i / 64) % 2 == 0 : block >= 10 && i % 97 == 0;
    x[i] = zero ? 0.0f : normal(rng);
  }
  for (int bins : {16, 2048}) {
    INFO("bins " << bins);
    // Twice: the second add bins in the pass (the lattice is set).
    check_samples({x, x}, bins);
  }
  // The same tensor as a clamped pair's x (Relu, and a Clip with an upper bound).
  CHECK(check_pair(x, 0.0f, std::numeric_limits<float>::infinity()));
  CHECK(check_pair(x, -4.0f, 4.0f));
}
