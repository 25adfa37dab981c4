#include <catch2/catch.hpp>

#include <set>

#include "libquant/io/batch.h"

using namespace quant;

namespace {

std::vector<io::SampleSource> numbered(size_t n) {
  std::vector<io::SampleSource> out;
  for (size_t i = 0; i < n; ++i) out.push_back({std::to_string(i), {}});
  return out;
}

}  // namespace

TEST_CASE("batch: --shard I/N parses with 0 <= I < N", "[io][batch]") {
  auto s = io::parse_shard("2/5");
  REQUIRE(s.has_value());
  CHECK(s->index == 2);
  CHECK(s->count == 5);
  for (const char* bad : {"5/5", "1/0", "-1/3", "1", "/3", "1/", "a/b", "1/3x"}) {
    INFO(bad);
    auto r = io::parse_shard(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.status().message().find("--shard") != std::string::npos);
  }
}

TEST_CASE("batch: shards interleave and together hold every sample once", "[io][batch]") {
  auto all = numbered(10);
  auto s1 = io::select_shard(all, {1, 3});
  REQUIRE(s1.size() == 3);
  CHECK(s1[0].stem == "1");
  CHECK(s1[1].stem == "4");
  CHECK(s1[2].stem == "7");
  std::multiset<std::string> seen;
  for (size_t i = 0; i < 4; ++i)
    for (const auto& s : io::select_shard(all, {i, 4})) seen.insert(s.stem);
  CHECK(seen.size() == 10);
  CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 10);
  CHECK(io::select_shard(all, {0, 1}).size() == 10);
}

TEST_CASE("batch: stacking concatenates along dim 0 per input", "[io][batch]") {
  std::vector<std::vector<Tensor>> samples{
      {Tensor::from_vector<float>({1, 2}, {1, 2}), Tensor::from_vector<int64_t>({1}, {7})},
      {Tensor::from_vector<float>({2, 2}, {3, 4, 5, 6}), Tensor::from_vector<int64_t>({1}, {8})}};
  auto stacked = io::stack_samples(samples, {"s0", "s1"}, {"x", "n"});
  REQUIRE(stacked.has_value());
  CHECK((*stacked)[0].shape() == Dims{3, 2});
  CHECK(std::vector<float>((*stacked)[0].values<float>().begin(), (*stacked)[0].values<float>().end()) ==
        std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK((*stacked)[1].shape() == Dims{2});
  CHECK((*stacked)[1].data<int64_t>()[1] == 8);

  samples[1][0] = Tensor::from_vector<float>({1, 3}, {1, 2, 3});
  auto bad = io::stack_samples(samples, {"s0", "s1"}, {"x", "n"});
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.status().message().find("sample 's1': input 'x'") != std::string::npos);
}
