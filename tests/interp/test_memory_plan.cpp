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
#include "tests/interp/plan_util.h"
#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"

using quant::DType;
using quant::Tensor;
using quant::interp::BufferUse;
using quant::interp::PlanOptions;
using quant::interp::Session;
using quant::ir::Attribute;
using quant::ir::Value;
using quant::testing::random_tensor;
using quant::testing::random_weight;
using quant::testing::run;
using quant::testing::same_bits;

namespace {

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
  Value* weight(const std::string& name, quant::Dims shape, uint32_t seed) { return random_weight(g, name, std::move(shape), seed); }
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

}  // namespace

TEST_CASE("plan_buffers never shares a buffer between overlapping lifetimes", "[interp][memory_plan]") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferUse> uses;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const int64_t first = rng() % 30;
      const int64_t cls = static_cast<int64_t>(rng() % 4) - 1;  // -1: never shares
      uses.push_back({first, first + static_cast<int64_t>(rng() % 8), cls, static_cast<int64_t>(rng() % 1000)});
    }
    const auto plan = quant::interp::plan_buffers(uses);
    REQUIRE(plan.buffer_of.size() == uses.size());
    REQUIRE(plan.capacity.size() == static_cast<size_t>(plan.buffer_count));
    // A buffer holds the most bytes of its uses, no more.
    std::vector<int64_t> most(plan.capacity.size(), 0);
    for (size_t i = 0; i < uses.size(); ++i)
      most[static_cast<size_t>(plan.buffer_of[i])] = std::max(most[static_cast<size_t>(plan.buffer_of[i])], uses[i].bytes);
    CHECK(most == plan.capacity);
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

TEST_CASE("plan_buffers: the smallest free buffer that holds a use, else the largest grown", "[interp][memory_plan]") {
  // Steps 0-1: a (100 bytes), b (10), c (40) live; from step 2 all three are free.
  std::vector<BufferUse> uses = {{0, 1, 0, 100}, {0, 1, 0, 10}, {0, 1, 0, 40},
                                 {2, 3, 0, 30},   // best fit: c's 40, not a's 100
                                 {2, 3, 0, 8},    // b's 10
                                 {2, 3, 0, 150},  // none holds it: a's, grown to 150
                                 {4, 4, 0, 10},   // all free again; b's 10 (a's and c's are larger)
                                 {4, 4, 1, 10}};  // another class: a buffer of its own
  const auto plan = quant::interp::plan_buffers(uses);
  CHECK(plan.buffer_count == 4);
  CHECK(plan.buffer_of[3] == plan.buffer_of[2]);
  CHECK(plan.buffer_of[4] == plan.buffer_of[1]);
  CHECK(plan.buffer_of[5] == plan.buffer_of[0]);
  CHECK(plan.buffer_of[6] == plan.buffer_of[1]);
  CHECK(plan.buffer_of[7] == 3);
  CHECK(plan.capacity == std::vector<int64_t>{150, 10, 40, 10});
  // Of equal free buffers, the one freed last (its bytes the likeliest in cache).
  const std::vector<BufferUse> equal = {{0, 0, 0, 16}, {0, 1, 0, 16}, {2, 2, 0, 16}};
  CHECK(quant::interp::plan_buffers(equal).buffer_of == std::vector<int>{0, 1, 1});
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

// A chain whose values differ in type and size, typed or not:
//   c1 = Conv(x) [1,8,8,8]; r1 = Relu(c1); p = MaxPool 2x2/2 (r1) [1,8,4,4];
//   t = Transpose(p) (into its planned buffer) and h = Cast<float16>(t) (a
//   kernel that makes its own output tensor); y = Relu(Conv(p)) [1,16,4,4];
//   f = Cast<float>(h).
// Later values (p, t, h, the second Conv's) may take the bytes of c1 (512
// floats) once it is dead.
struct MixedModel {
  quant::ir::Graph g;
  Value* add(const std::string& name, DType type, quant::Dims shape, bool typed) {
    Value* v = g.add_value(name);
    if (!typed) return v;
    v->dtype = type;
    v->has_shape = true;
    v->shape = std::move(shape);
    return v;
  }
  Value* weight(const std::string& name, quant::Dims shape, uint32_t seed) { return random_weight(g, name, std::move(shape), seed); }
  explicit MixedModel(bool typed) {
    g.opset_imports[""] = 13;
    Value* x = add("x", DType::Float32, {1, 4, 8, 8}, true);
    g.inputs.push_back(x);
    Value* c1 = add("c1", DType::Float32, {1, 8, 8, 8}, typed);
    g.add_node("Conv", {x, weight("w1", {8, 4, 3, 3}, 1)}, {c1}, "conv1")->attributes["pads"] = Attribute::of_ints({1, 1, 1, 1});
    Value* r1 = add("r1", DType::Float32, {1, 8, 8, 8}, typed);
    g.add_node("Relu", {c1}, {r1}, "relu1");
    Value* p = add("p", DType::Float32, {1, 8, 4, 4}, typed);
    auto* pool = g.add_node("MaxPool", {r1}, {p}, "pool");
    pool->attributes["kernel_shape"] = Attribute::of_ints({2, 2});
    pool->attributes["strides"] = Attribute::of_ints({2, 2});
    Value* t = add("t", DType::Float32, {1, 4, 4, 8}, typed);
    g.add_node("Transpose", {p}, {t}, "transpose")->attributes["perm"] = Attribute::of_ints({0, 2, 3, 1});
    Value* h = add("h", DType::Float16, {1, 4, 4, 8}, typed);
    g.add_node("Cast", {t}, {h}, "to_half")->attributes["to"] = Attribute::of_int(10);
    Value* c2 = add("c2", DType::Float32, {1, 16, 4, 4}, typed);
    g.add_node("Conv", {p, weight("w2", {16, 8, 3, 3}, 2)}, {c2}, "conv2")->attributes["pads"] = Attribute::of_ints({1, 1, 1, 1});
    Value* y = add("y", DType::Float32, {1, 16, 4, 4}, typed);
    g.add_node("Relu", {c2}, {y}, "relu2");
    Value* f = add("f", DType::Float32, {1, 4, 4, 8}, typed);
    g.add_node("Cast", {h}, {f}, "to_float")->attributes["to"] = Attribute::of_int(1);
    g.outputs = {y, f};
  }
};

TEST_CASE("values of different types and sizes share buffers, with the same bits and no allocation", "[interp][memory_plan]") {
  for (bool typed : {true, false}) {
    INFO("typed values: " << typed);
    MixedModel m(typed);
    auto reference = Session::create(m.g, {}, PlanOptions{false, false, false});
    auto s = Session::create(m.g, {}, PlanOptions{true, false, false});
    REQUIRE((reference.has_value() && s.has_value()));
    std::vector<int64_t> allocated;
    for (uint32_t seed = 1; seed <= 4; ++seed) {
      const Tensor x = random_tensor({1, 4, 8, 8}, seed);
      const auto want = run(**reference, x);
      const int64_t before = quant::tensor_allocations();
      const Tensor* inputs[] = {&x};
      auto got = (*s)->run(std::span<const Tensor* const>(inputs));
      allocated.push_back(quant::tensor_allocations() - before);
      REQUIRE(got.has_value());
      REQUIRE(got->size() == want.size());
      for (size_t k = 0; k < want.size(); ++k) CHECK(same_bits((*got)[k], want[k]));
    }
    // After the first run: the two graph outputs, and the tensor the first
    // Cast makes of its own (its buffer's bytes stay for the values after it).
    for (size_t r = 1; r < allocated.size(); ++r) {
      INFO("run " << r + 1);
      CHECK(allocated[r] == 3);
    }
    // One buffer serves values of different sizes: c1 (512 floats), then a later one.
    std::map<int, std::set<std::string>> values_of;
    for (const auto& pv : (*s)->memory_plan()) values_of[pv.buffer].insert(pv.value->name());
    bool mixed = false;
    for (const auto& [buffer, names] : values_of) mixed = mixed || (names.count("c1") && names.size() > 1);
    CHECK(mixed);
    CHECK((*s)->buffer_count() < static_cast<int>((*s)->memory_plan().size()));
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

// Reshape and Flatten run in place where their input is read last there
// (Kernel::reshapes_input): the output keeps its input's buffer whatever the
// shape input is, and the bits are those of the unplanned run. Where the
// input is read again later the Reshape copies, into a buffer of its own.
//   r = Relu(x) [1,4,6,6]; q = Reshape(r, [1, -1]); s = Relu(x); f = Flatten(s);
//   g = Reshape(s, [4, 36]) read before f; y = Add(Relu(q), f); z = Relu(g)
TEST_CASE("Reshape and Flatten take their input's buffer when it dies there", "[interp][memory_plan]") {
  for (bool typed : {true, false}) {
    INFO("typed values: " << typed);
    quant::ir::Graph g;
    g.opset_imports[""] = 13;
    const auto value = [&](const std::string& name, quant::Dims shape) {
      Value* v = g.add_value(name);
      if (typed) {
        v->dtype = DType::Float32;
        v->has_shape = true;
        v->shape = std::move(shape);
      }
      return v;
    };
    const auto shape_constant = [&](const std::string& name, std::vector<int64_t> dims) {
      Value* v = g.add_value(name);
      v->dtype = DType::Int64;
      v->constant = std::make_unique<Tensor>(DType::Int64, quant::Dims{static_cast<int64_t>(dims.size())});
      std::copy(dims.begin(), dims.end(), v->constant->data<int64_t>());
      return v;
    };
    Value* x = g.add_value("x");
    x->dtype = DType::Float32;
    x->has_shape = true;
    x->shape = {1, 4, 6, 6};
    g.inputs.push_back(x);
    Value *r = value("r", {1, 4, 6, 6}), *q = value("q", {1, 144}), *rq = value("rq", {1, 144});
    Value *s = value("s", {1, 4, 6, 6}), *gs = value("gs", {4, 36}), *f = value("f", {1, 144});
    Value *y = value("y", {1, 144}), *z = value("z", {4, 36});
    g.add_node("Relu", {x}, {r}, "relu_r");
    g.add_node("Reshape", {r, shape_constant("flat", {1, -1})}, {q}, "reshape_q");
    g.add_node("Relu", {q}, {rq}, "relu_q");
    g.add_node("Relu", {x}, {s}, "relu_s");
    g.add_node("Reshape", {s, shape_constant("rows", {4, 36})}, {gs}, "reshape_s");
    g.add_node("Flatten", {s}, {f}, "flatten_s");
    g.add_node("Add", {rq, f}, {y}, "add");
    g.add_node("Relu", {gs}, {z}, "relu_g");
    g.outputs = {y, z};
    auto reference = Session::create(g, {}, PlanOptions{false, false, false});
    auto planned = Session::create(g, {}, PlanOptions{true, false, true});
    REQUIRE((reference.has_value() && planned.has_value()));
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      const Tensor in = random_tensor({1, 4, 6, 6}, seed);
      const Tensor* inputs[] = {&in};
      auto want = (*reference)->run(std::span<const Tensor* const>(inputs));
      const int64_t before = quant::tensor_allocations();
      auto got = (*planned)->run(std::span<const Tensor* const>(inputs));
      // After the first run only the two graph outputs are new tensors: the
      // Reshape in place keeps r's bytes, the one out of place writes into
      // its planned buffer.
      if (seed > 1) CHECK(quant::tensor_allocations() - before == 2);
      REQUIRE((want.has_value() && got.has_value()));
      REQUIRE(got->size() == 2);
      for (size_t k = 0; k < 2; ++k) {
        CHECK((*got)[k].shape() == (*want)[k].shape());
        CHECK(std::memcmp((*got)[k].raw(), (*want)[k].raw(), (*want)[k].byte_size()) == 0);
      }
    }
    std::map<std::string, int> buffer_of;
    for (const auto& pv : (*planned)->memory_plan()) buffer_of[pv.value->name()] = pv.buffer;
    REQUIRE((buffer_of.count("r") && buffer_of.count("q") && buffer_of.count("s") && buffer_of.count("gs") && buffer_of.count("f")));
    CHECK(buffer_of["q"] == buffer_of["r"]);   // r dies at the Reshape
    CHECK(buffer_of["f"] == buffer_of["s"]);   // s dies at the Flatten
    CHECK(buffer_of["gs"] != buffer_of["s"]);  // s is read after this Reshape
  }
}

// A model that declares no shapes: its first run learns the sizes, each value
// with a buffer of its own in the first plan. A released value's bytes pass
// to the next value (Buffers::spare), so that run's peak is that of the
// plan it learns, not every value's at once: a chain of six Convs allocates
// c1 and c2, c3 to c5 reuse their bytes, then the graph output.
TEST_CASE("the first run of an untyped model passes released bytes on", "[interp][memory_plan]") {
  quant::ir::Graph g;
  g.opset_imports[""] = 13;
  Value* x = g.add_value("x");
  x->dtype = DType::Float32;
  x->has_shape = true;
  x->shape = {1, 4, 8, 8};
  g.inputs.push_back(x);
  Value* v = x;
  for (int i = 1; i <= 6; ++i) {
    Value* c = g.add_value("c" + std::to_string(i));  // no type, no shape
    g.add_node("Conv", {v, random_weight(g, "w" + std::to_string(i), {4, 4, 3, 3}, static_cast<uint32_t>(i))}, {c},
               "conv" + std::to_string(i))
        ->attributes["pads"] = Attribute::of_ints({1, 1, 1, 1});
    v = c;
  }
  g.outputs = {v};
  auto reference = Session::create(g, {}, PlanOptions{false, false, false});
  auto s = Session::create(g, {}, PlanOptions{true, false, true});
  REQUIRE((reference.has_value() && s.has_value()));
  std::vector<int64_t> allocated;
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const Tensor in = random_tensor({1, 4, 8, 8}, seed);
    const auto want = run(**reference, in);
    const Tensor* inputs[] = {&in};
    const int64_t before = quant::tensor_allocations();
    auto got = (*s)->run(std::span<const Tensor* const>(inputs));
    allocated.push_back(quant::tensor_allocations() - before);
    REQUIRE(got.has_value());
    REQUIRE(got->size() == 1);
    CHECK(same_bits((*got)[0], want[0]));
  }
  CHECK(allocated[0] == 3);  // c1, c2 and the output
  CHECK(allocated[1] == 1);  // the output: the learned plan's buffers came from the first run
  CHECK(allocated[2] == 1);
}
