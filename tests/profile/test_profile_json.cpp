#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "libquant/profile/profile.h"

using namespace quant;
using namespace quant::profile;
using nlohmann::json;

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

Profile sample_profile() {
  Profile p;
  p.model_path = "models/net.onnx";
  p.model_digest = std::string(64, 'a');
  p.graph_signature = std::string(64, 'b');
  p.samples = 3;
  p.bins = 32;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.1f, 3.0f);
  std::vector<float> v(1000);
  for (float& x : v) x = normal(rng);
  v[5] = std::numeric_limits<float>::quiet_NaN();
  v[6] = 1e-40f;  // a denormal
  TensorProfile conv{"float32", {1, 8, 4, 4}, Histogram(32)};
  conv.hist.add(v.data(), 500);
  conv.hist.add(v.data() + 500, 500);
  p.tensors.emplace("conv1/out:0", conv);
  float third = 1.0f / 3.0f;
  TensorProfile relu{"float32", {1, 8}, Histogram(32)};
  relu.hist.add(&third, 1);
  p.tensors.emplace("relu \"quoted\" \xc3\xa9", relu);
  float inf = std::numeric_limits<float>::infinity();
  TensorProfile dead{"float16", {}, Histogram(32)};
  dead.hist.add(&inf, 1);
  p.tensors.emplace("dead", dead);
  return p;
}

std::string error_of(const std::string& text) {
  auto p = profile_from_json(text, "prof.json");
  REQUIRE_FALSE(p.has_value());
  CHECK(p.status().code() == StatusCode::kBadInput);
  CHECK(p.status().message().rfind("prof.json: ", 0) == 0);
  return p.status().message();
}

// The sample profile as JSON, changed by `edit`.
std::string edited(const std::function<void(json&)>& edit) {
  json j = json::parse(profile_to_json(sample_profile()));
  edit(j);
  return j.dump();
}

}  // namespace

TEST_CASE("profile json: round trip is exact and idempotent", "[profile][json]") {
  Profile p = sample_profile();
  std::string text = profile_to_json(p);
  auto back = profile_from_json(text, "prof.json");
  REQUIRE(back.has_value());
  CHECK(profile_to_json(*back) == text);
  CHECK(back->model_path == p.model_path);
  CHECK(back->samples == 3);
  CHECK(back->bins == 32);
  REQUIRE(back->tensors.size() == 3);
  for (const auto& [name, t] : p.tensors) {
    INFO(name);
    const TensorProfile& u = back->tensors.at(name);
    CHECK(u.dtype == t.dtype);
    CHECK(u.shape == t.shape);
    CHECK(u.hist.counts() == t.hist.counts());
    CHECK(same_bits(u.hist.lo(), t.hist.lo()));
    CHECK(same_bits(u.hist.hi(), t.hist.hi()));
    CHECK(same_bits(u.hist.sum(), t.hist.sum()));
    CHECK(u.hist.nan_count() == t.hist.nan_count());
    CHECK(u.hist.inf_count() == t.hist.inf_count());
    if (!t.hist.empty()) {
      CHECK(same_bits(u.hist.min(), t.hist.min()));
      CHECK(same_bits(u.hist.max(), t.hist.max()));
    }
  }
}

TEST_CASE("profile json: layout and null for a tensor without finite values", "[profile][json]") {
  std::string text = profile_to_json(sample_profile());
  json j = json::parse(text);
  CHECK(j["format"] == "qtool-profile");
  CHECK(j["version"] == 2);
  CHECK(j["model"]["digest"] == std::string(64, 'a'));
  CHECK(j["tensors"]["dead"]["min"].is_null());
  CHECK(j["tensors"]["dead"]["max"].is_null());
  CHECK(j["tensors"]["dead"]["inf"] == 1);
  CHECK(j["tensors"]["dead"]["histogram"]["counts"].size() == 32);
  CHECK(j["tensors"]["conv1/out:0"]["nan"] == 1);
  CHECK(j["tensors"]["conv1/out:0"]["count"] == 999);
  // One line per tensor keeps files greppable.
  CHECK(std::count(text.begin(), text.end(), '\n') == 12);
}

TEST_CASE("profile json: the sum is optional and falls back to mean * count", "[profile][json]") {
  auto p = profile_from_json(edited([](json& j) {
                               j["tensors"]["conv1/out:0"].erase("sum");
                               j["tensors"]["conv1/out:0"]["mean"] = 0.5;
                             }),
                             "prof.json");
  REQUIRE(p.has_value());
  CHECK(p->tensors.at("conv1/out:0").hist.sum() == 0.5 * 999);
}

TEST_CASE("profile json: malformed input names the file and the field", "[profile][json]") {
  CHECK(error_of("").find("not valid JSON") != std::string::npos);
  CHECK(error_of("{\"format\": ").find("not valid JSON") != std::string::npos);
  CHECK(error_of("[1, 2]").find("not a qtool profile") != std::string::npos);
  CHECK(error_of("{\"format\": \"other\"}").find("not a qtool profile") != std::string::npos);
  CHECK(error_of(edited([](json& j) { j["version"] = 3; })) ==
        "prof.json: version: unsupported profile version 3 (this qtool reads versions 1 and 2)");
  CHECK(error_of(edited([](json& j) { j["version"] = 0; })) ==
        "prof.json: version: unsupported profile version 0 (this qtool reads versions 1 and 2)");
  CHECK(error_of(edited([](json& j) { j.erase("bins"); })) == "prof.json: bins: missing");
  CHECK(error_of(edited([](json& j) { j["samples"] = "three"; })) == "prof.json: samples: expected a non-negative integer");
  CHECK(error_of(edited([](json& j) { j["bins"] = 0; })).find("bins: must be between 1") != std::string::npos);
  CHECK(error_of(edited([](json& j) { j["model"].erase("digest"); })) == "prof.json: model.digest: missing");
  CHECK(error_of(edited([](json& j) { j["tensors"] = json::array(); })) == "prof.json: tensors: expected an object");
  CHECK(error_of(edited([](json& j) { j["bins"] = 16; })) ==
        "prof.json: tensors[\"conv1/out:0\"].histogram.counts: has 32 entries, expected 16 (bins)");
  CHECK(error_of(edited([](json& j) { j["tensors"]["conv1/out:0"]["histogram"]["lo"] = 1e6; }))
            .find("tensors[\"conv1/out:0\"]: histogram.lo (1000000) is greater than histogram.hi") != std::string::npos);
  CHECK(error_of(edited([](json& j) { j["tensors"]["conv1/out:0"]["min"] = nullptr; }))
            .find("tensors[\"conv1/out:0\"]: min/max") != std::string::npos);
  CHECK(error_of(edited([](json& j) { j["tensors"]["conv1/out:0"]["count"] = 5; }))
            .find("tensors[\"conv1/out:0\"].count: is 5 but histogram.counts add up to 999") != std::string::npos);
  CHECK(error_of(edited([](json& j) { j["tensors"]["dead"]["histogram"]["counts"][0] = -1; }))
            .find("tensors[\"dead\"].histogram.counts: expected an array of non-negative integers") != std::string::npos);
  CHECK(error_of(edited([](json& j) { j["tensors"]["dead"]["dtype"] = "complex64"; }))
            .find("tensors[\"dead\"].dtype: unknown data type 'complex64'") != std::string::npos);
  CHECK(error_of(edited([](json& j) { j["tensors"]["dead"]["shape"] = "1x8"; }))
            .find("tensors[\"dead\"].shape") != std::string::npos);
  CHECK(error_of(edited([](json& j) { j["tensors"]["dead"].erase("histogram"); })) ==
        "prof.json: tensors[\"dead\"].histogram: missing");
  // JSON has no NaN; a number too large for a double is not accepted either.
  std::string text = profile_to_json(sample_profile());
  std::string nan_text = text;
  nan_text.replace(nan_text.find("\"lo\":") + 5, 0, "NaN,\"x\":");
  CHECK(error_of(nan_text).find("not valid JSON") != std::string::npos);
  CHECK(error_of(edited([](json& j) { j["samples"] = 1; }).replace(0, 1, "{\"big\": 1e999,"))
            .find("not valid JSON") != std::string::npos);
}

TEST_CASE("profile json: save and load through a file", "[profile][json]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("qtool_profile_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string path = (dir / "p.json").string();
  Profile p = sample_profile();
  REQUIRE(save_profile(p, path).is_ok());
  auto back = load_profile(path);
  REQUIRE(back.has_value());
  CHECK(profile_to_json(*back) == profile_to_json(p));
  Profile mismatched = p;
  mismatched.bins = 16;
  CHECK(save_profile(mismatched, (dir / "bad.json").string()).code() == StatusCode::kInternal);
  CHECK_FALSE(fs::exists(dir / "bad.json"));
  auto missing = load_profile((dir / "none.json").string());
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.status().code() == StatusCode::kBadInput);
  CHECK(missing.status().message().find("none.json") != std::string::npos);
  fs::remove_all(dir);
}
