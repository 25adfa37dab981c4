// Every built-in target cites a public source for every rule it sets
// (DESIGN "Targets"; issue 21). The parser already refuses a source for a
// rule the file does not set; this test checks the other direction, on the
// repository's targets/*.json (the text compiled into the library is not
// public, and is the same files).
//
// Granularity: every field under "quantize" and "compute" is a rule. A rule is
// covered when "sources" has its dotted path or the path of an object that
// contains it ("quantize.weights" covers "quantize.weights.range"), or, for an
// object, when each of its fields is covered ("quantize.fixed_output_params"
// by one source per op).
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "libquant/target/target.h"

namespace {

using nlohmann::json;

std::vector<std::filesystem::path> target_files() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(QTOOL_SOURCE_DIR) / "targets")) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".json" && name.find(".schema.") == std::string::npos) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

bool cited(const json& sources, std::string path) {
  // The path itself or one of its ancestors, never the bare section name.
  while (path.find('.') != std::string::npos) {
    if (sources.contains(path)) return true;
    path.erase(path.rfind('.'));
  }
  return false;
}

// Appends to `uncited` every rule under `path` that has no source; an object
// none of whose fields is cited is reported as one rule.
void collect_uncited(const json& sources, const std::string& path, const json& value, std::vector<std::string>& uncited) {
  if (cited(sources, path)) return;
  if (value.is_object() && !value.empty()) {
    std::vector<std::string> inner;
    for (auto it = value.begin(); it != value.end(); ++it) collect_uncited(sources, path + "." + it.key(), *it, inner);
    const bool flat = std::none_of(value.begin(), value.end(), [](const json& v) { return v.is_object(); });
    if (flat && inner.size() == value.size()) {
      uncited.push_back(path);
    } else {
      uncited.insert(uncited.end(), inner.begin(), inner.end());
    }
    return;
  }
  uncited.push_back(path);
}

}  // namespace

TEST_CASE("the targets directory holds exactly the built-in targets", "[target][sources]") {
  std::set<std::string> files, builtin;
  for (const auto& p : target_files()) files.insert(p.stem().string());
  for (const auto& t : quant::target::builtin_targets()) builtin.insert(t.name);
  CHECK(files == builtin);
}

TEST_CASE("every built-in target cites a source for every rule it sets", "[target][sources]") {
  const auto files = target_files();
  REQUIRE(files.size() >= 4);
  for (const auto& file : files) {
    INFO(file.filename().string());
    const json j = read_json(file);
    const json sources = j.value("sources", json::object());
    std::vector<std::string> uncited;
    for (const char* section : {"quantize", "compute"}) {
      if (!j.contains(section)) continue;
      for (auto it = j[section].begin(); it != j[section].end(); ++it)
        collect_uncited(sources, std::string(section) + "." + it.key(), *it, uncited);
    }
    CAPTURE(uncited);
    CHECK(uncited.empty());
    // A citation names where it comes from: a URL or a repository path, and
    // says what the source states after a colon.
    for (auto it = sources.begin(); it != sources.end(); ++it) {
      INFO(it.key());
      const std::string s = it->get<std::string>();
      CHECK(s.find('/') != std::string::npos);
      CHECK(s.find(": ") != std::string::npos);
    }
    // The parser reads the same file, sources included.
    auto t = quant::target::load_target(file.string());
    REQUIRE(t);
    CHECK(t->sources.size() == sources.size());
  }
}

TEST_CASE("a rule without a source is found, and a parent's source covers its children", "[target][sources]") {
  const json sources = {{"quantize.weights", "x"}, {"quantize.fixed_output_params.Tanh", "y"}};
  std::vector<std::string> uncited;
  collect_uncited(sources, "quantize.weights", json{{"range", {-127, 127}}, {"type", "int8"}}, uncited);
  CHECK(uncited.empty());
  collect_uncited(sources, "quantize.fixed_output_params",
                  json{{"Tanh", {{"scale", 0.0078125}, {"zero_point", 0}}}, {"Sigmoid", {{"scale", 0.00390625}, {"zero_point", -128}}}},
                  uncited);
  CHECK(uncited == std::vector<std::string>{"quantize.fixed_output_params.Sigmoid"});
  uncited.clear();
  collect_uncited(sources, "quantize.ops", json::array({"Conv"}), uncited);
  CHECK(uncited == std::vector<std::string>{"quantize.ops"});
}
