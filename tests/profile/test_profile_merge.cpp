#include <catch2/catch.hpp>

#include <vector>

#include "libquant/profile/profile.h"

using namespace quant;
using quant::profile::Histogram;
using quant::profile::Profile;
using quant::profile::TensorProfile;

namespace {

Profile profile_of(int bins, const std::vector<std::pair<std::string, std::vector<float>>>& tensors, int64_t samples) {
  Profile p;
  p.bins = bins;
  p.samples = samples;
  for (const auto& [name, values] : tensors) {
    TensorProfile t{"float32", {1, static_cast<int64_t>(values.size())}, Histogram(bins)};
    t.hist.add(values.data(), static_cast<int64_t>(values.size()));
    p.tensors.emplace(name, std::move(t));
  }
  return p;
}

}  // namespace

TEST_CASE("profile merge: tensors combine, samples add up", "[profile][merge]") {
  Profile a = profile_of(64, {{"x", {1, 2, 3}}, {"only_a", {5}}}, 2);
  Profile b = profile_of(64, {{"x", {-4, 9}}, {"only_b", {7, 8}}}, 3);
  Profile whole = profile_of(64, {{"x", {1, 2, 3, -4, 9}}}, 5);
  profile::merge_into(a, std::move(b));
  CHECK(a.samples == 5);
  REQUIRE(a.tensors.size() == 3);
  const Histogram& x = a.tensors.at("x").hist;
  CHECK(x.counts() == whole.tensors.at("x").hist.counts());
  CHECK(x.min() == -4);
  CHECK(x.max() == 9);
  CHECK(a.tensors.at("only_b").hist.count() == 2);
}

TEST_CASE("profile merge: different bin counts move every tensor to the larger", "[profile][merge]") {
  Profile a = profile_of(32, {{"x", {1, 2, 3}}, {"only_a", {5}}}, 1);
  Profile b = profile_of(128, {{"x", {4}}}, 1);
  profile::merge_into(a, std::move(b));
  CHECK(a.bins == 128);
  for (const auto& [name, t] : a.tensors) {
    INFO(name);
    CHECK(t.hist.bins() == 128);
  }
  CHECK(a.tensors.at("only_a").hist.count() == 1);
  CHECK(a.tensors.at("x").hist.count() == 4);
  // The result is valid for the writer (every histogram has `bins` counts).
  CHECK(profile::profile_from_json(profile::profile_to_json(a), "m.json").has_value());
}
