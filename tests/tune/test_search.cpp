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

// metric = 40 dB minus the harm of every layer not moved.
struct Harm {
  std::map<std::string, double> harm;
  int calls = 0;
  Expected<double> operator()(const std::vector<std::string>& moved) {
    ++calls;
    std::set<std::string> m(moved.begin(), moved.end());
    double v = 40;
    for (const auto& [name, h] : harm)
      if (!m.count(name)) v -= h;
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
  CHECK(r->steps[1].what == "all moved");
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
  auto nan = [&](const std::vector<std::string>&) -> Expected<double> { ++calls; return std::nan(""); };
  auto r = search_fewest({"a"}, {[](double) { return true; }, 20}, nan);
  REQUIRE(r);
  CHECK(!r->met);
  auto fails = [](const std::vector<std::string>& moved) -> Expected<double> {
    if (!moved.empty()) return quant::Status::bad_input("broken");
    return 1.0;
  };
  CHECK(!search_fewest({"a"}, at_least(5), fails));
}
