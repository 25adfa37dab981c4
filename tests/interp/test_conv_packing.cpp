// A Conv's constant weights are packed once (ops_nn.cpp, ConvPacking); a 1x1
// conv's at its first run, whose map picks the layout (small maps: the lanes
// path). Whatever the layout, and whoever packs, the outputs are the bits of
// the same conv with its weights fed as an input (never packed).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"
#include "tests/interp/single_node.h"

using namespace quant;

namespace {

Tensor random_tensor(Dims shape, std::mt19937& rng) {
  Tensor t(DType::Float32, std::move(shape));
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::equal(a.data<float>(), a.data<float>() + a.size(), b.data<float>(),
                    [](float p, float q) { return std::memcmp(&p, &q, sizeof(float)) == 0; });
}

}  // namespace

TEST_CASE("1x1 Conv weights packed at the first run give the unpacked conv's bits on any map", "[interp][conv]") {
  std::mt19937 rng(7);
  const int64_t c = 48, m = 64;  // lanes-eligible on AVX2 (16 a panel) and AVX-512 (32)
  const Tensor w = random_tensor({m, c, 1, 1}, rng);
  // One Conv node, its weights an initializer (packed) or a graph input (never packed).
  testing::NodeSpec spec{"Conv", 13, {random_tensor({1, c, 7, 7}, rng), w}};
  ir::Graph input_graph, packed_graph;
  testing::build_node_graph(spec, input_graph);
  spec.constant_inputs = {false, true};
  testing::build_node_graph(spec, packed_graph);
  for (int threads : {1, 2}) {
    interp::SessionOptions options;
    options.threads = threads;
    auto packed = interp::Session::create(packed_graph, options);
    auto unpacked = interp::Session::create(input_graph, options);
    REQUIRE(packed);
    REQUIRE(unpacked);
    // The first runs race: four threads at once, a 7 x 7 map (the lanes
    // layout where the ISA has one); one packs, all get the same bits.
    const Tensor x7 = random_tensor({1, c, 7, 7}, rng);
    auto want7 = (*unpacked)->run({x7, w});
    REQUIRE(want7);
    std::vector<std::vector<Tensor>> got(4);
    std::vector<std::thread> runners;
    for (size_t i = 0; i < got.size(); ++i)
      runners.emplace_back([&, i] {
        auto r = (*packed)->run({x7});
        if (r) got[i] = std::move(r).value();
      });
    for (auto& t : runners) t.join();
    for (const auto& out : got) {
      REQUIRE(out.size() == 1);
      CHECK(same_bits(out[0], (*want7)[0]));
    }
    // Later runs on other maps keep the first run's layout: still the same bits.
    for (Dims shape : {Dims{1, c, 20, 20}, Dims{2, c, 3, 5}, Dims{1, c, 56, 56}}) {
      const Tensor x = random_tensor(shape, rng);
      auto want = (*unpacked)->run({x, w});
      auto have = (*packed)->run({x});
      REQUIRE(want);
      REQUIRE(have);
      INFO("map " << shape[2] << " x " << shape[3] << ", batch " << shape[0] << ", threads " << threads);
      CHECK(same_bits((*have)[0], (*want)[0]));
    }
  }
}
