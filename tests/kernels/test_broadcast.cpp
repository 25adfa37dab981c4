// The run-based broadcast iterator against a naive per-element index
// computation, over a sweep of shapes (every mix of broadcast, missing and
// full dimensions up to rank 4).
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "libquant/kernels/broadcast.h"
#include "libquant/kernels/elementwise.h"
#include "libquant/kernels/shape_util.h"

using quant::kernels::Dims;

namespace {

// Flat index into `in` (right-aligned against out) of output element `flat`.
int64_t naive_index(const Dims& in, const Dims& out, int64_t flat) {
  int64_t index = 0, stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t coord = flat % out[d];
    flat /= out[d];
    const size_t lead = out.size() - in.size();
    if (d < lead) continue;
    const int64_t e = in[d - lead];
    if (e != 1) index += coord * stride;
    stride *= e;
  }
  return index;
}

// A random shape that broadcasts to `out`: drops some leading dims and sets
// some of the rest to 1.
Dims random_operand(const Dims& out, std::mt19937& rng) {
  const size_t drop = std::uniform_int_distribution<size_t>(0, out.size())(rng);
  Dims s(out.begin() + static_cast<std::ptrdiff_t>(drop), out.end());
  for (auto& d : s)
    if (rng() % 2) d = 1;
  return s;
}

std::vector<int64_t> iota(int64_t n, int64_t base) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = base + i;
  return v;
}

}  // namespace

TEST_CASE("broadcast_ternary matches naive indexing over a shape sweep", "[kernels][broadcast]") {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 400; ++trial) {
    const size_t rank = std::uniform_int_distribution<size_t>(0, 4)(rng);
    Dims out(rank);
    for (auto& d : out) d = std::uniform_int_distribution<int64_t>(1, 3)(rng);
    const Dims sa = random_operand(out, rng), sb = random_operand(out, rng), sc = random_operand(out, rng);
    const auto a = iota(quant::kernels::element_count(sa), 0);
    const auto b = iota(quant::kernels::element_count(sb), 1000);
    const auto c = iota(quant::kernels::element_count(sc), 1000000);
    const int64_t n = quant::kernels::element_count(out);
    std::vector<int64_t> y(static_cast<size_t>(n), -1);
    quant::kernels::broadcast_ternary([](int64_t p, int64_t q, int64_t r) { return p + q + r; }, a.data(), sa,
                                      b.data(), sb, c.data(), sc, y.data(), out);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t want = a[static_cast<size_t>(naive_index(sa, out, i))] +
                           b[static_cast<size_t>(naive_index(sb, out, i))] +
                           c[static_cast<size_t>(naive_index(sc, out, i))];
      INFO("trial " << trial << " element " << i);
      REQUIRE(y[static_cast<size_t>(i)] == want);
    }
    // The binary walk over the same shapes.
    std::vector<int64_t> y2(static_cast<size_t>(n), -1);
    quant::kernels::binary_broadcast<int64_t>(quant::kernels::BinaryOp::Sub, a.data(), sa, b.data(), sb, y2.data(),
                                              out);
    for (int64_t i = 0; i < n; ++i)
      REQUIRE(y2[static_cast<size_t>(i)] ==
              a[static_cast<size_t>(naive_index(sa, out, i))] - b[static_cast<size_t>(naive_index(sb, out, i))]);
  }
}

TEST_CASE("broadcast iterator merges dimensions into long runs", "[kernels][broadcast]") {
  // [2,3,4,5] + [3,1,1]: one run of 20 per (n, c) pair, the bias constant in it.
  int calls = 0;
  quant::kernels::for_each_broadcast_run<2>(
      {Dims{2, 3, 4, 5}, Dims{3, 1, 1}}, Dims{2, 3, 4, 5},
      [&](const int64_t* off, const int64_t* step, int64_t y_off, int64_t n) {
        CHECK(n == 20);
        CHECK(step[0] == 1);
        CHECK(step[1] == 0);
        CHECK(off[0] == y_off);
        CHECK(off[1] == (y_off / 20) % 3);
        ++calls;
      });
  CHECK(calls == 6);
  // Equal shapes and a scalar: a single run over everything.
  calls = 0;
  quant::kernels::for_each_broadcast_run<2>({Dims{4, 1, 6}, Dims{}}, Dims{4, 1, 6},
                                            [&](const int64_t*, const int64_t* step, int64_t, int64_t n) {
                                              CHECK(n == 24);
                                              CHECK(step[1] == 0);
                                              ++calls;
                                            });
  CHECK(calls == 1);
  // An empty output calls nothing.
  quant::kernels::for_each_broadcast_run<1>({Dims{0, 3}}, Dims{0, 3},
                                            [&](const int64_t*, const int64_t*, int64_t, int64_t) { ++calls; });
  CHECK(calls == 1);
}

TEST_CASE("BroadcastRuns visits any range of the output with the naive indices", "[kernels][broadcast]") {
  // Every slice [first, first + count) of the output, for shapes whose runs
  // are short and long, cut anywhere: each element is visited once, in
  // order, each input read at its naive index (a slice starting inside a
  // run too), and runs never cross a run's end.
  std::mt19937 rng(11);
  const std::vector<Dims> outs = {{2, 3, 4, 5}, {1, 6, 1, 7}, {5}, {}, {3, 1, 2}, {2, 2, 2, 2, 3}};
  for (const Dims& out : outs) {
    for (int trial = 0; trial < 6; ++trial) {
      const Dims a = random_operand(out, rng), b = random_operand(out, rng);
      const quant::kernels::BroadcastRuns<2> runs({a, b}, out);
      const int64_t total = quant::kernels::element_count(out);
      REQUIRE(runs.size() == total);
      for (int64_t first = 0; first <= total; ++first) {
        for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{3}, total - first}) {
          if (first + count > total) continue;
          int64_t next = first;
          runs.visit(first, count, [&](const int64_t* off, const int64_t* step, int64_t y_off, int64_t n) {
            REQUIRE(y_off == next);
            REQUIRE(n >= 1);
            REQUIRE(y_off / runs.run_length() == (y_off + n - 1) / runs.run_length());
            for (int64_t i = 0; i < n; ++i) {
              CHECK(off[0] + i * step[0] == naive_index(a, out, y_off + i));
              CHECK(off[1] + i * step[1] == naive_index(b, out, y_off + i));
            }
            next += n;
          });
          CHECK(next == first + count);
        }
      }
    }
  }
  // [2,3,4,5] * [3,1,1] runs 20 elements; an empty output has none.
  CHECK(quant::kernels::BroadcastRuns<2>({Dims{2, 3, 4, 5}, Dims{3, 1, 1}}, Dims{2, 3, 4, 5}).run_length() == 20);
  CHECK(quant::kernels::BroadcastRuns<1>({Dims{0, 3}}, Dims{0, 3}).size() == 0);
}

TEST_CASE("broadcast_copy repeats along broadcast dimensions", "[kernels][broadcast]") {
  const std::vector<uint16_t> x = {1, 2};
  std::vector<uint16_t> y(6);
  quant::kernels::broadcast_copy(x.data(), Dims{2, 1}, y.data(), Dims{2, 3}, sizeof(uint16_t));
  CHECK(y == std::vector<uint16_t>{1, 1, 1, 2, 2, 2});
  quant::kernels::broadcast_copy(x.data(), Dims{2}, y.data(), Dims{3, 2}, sizeof(uint16_t));
  CHECK(y == std::vector<uint16_t>{1, 2, 1, 2, 1, 2});
}
