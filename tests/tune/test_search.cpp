// The accuracy search (tune/search.h) on metrics whose answer is known.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>

#include "libquant/tune/search.h"

using quant::Expected;
using quant::tune::search_fewest;
using quant::tune::SearchGoal;

namespace {

// metric = 40 dB minus the harm of every layer not moved, and minus what is
// left of a moved layer's harm at its level (residual[level], none if absent).
struct Harm {
  std::map<std::string, double> harm;
  std::vector<std::map<std::string, double>> residual = {};
  int calls = 0;
  Expected<double> operator()(const std::vector<std::string>& moved, size_t level) {
    ++calls;
    std::set<std::string> m(moved.begin(), moved.end());
    double v = 40;
    for (const auto& [name, h] : harm) {
      if (!m.count(name)) v -= h;
      else if (level < residual.size() && residual[level].count(name)) v -= residual[level].at(name);
    }
    return v;
  }
};

SearchGoal at_least(double db, int budget = 20) { return {[db](double m) { return m >= db; }, budget}; }

}  // namespace

TEST_CASE("search: a conversion that meets the target costs one evaluation and moves nothing", "[tune][search]") {
  Harm h{{{"a", 1}, {"b", 2}}};
  auto r = search_fewest({"b", "a"}, at_least(30), std::ref(h));
  REQUIRE(r);
  CHECK(r->met);
  CHECK(r->moved.empty());
  CHECK(h.calls == 1);
  CHECK(r->before == 37);
}

TEST_CASE("search: bisects the ranking, then drops what the ranking put too high", "[tune][search]") {
  // 30 layers; the real harm: x3 = 20, x7 = 15, the others 0.1 each (2.8 in all).
  Harm h;
  std::vector<std::string> ranked;
  for (int i = 0; i < 30; ++i) {
    const std::string n = "x" + std::to_string(i);
    h.harm[n] = i == 3 ? 20 : i == 7 ? 15 : 0.1;
  }
  // An imperfect ranking: two harmless layers ahead of x7.
  ranked = {"x3", "x0", "x1", "x7"};
  for (int i = 0; i < 30; ++i)
    if (i != 3 && i != 0 && i != 1 && i != 7) ranked.push_back("x" + std::to_string(i));
  auto r = search_fewest(ranked, at_least(35), std::ref(h));
  REQUIRE(r);
  CHECK(r->met);
  CHECK(r->moved == std::vector<std::string>{"x3", "x7"});  // x0 and x1 dropped again
  CHECK(r->before == Approx(40 - 35 - 2.8));
  CHECK(r->after == Approx(40 - 2.8));
  CHECK(h.calls <= 20);
  CHECK(static_cast<int>(r->steps.size()) == h.calls);
  CHECK(r->steps[0].what == "as converted");
  CHECK(r->steps[1].what == "all moved to float");
}

TEST_CASE("search: a target nothing meets stops after moving everything", "[tune][search]") {
  Harm h{{{"a", 1}, {"b", 2}}};
  auto r = search_fewest({"b", "a"}, at_least(45), std::ref(h));
  REQUIRE(r);
  CHECK(!r->met);
  CHECK(r->moved == std::vector<std::string>{"b", "a"});
  CHECK(r->after == 40);
  CHECK(h.calls == 2);
}

TEST_CASE("search: the budget bounds the evaluations whatever the layer count", "[tune][search]") {
  Harm h;
  std::vector<std::string> ranked;
  for (int i = 0; i < 500; ++i) {
    ranked.push_back("l" + std::to_string(i));
    h.harm[ranked.back()] = 0.05;  // 25 dB lost in all: about half must move
  }
  auto r = search_fewest(ranked, at_least(28, 12), std::ref(h));
  REQUIRE(r);
  CHECK(r->met);
  CHECK(h.calls == 12);
  CHECK(r->after >= 28);
}

TEST_CASE("search: NaN never meets, and an evaluation error stops the search", "[tune][search]") {
  int calls = 0;
  auto nan = [&](const std::vector<std::string>&, size_t) -> Expected<double> { ++calls; return std::nan(""); };
  auto r = search_fewest({"a"}, {[](double) { return true; }, 20}, nan);
  REQUIRE(r);
  CHECK(!r->met);
  auto fails = [](const std::vector<std::string>& moved, size_t) -> Expected<double> {
    if (!moved.empty()) return quant::Status::bad_input("broken");
    return 1.0;
  };
  CHECK(!search_fewest({"a"}, at_least(5), fails));
}

TEST_CASE("search: 16 bits first, where they are enough", "[tune][search]") {
  // x2's harm is in its activations: 16 bits remove it. x5's only mostly.
  Harm h{{{"x0", 0.1}, {"x2", 20}, {"x5", 10}, {"x9", 0.1}}, {{{"x5", 1}}}};
  SearchGoal goal = at_least(37);
  goal.levels = {"uint16", "float"};
  auto r = search_fewest({"x2", "x5", "x0", "x9"}, goal, std::ref(h));
  REQUIRE(r);
  CHECK(r->met);
  CHECK(r->level == 0);
  CHECK(r->moved == std::vector<std::string>{"x2", "x5"});
  CHECK(r->after == Approx(40 - 0.2 - 1));
  CHECK(r->steps[1].what == "all moved to uint16");
  for (const auto& s : r->steps) CHECK(s.level == 0);  // float was never needed
}

TEST_CASE("search: float when 16 bits cannot reach the target", "[tune][search]") {
  // x2's harm is in its weights: 16-bit activations leave it all.
  Harm h{{{"x0", 0.1}, {"x2", 20}, {"x9", 0.1}}, {{{"x2", 20}}}};
  SearchGoal goal = at_least(35);
  goal.levels = {"uint16", "float"};
  auto r = search_fewest({"x2", "x0", "x9"}, goal, std::ref(h));
  REQUIRE(r);
  CHECK(r->met);
  CHECK(r->level == 1);
  CHECK(r->moved == std::vector<std::string>{"x2"});
  CHECK(!r->steps[1].meets);
  CHECK(r->steps[2].what == "all moved to float");
  CHECK(r->steps.back().level == 1);
}

TEST_CASE("search: when no level meets, the best of them is kept", "[tune][search]") {
  // 16 bits do better than float here (a contrived metric): the result says so.
  Harm h{{{"a", 5}}, {{{"a", 1}}, {{"a", 3}}}};
  SearchGoal goal = at_least(45);
  goal.levels = {"uint16", "float"};
  auto r = search_fewest({"a"}, goal, std::ref(h));
  REQUIRE(r);
  CHECK(!r->met);
  CHECK(r->level == 0);
  CHECK(r->after == 39);
  CHECK(h.calls == 3);
}
