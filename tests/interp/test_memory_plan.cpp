// Memory planning and fusion of the Session (PlanOptions): the plan never
// lets two simultaneously live values share a buffer, and neither planning
// nor fusion changes any output bit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "libquant/interp/buffer_plan.h"
#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"

using quant::DType;
using quant::Tensor;
using quant::interp::BufferUse;
using quant::interp::PlanOptions;
using quant::interp::Session;
using quant::ir::Attribute;
using quant::ir::Value;

namespace {

Tensor random_tensor(quant::Dims shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensor t(DType::Float32, std::move(shape));
  for (float& v : t.values<float>()) v = normal(rng);
  return t;
}

// A small residual CNN with branches, all shapes static ([1, 4, 6, 6]):
//   r1 = Relu(Conv(x))             fusable
//   r2 = Clip(Conv(r1), 0, 6)      fusable (bounds: a Constant node, an initializer)
//   r3 = Relu(Add(Conv1x1(r2), r1)) fused whole: Conv -> Add -> Relu, r1 the residual
//   mb = Add(MaxPool(r3), DepthwiseConv(r3))   two branches joining: depthwise Conv -> Add
//   c5 = Conv(mb), a graph output AND read by Relu: not fusable
//   y  = Relu(c5)
//   z  = Add(Conv(mb), zb[4,1,1])  Conv -> Add with a broadcast operand
//   u  = Add(Conv1x1(mb), Conv(mb)) the first Conv runs before the second exists: only the second fuses
// With typed = false the intermediate values carry no type or shape, as in
// models exported without value_info: fusion then infers float32 from the
// Conv, and the memory plan learns sizes from the first run.
struct ResidualModel {
  quant::ir::Graph g;
  Value* x;
  bool typed;

  Value* value(const std::string& name) {
    Value* v = g.add_value(name);
    if (!typed && name != "x") return v;
    v->dtype = DType::Float32;
    v->has_shape = true;
    v->shape = {1, 4, 6, 6};
    return v;
  }
  Value* weight(const std::string& name, quant::Dims shape, uint32_t seed) {
    Value* v = g.add_value(name);
    v->dtype = DType::Float32;
    v->constant = std::make_unique<Tensor>(random_tensor(std::move(shape), seed));
    return v;
  }
  Value* scalar(const std::string& name, float s) {
    Value* v = g.add_value(name);
    v->dtype = DType::Float32;
    v->constant = std::make_unique<Tensor>(Tensor::scalar<float>(s));
    return v;
  }
  // A bound as exporters write it: the output of a Constant node.
  Value* constant_node(const std::string& name, float s) {
    Value* v = g.add_value(name);
    v->dtype = DType::Float32;
    auto* n = g.add_node("Constant", {}, {v}, name + "_node");
    n->attributes["value"] = Attribute::of_tensor(Tensor::scalar<float>(s));
    return v;
  }
  Value* conv(const std::string& name, Value* in, int64_t k, int64_t group, uint32_t seed) {
    Value* out = value(name);
    auto* n = g.add_node("Conv", {in, weight(name + "_w", {4, 4 / group, k, k}, seed), weight(name + "_b", {4}, seed + 1)},
                         {out}, name + "_node");
    n->attributes["pads"] = Attribute::of_ints({k / 2, k / 2, k / 2, k / 2});
    n->attributes["group"] = Attribute::of_int(group);
    return out;
  }
  Value* op(const std::string& type, std::vector<Value*> ins, const std::string& name) {
    Value* out = value(name);
    g.add_node(type, std::move(ins), {out}, name + "_node");
    return out;
  }

  explicit ResidualModel(bool typed_values = true) : typed(typed_values) {
    g.opset_imports[""] = 13;
    x = value("x");
    g.inputs.push_back(x);
    Value* r1 = op("Relu", {conv("c1", x, 3, 1, 10)}, "r1");
    Value* r2 = op("Clip", {conv("c2", r1, 3, 1, 20), constant_node("lo", 0.0f), scalar("hi", 6.0f)}, "r2");
    Value* r3 = op("Relu", {op("Add", {conv("c3", r2, 1, 1, 30), r1}, "a3")}, "r3");
    Value* m = value("m");
    auto* mp = g.add_node("MaxPool", {r3}, {m}, "pool");
    mp->attributes["kernel_shape"] = Attribute::of_ints({3, 3});
    mp->attributes["pads"] = Attribute::of_ints({1, 1, 1, 1});
    Value* mb = op("Add", {m, conv("dw", r3, 3, 4, 40)}, "mb");
    Value* c5 = conv("c5", mb, 3, 1, 50);
    Value* y = op("Relu", {c5}, "y");
    Value* z = op("Add", {conv("c6", mb, 3, 1, 60), weight("zb", {4, 1, 1}, 70)}, "z");
    Value* u = op("Add", {conv("c7", mb, 1, 1, 80), conv("c8", mb, 3, 1, 90)}, "u");
    g.outputs = {y, c5, z, u};
  }
};

std::vector<Tensor> run(const Session& s, const Tensor& x) {
  auto out = s.run({x});
  INFO(out.status().message());
  REQUIRE(out.has_value());
  return *out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

}  // namespace

TEST_CASE("plan_buffers never shares a buffer between overlapping lifetimes", "[interp][memory_plan]") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferUse> uses;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const int64_t first = rng() % 30;
      const int64_t cls = static_cast<int64_t>(rng() % 4) - 1;  // -1: never shares
      uses.push_back({first, first + static_cast<int64_t>(rng() % 8), cls});
    }
    const auto plan = quant::interp::plan_buffers(uses);
    REQUIRE(plan.buffer_of.size() == uses.size());
    std::map<int, std::set<int64_t>> classes_of_buffer;
    for (size_t i = 0; i < uses.size(); ++i) {
      REQUIRE(plan.buffer_of[i] >= 0);
      REQUIRE(plan.buffer_of[i] < plan.buffer_count);
      classes_of_buffer[plan.buffer_of[i]].insert(uses[i].size_class);
      for (size_t j = i + 1; j < uses.size(); ++j) {
        if (plan.buffer_of[i] != plan.buffer_of[j]) continue;
        const bool overlap = uses[i].first <= uses[j].last && uses[j].first <= uses[i].last;
        CHECK_FALSE(overlap);
        CHECK(uses[i].size_class >= 0);
      }
    }
    for (const auto& [buffer, classes] : classes_of_buffer) CHECK(classes.size() == 1);
    // Optimal per class: buffers = the most uses of that class live at one step.
    int64_t expected = 0;
    for (int64_t cls = 0; cls < 3; ++cls) {
      int64_t most = 0;
      for (int64_t step = 0; step < 40; ++step) {
        int64_t live = 0;
        for (const auto& u : uses) live += u.size_class == cls && u.first <= step && step <= u.last;
        most = std::max(most, live);
      }
      expected += most;
    }
    for (const auto& u : uses) expected += u.size_class < 0;
    CHECK(plan.buffer_count == expected);
  }
}

TEST_CASE("the Session's plan keeps simultaneously live values apart on a residual graph", "[interp][memory_plan]") {
  for (bool typed : {true, false}) {
  ResidualModel m(typed);
  for (bool fuse : {false, true}) {
  for (bool in_place : {false, true}) {
    INFO("typed " << typed << ", fuse " << fuse << ", in place " << in_place);
    PlanOptions plan;
    plan.fuse = fuse;
    plan.in_place = in_place;
    auto s = Session::create(m.g, {}, plan);
    INFO(s.status().message());
    REQUIRE(s.has_value());
    // Untyped values: one buffer each until a run has shown their sizes.
    if (!typed) CHECK((*s)->buffer_count() == static_cast<int>((*s)->memory_plan().size()));
    REQUIRE((*s)->run({random_tensor({1, 4, 6, 6}, 3)}).has_value());
    const auto planned = (*s)->memory_plan();
    REQUIRE(!planned.empty());
    for (size_t i = 0; i < planned.size(); ++i)
      for (size_t j = i + 1; j < planned.size(); ++j) {
        if (planned[i].buffer != planned[j].buffer) continue;
        INFO(planned[i].value->name() << " and " << planned[j].value->name());
        // Written in place: one value's life starts at the step where the other's ends.
        const bool in_place_pair = (planned[j].takes_over == planned[i].value && planned[i].last == planned[j].first) ||
                                   (planned[i].takes_over == planned[j].value && planned[j].last == planned[i].first);
        CHECK((planned[i].last < planned[j].first || planned[j].last < planned[i].first || in_place_pair));
      }
    // In place: Relu r1 over Conv c1, Relu r3 over Add a3, ... (fusion leaves
    // no element-wise step to this graph); never with the option off.
    size_t taken_over = 0;
    for (const auto& p : planned) taken_over += p.takes_over != nullptr;
    CHECK((taken_over > 0) == (in_place && !fuse));
    // Graph outputs are never planned (they move into the result).
    for (const auto& p : planned) CHECK_FALSE(m.g.is_graph_output(p.value));
    // Buffers are shared: fewer buffers than planned values.
    CHECK((*s)->buffer_count() < static_cast<int>(planned.size()));
  }
  }
  }
}

TEST_CASE("a Session allocates nothing after its first run, typed or not", "[interp][memory_plan]") {
  for (bool typed : {true, false}) {
    INFO("typed values: " << typed);
    ResidualModel m(typed);
    auto s = Session::create(m.g, {}, PlanOptions{true, true});
    REQUIRE(s.has_value());
    std::vector<int64_t> allocated;
    for (uint32_t seed = 1; seed <= 4; ++seed) {
      const Tensor x = random_tensor({1, 4, 6, 6}, seed);
      const int64_t before = quant::tensor_allocations();
      const Tensor* inputs[] = {&x};  // borrowed: the run copies nothing
      REQUIRE((*s)->run(std::span<const Tensor* const>(inputs)).has_value());
      allocated.push_back(quant::tensor_allocations() - before);
    }
    // From the second run on, only the graph outputs (moved into the result)
    // are new; untyped values are replanned after the first run, whose
    // tensors become the new plan's buffers.
    const int64_t outputs = static_cast<int64_t>(m.g.outputs.size());
    for (size_t r = 1; r < allocated.size(); ++r) {
      INFO("run " << r + 1);
      CHECK(allocated[r] == outputs);
    }
    CHECK(allocated[0] > outputs);
  }
}

TEST_CASE("fusion and buffer reuse change no output bit", "[interp][memory_plan][fusion]") {
  for (bool typed : {true, false}) {
  INFO("typed values: " << typed);
  ResidualModel m(typed);
  auto reference = Session::create(m.g, {}, PlanOptions{false, false});
  REQUIRE(reference.has_value());
  const size_t unfused_steps = (*reference)->step_count();
  for (bool reuse : {false, true}) {
    for (bool fuse : {false, true}) {
      for (int threads : {1, 2}) {
       for (bool in_place : {false, true}) {
        quant::interp::SessionOptions options;
        options.threads = threads;
        auto s = Session::create(m.g, options, PlanOptions{reuse, fuse, in_place});
        REQUIRE(s.has_value());
        // Conv->Relu, Conv->Clip, Conv->Add->Relu, depthwise Conv->Add, c6->Add, c8->Add fused;
        // Conv c5 (a graph output) and c7 (its Add's other operand comes later) are not.
        CHECK((*s)->step_count() == unfused_steps - (fuse ? 7 : 0));
        // Several runs: later ones get the stale buffers of earlier ones.
        for (uint32_t seed = 1; seed <= 3; ++seed) {
          const Tensor x = random_tensor({1, 4, 6, 6}, seed);
          const auto want = run(**reference, x);
          const auto got = run(**s, x);
          REQUIRE(got.size() == want.size());
          for (size_t k = 0; k < got.size(); ++k) CHECK(same_bits(got[k], want[k]));
        }
       }
      }
    }
  }
  }
}

TEST_CASE("the observer sees every value before a later step overwrites it in place", "[interp][memory_plan]") {
  for (bool typed : {true, false}) {
    ResidualModel m(typed);
    // Every value each run shows the observer, copied as it is shown.
    const auto observe = [](const Session& s, const Tensor& x) {
      std::vector<std::pair<std::string, Tensor>> seen;
      REQUIRE(s.run({x}, [&](const Value& v, const Tensor& t) { seen.emplace_back(v.name(), t); }).has_value());
      return seen;
    };
    auto plain = Session::create(m.g, {}, PlanOptions{true, false, false});
    auto in_place = Session::create(m.g, {}, PlanOptions{true, false, true});
    REQUIRE((plain.has_value() && in_place.has_value()));
    for (uint32_t seed = 1; seed <= 3; ++seed) {  // untyped: the second run is the first one planned in place
      const Tensor x = random_tensor({1, 4, 6, 6}, seed);
      const auto want = observe(**plain, x);
      const auto got = observe(**in_place, x);
      REQUIRE(got.size() == want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        INFO(got[k].first);
        CHECK(got[k].first == want[k].first);
        CHECK(same_bits(got[k].second, want[k].second));
      }
    }
    bool any = false;
    for (const auto& p : (*in_place)->memory_plan()) any = any || p.takes_over;
    CHECK(any);
  }
}

TEST_CASE("a fused Session's observer sees the activation, not the value fused away", "[interp][fusion]") {
  ResidualModel m;
  auto s = Session::create(m.g, {}, PlanOptions{true, true});
  REQUIRE(s.has_value());
  std::set<std::string> seen;
  auto out = (*s)->run({random_tensor({1, 4, 6, 6}, 9)}, [&](const Value& v, const Tensor&) { seen.insert(v.name()); });
  REQUIRE(out.has_value());
  CHECK(seen.count("r1") == 1);
  CHECK(seen.count("c1") == 0);
  CHECK(seen.count("a3") == 0);
  CHECK(seen.count("c3") == 0);
  CHECK(seen.count("r3") == 1);
  CHECK(seen.count("dw") == 0);
  CHECK(seen.count("mb") == 1);
  CHECK(seen.count("c5") == 1);  // a graph output: never fused away
  CHECK(seen.count("c7") == 1);  // the residual of c8's fused Add
  CHECK(seen.count("c8") == 0);
  auto unfused = Session::create(m.g);
  REQUIRE(unfused.has_value());
  seen.clear();
  REQUIRE((*unfused)->run({random_tensor({1, 4, 6, 6}, 9)}, [&](const Value& v, const Tensor&) { seen.insert(v.name()); }).has_value());
  CHECK(seen.count("c1") == 1);  // fusion is off by default
}
