#include <catch2/catch.hpp>

#include <cstdint>

#include "libquant/core/tensor.h"

using quant::checked_element_count;
using quant::DType;
using quant::Tensor;

TEST_CASE("checked_element_count: refuses negative dims and int64 overflow", "[core][tensor]") {
  CHECK(*checked_element_count(std::vector<int64_t>{}) == 1);
  CHECK(*checked_element_count(std::vector<int64_t>{2, 3, 4}) == 24);
  CHECK(*checked_element_count(std::vector<int64_t>{5, 0, 7}) == 0);
  auto neg = checked_element_count(std::vector<int64_t>{2, -1});
  REQUIRE(!neg);
  CHECK(neg.status().code() == quant::StatusCode::kBadInput);
  CHECK(neg.status().message() == "shape [2,-1] has a negative dimension");
  // 2^62 * 4 wraps to 0: exactly what an unchecked Reshape would accept.
  CHECK(!checked_element_count(std::vector<int64_t>{int64_t{1} << 62, 4}));
  // Empty, but the other dims still may not overflow when multiplied together.
  CHECK(!checked_element_count(std::vector<int64_t>{0, int64_t{1} << 40, int64_t{1} << 40}));
}

TEST_CASE("Tensor::create: refuses tensors over max_tensor_bytes before allocating", "[core][tensor]") {
  quant::set_max_tensor_bytes(1024);
  CHECK(Tensor::create(DType::Float32, {16, 16}).has_value());  // exactly 1 KiB
  auto big = Tensor::create(DType::Float32, {16, 17});
  REQUIRE(!big);
  CHECK(big.status().code() == quant::StatusCode::kBadInput);
  CHECK(big.status().message().find("shape [16,17] float32 needs more than") != std::string::npos);
  CHECK(Tensor::create(DType::Int8, {1024}).has_value());
  CHECK(!Tensor::create(DType::Int8, {1025}));
  quant::set_max_tensor_bytes(0);  // back to the default: min(16 GiB, RAM)
  CHECK(quant::max_tensor_bytes() > 1024);
  CHECK(quant::max_tensor_bytes() <= int64_t{16} << 30);
  CHECK(!Tensor::create(DType::Float32, {int64_t{1} << 20, int64_t{1} << 20}));
}
