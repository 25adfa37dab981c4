// Every kernel allocates its outputs through Tensor::create, so an output
// whose size comes from the data (an outer product, a gather, a widening
// cast, a computed shape) is refused as bad input before allocating once it
// exceeds max_tensor_bytes(), naming the node and the shape. The limit is
// lowered to 1 MiB here; each input stays below it.
#include <catch2/catch.hpp>

#include "tests/interp/single_node.h"

using quant::DType;
using quant::Dims;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::NodeSpec;
using quant::testing::run_node;

namespace {

// Lowers the per-tensor limit for one test and restores the default after.
struct TensorLimit {
  explicit TensorLimit(int64_t bytes) { quant::set_max_tensor_bytes(bytes); }
  ~TensorLimit() { quant::set_max_tensor_bytes(0); }
};

constexpr int64_t kLimit = int64_t{1} << 20;

Tensor ones(DType t, Dims shape) {
  auto x = Tensor::create(t, std::move(shape));
  REQUIRE(x.has_value());
  return std::move(x).value();
}

// The node is refused with bad_input naming it and the output shape; with
// the default limit the same node runs.
void require_refused(const NodeSpec& spec, const std::string& shape) {
  {
    TensorLimit limit(kLimit);
    auto out = run_node(spec);
    REQUIRE_FALSE(out.has_value());
    INFO(out.status().message());
    CHECK(out.status().code() == quant::StatusCode::kBadInput);
    CHECK(out.status().message().find(spec.op_type + " node 'node'") != std::string::npos);
    CHECK(out.status().message().find("shape " + shape) != std::string::npos);
    CHECK(out.status().message().find("needs more than 1 MiB") != std::string::npos);
  }
  auto out = run_node(spec);
  INFO(out.status().message());
  CHECK(out.has_value());
}

}  // namespace

TEST_CASE("output limit: MatMul and Gemm outer products", "[interp][limits]") {
  require_refused(NodeSpec{"MatMul", 13, {ones(DType::Float32, {1024, 1}), ones(DType::Float32, {1, 1024})}}, "[1024,1024]");
  require_refused(NodeSpec{"Gemm", 13, {ones(DType::Float32, {1024, 1}), ones(DType::Float32, {1, 1024})}}, "[1024,1024]");
}

TEST_CASE("output limit: Gather and Einsum grow their inputs", "[interp][limits]") {
  NodeSpec gather{"Gather", 13, {ones(DType::Float32, {1, 1024}), ones(DType::Int64, {1024})}};
  gather.inputs[1] = Tensor(DType::Int64, {1024});  // all index 0
  require_refused(gather, "[1024,1024]");
  NodeSpec einsum{"Einsum", 12, {ones(DType::Float32, {1024}), ones(DType::Float32, {1024})}};
  einsum.attributes["equation"] = Attribute::of_string("i,j->ij");
  require_refused(einsum, "[1024,1024]");
}

TEST_CASE("output limit: a widening Cast", "[interp][limits]") {
  // 512 KiB of uint8 become 4 MiB of double.
  NodeSpec cast{"Cast", 13, {ones(DType::UInt8, {512, 1024})}};
  cast.attributes["to"] = Attribute::of_int(11);
  require_refused(cast, "[512,1024] float64");
}

TEST_CASE("output limit: shapes computed from input values", "[interp][limits]") {
  // Under the interpreter's own ceiling on computed sizes, over the tensor limit.
  require_refused(NodeSpec{"ConstantOfShape", 9, {Tensor::from_vector<int64_t>({2}, {1024, 1024})}}, "[1024,1024]");
  NodeSpec expand{"Expand", 13, {ones(DType::Float32, {1}), Tensor::from_vector<int64_t>({2}, {1024, 1024})}};
  require_refused(expand, "[1024,1024]");
  NodeSpec tile{"Tile", 13, {ones(DType::Float32, {1, 1024}), Tensor::from_vector<int64_t>({2}, {1024, 1})}};
  require_refused(tile, "[1024,1024]");
}
