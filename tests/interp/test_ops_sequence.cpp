// Sequence and Optional values through one-node graphs, string Cast, and a
// SequenceMap body: construction, insertion and removal at both ends,
// splitting and joining, optionals with and without a value, and the errors
// of bad positions and kinds.
#include <catch2/catch.hpp>

#include "libquant/onnx/model_io.h"
#include "tests/interp/single_node.h"

using quant::Dims;
using quant::DType;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::f32;
using quant::testing::i64;
using quant::testing::NodeSpec;
using quant::testing::run_error;
using quant::testing::run_one;
using quant::testing::values_of;

namespace {

Tensor seq_of(std::vector<Tensor> items) { return Tensor::sequence(items.empty() ? DType::Float32 : items[0].dtype(), items); }

std::vector<float> item_values(const Tensor& seq, size_t i) { return values_of<float>(seq.items().at(i)); }

}  // namespace

TEST_CASE("SequenceConstruct, Insert, At, Erase, Length", "[interp][sequence]") {
  Tensor a = f32({2}, {1, 2}), b = f32({1}, {3}), c = f32({3}, {4, 5, 6});
  Tensor s = run_one({"SequenceConstruct", 12, {a, b}});
  REQUIRE(s.kind() == Tensor::Kind::Sequence);
  REQUIRE(s.items().size() == 2);
  CHECK(item_values(s, 1) == std::vector<float>{3});

  Tensor back = run_one({"SequenceInsert", 12, {s, c}});
  CHECK(back.items().size() == 3);
  CHECK(item_values(back, 2) == std::vector<float>{4, 5, 6});
  Tensor front = run_one({"SequenceInsert", 12, {s, c, i64({}, {-2})}});  // before item 0
  CHECK(item_values(front, 0) == std::vector<float>{4, 5, 6});

  CHECK(values_of<float>(run_one({"SequenceAt", 12, {back, i64({}, {-1})}})) == std::vector<float>{4, 5, 6});
  Tensor erased = run_one({"SequenceErase", 12, {back, i64({}, {0})}});
  CHECK(erased.items().size() == 2);
  CHECK(item_values(erased, 0) == std::vector<float>{3});
  CHECK(run_one({"SequenceErase", 12, {back}}).items().size() == 2);
  CHECK(values_of<int64_t>(run_one({"SequenceLength", 12, {back}})) == std::vector<int64_t>{3});

  NodeSpec empty{"SequenceEmpty", 12, {}};
  empty.attributes["dtype"] = Attribute::of_int(7);
  Tensor e = run_one(empty);
  CHECK(e.items().empty());
  CHECK(e.elem_dtype() == DType::Int64);
}

TEST_CASE("Sequence ops refuse bad positions, types and kinds", "[interp][sequence]") {
  Tensor s = seq_of({f32({1}, {1})});
  CHECK_THAT(run_error({"SequenceAt", 12, {s, i64({}, {1})}}), Catch::Contains("out of range"));
  CHECK_THAT(run_error({"SequenceInsert", 12, {s, i64({1}, {1})}}), Catch::Contains("does not fit a sequence of float32"));
  CHECK_THAT(run_error({"SequenceLength", 12, {f32({1}, {1})}}), Catch::Contains("must be a sequence"));
  CHECK_THAT(run_error({"SequenceErase", 12, {seq_of({})}}), Catch::Contains("empty sequence"));
  CHECK_THAT(run_error({"SequenceConstruct", 12, {f32({1}, {1}), i64({1}, {1})}}), Catch::Contains("differ in type"));
}

TEST_CASE("SplitToSequence and ConcatFromSequence", "[interp][sequence]") {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  NodeSpec ones{"SplitToSequence", 12, {x}};
  ones.attributes["axis"] = Attribute::of_int(1);
  ones.attributes["keepdims"] = Attribute::of_int(0);
  Tensor cols = run_one(ones);
  REQUIRE(cols.items().size() == 3);
  CHECK(cols.items()[1].shape() == Dims{2});
  CHECK(item_values(cols, 1) == std::vector<float>{2, 5});
  NodeSpec chunks{"SplitToSequence", 12, {x, i64({}, {2})}};
  chunks.attributes["axis"] = Attribute::of_int(1);
  Tensor parts = run_one(chunks);
  REQUIRE(parts.items().size() == 2);  // sizes 2 and 1
  CHECK(parts.items()[1].shape() == Dims{2, 1});
  NodeSpec sizes{"SplitToSequence", 12, {x, i64({2}, {1, 2})}};
  sizes.attributes["axis"] = Attribute::of_int(1);
  CHECK(run_one(sizes).items()[1].shape() == Dims{2, 2});
  sizes.inputs[1] = i64({2}, {1, 1});
  CHECK_THAT(run_error(sizes), Catch::Contains("does not add up"));

  NodeSpec cat{"ConcatFromSequence", 12, {parts}};
  cat.attributes["axis"] = Attribute::of_int(1);
  CHECK(values_of<float>(run_one(cat)) == values_of<float>(x));
  NodeSpec stack{"ConcatFromSequence", 12, {cols}};
  stack.attributes["axis"] = Attribute::of_int(-1);
  stack.attributes["new_axis"] = Attribute::of_int(1);
  Tensor stacked = run_one(stack);
  CHECK(stacked.shape() == Dims{2, 3});
  CHECK(values_of<float>(stacked) == values_of<float>(x));
}

TEST_CASE("Optional, OptionalHasElement, OptionalGetElement", "[interp][sequence]") {
  Tensor x = f32({2}, {1, 2});
  Tensor some = run_one({"Optional", 15, {x}});
  REQUIRE(some.kind() == Tensor::Kind::Optional);
  CHECK(values_of<uint8_t>(run_one({"OptionalHasElement", 15, {some}})) == std::vector<uint8_t>{1});
  CHECK(values_of<float>(run_one({"OptionalGetElement", 15, {some}})) == std::vector<float>{1, 2});
  Tensor none = Tensor::optional(std::nullopt);
  CHECK(values_of<uint8_t>(run_one({"OptionalHasElement", 15, {none}})) == std::vector<uint8_t>{0});
  CHECK_THAT(run_error({"OptionalGetElement", 15, {none}}), Catch::Contains("empty optional"));
  // Opset 18: a plain tensor is a present value.
  CHECK(values_of<uint8_t>(run_one({"OptionalHasElement", 18, {x}})) == std::vector<uint8_t>{1});
  CHECK(describe_value(some) == "optional of float32 [2]");
}

TEST_CASE("Cast to and from string follows numpy's str()", "[interp][sequence]") {
  NodeSpec to{"Cast", 13, {f32({5}, {0.5f, 1.0f, 1e-5f, -2.25f, 0.47892547f})}};
  to.attributes["to"] = Attribute::of_int(8);
  Tensor s = run_one(to);
  REQUIRE(s.dtype() == DType::String);
  CHECK(s.string_values() == std::vector<std::string>{"0.5", "1.0", "1e-05", "-2.25", "0.47892547"});
  NodeSpec from{"Cast", 13, {Tensor::strings({4}, {"0.25", "NaN", "-INF", "3"})}};
  from.attributes["to"] = Attribute::of_int(1);
  std::vector<float> v = values_of<float>(run_one(from));
  CHECK(v[0] == 0.25f);
  CHECK(std::isnan(v[1]));
  CHECK(v[2] == -INFINITY);
  CHECK(v[3] == 3.0f);
  from.inputs[0] = Tensor::strings({1}, {"12abc"});
  CHECK_THAT(run_error(from), Catch::Contains("cannot read '12abc'"));
}
