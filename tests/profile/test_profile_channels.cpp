// Profile version 2: the per-channel absmax of MatMul / Gemm inputs (issue 25,
// SmoothQuant), written, read back, merged, and absent from version 1 files.
#include <catch2/catch.hpp>

#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"
#include "libquant/profile/collector.h"
#include "libquant/profile/profile.h"

using namespace quant;
using namespace quant::profile;
using nlohmann::json;

namespace {

Profile with_channels(std::vector<float> absmax, int version = kProfileVersion) {
  Profile p;
  p.version = version;
  p.model_digest = std::string(64, 'a');
  p.graph_signature = std::string(64, 'b');
  p.samples = 1;
  p.bins = 16;
  TensorProfile t{"float32", {2, static_cast<int64_t>(absmax.size())}, Histogram(16)};
  std::vector<float> v = {-1.5f, 0.25f, 3.0f};
  t.hist.add(v.data(), 3);
  t.channel_absmax = std::move(absmax);
  p.tensors.emplace("x", t);
  TensorProfile other{"float32", {3}, Histogram(16)};
  other.hist.add(v.data(), 3);
  p.tensors.emplace("y", other);
  return p;
}

}  // namespace

TEST_CASE("profile channels: version 2 writes channel_absmax and reads it back bit for bit", "[profile][json]") {
  // 0.1f has no short decimal form as a float; as a double it round-trips to the same float.
  Profile p = with_channels({0.1f, 40.5f, 0.0f, std::numeric_limits<float>::max()});
  const std::string text = profile_to_json(p);
  json j = json::parse(text);
  CHECK(j["version"] == 2);
  CHECK(j["tensors"]["x"]["channel_absmax"].size() == 4);
  CHECK_FALSE(j["tensors"]["y"].contains("channel_absmax"));
  auto back = profile_from_json(text, "p.json");
  REQUIRE(back.has_value());
  CHECK(back->version == 2);
  CHECK(back->tensors.at("x").channel_absmax == p.tensors.at("x").channel_absmax);
  CHECK(back->tensors.at("y").channel_absmax.empty());
  CHECK(profile_to_json(*back) == text);
}

TEST_CASE("profile channels: a version 1 profile reads without per-channel data", "[profile][json]") {
  json j = json::parse(profile_to_json(with_channels({1, 2})));
  j["version"] = 1;  // a field a version 1 reader never knew: ignored there too
  auto p = profile_from_json(j.dump(), "old.json");
  REQUIRE(p.has_value());
  CHECK(p->version == 1);
  CHECK(p->tensors.at("x").channel_absmax.empty());
  // And is written back as version 1, without the field.
  CHECK(json::parse(profile_to_json(*p))["version"] == 1);
  CHECK_FALSE(json::parse(profile_to_json(*p))["tensors"]["x"].contains("channel_absmax"));
}

TEST_CASE("profile channels: malformed channel_absmax names the file and the field", "[profile][json]") {
  for (json bad : {json("many"), json::array({1, -2}), json::array({1, "x"}), json::array({1e300})}) {
    json j = json::parse(profile_to_json(with_channels({1, 2})));
    j["tensors"]["x"]["channel_absmax"] = bad;
    auto p = profile_from_json(j.dump(), "p.json");
    REQUIRE_FALSE(p.has_value());
    CHECK(p.status().message().rfind("p.json: tensors[\"x\"].channel_absmax: expected an array of non-negative", 0) == 0);
  }
}

TEST_CASE("profile channels: merge takes the element-wise max; a side without them drops them", "[profile][merge]") {
  Profile a = with_channels({1, 5, 0});
  merge_into(a, with_channels({2, 3, 0.5f}));
  CHECK(a.tensors.at("x").channel_absmax == std::vector<float>{2, 5, 0.5f});
  CHECK(a.version == 2);

  Profile b = with_channels({1, 5, 0});
  merge_into(b, with_channels({1, 5}));  // another length: no honest maximum
  CHECK(b.tensors.at("x").channel_absmax.empty());

  Profile c = with_channels({1, 5, 0});
  Profile old = with_channels({}, 1);
  merge_into(c, std::move(old));
  CHECK(c.version == 1);
  CHECK(c.tensors.at("x").channel_absmax.empty());
}

TEST_CASE("profile channels: the collector records the absmax of MatMul / Gemm inputs over the last axis",
          "[profile][collector]") {
  // x [2, 3] -> MatMul(x, w) -> y; z = Relu(x) is no MatMul input.
  ir::Graph g;
  g.opset_imports[""] = 17;
  ir::Value* x = g.add_value("x");
  x->dtype = DType::Float32;
  g.inputs.push_back(x);
  ir::Value* w = g.add_value("w");
  w->dtype = DType::Float32;
  w->constant = std::make_unique<Tensor>(Tensor::from_vector<float>({3, 1}, {1, 1, 1}));
  ir::Value* y = g.add_value("y");
  ir::Value* r = g.add_value("r");
  ir::Value* z = g.add_value("z");
  g.add_node("Relu", {x}, {r}, "relu");
  g.add_node("MatMul", {r, w}, {y}, "mm");
  g.add_node("Relu", {y}, {z}, "relu2");
  g.outputs = {z};
  auto session = interp::Session::create(g, {});
  REQUIRE(session.has_value());
  Collector collector(g, 64);
  auto observe = [&](const ir::Value& v, const Tensor& t) { collector.observe(v, t); };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // r = Relu(x) is a twin of x (binned from it, its own observation skipped):
  // its channel absmax must still come.
  REQUIRE((*session)->run({Tensor::from_vector<float>({2, 3}, {1, -7, 2, 3, 0.5f, -1})}, observe).has_value());
  REQUIRE((*session)->run({Tensor::from_vector<float>({1, 3}, {-9, 4, nan})}, observe).has_value());
  CHECK(collector.tensors().at("r").channel_absmax == std::vector<float>{3, 4, 2});
  CHECK(collector.tensors().at("x").channel_absmax.empty());
  CHECK(collector.tensors().at("y").channel_absmax.empty());
}
