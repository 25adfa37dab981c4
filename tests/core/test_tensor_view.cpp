// Tensor::view, can_hold and reuse: how the Session's planned buffers reach
// kernels (interp/output.h) as bytes that values of any type share.
#include <catch2/catch.hpp>

#include <cstdint>

#include "libquant/core/tensor.h"
#include "libquant/interp/output.h"

using quant::DType;
using quant::Tensor;

TEST_CASE("a view borrows its tensor's bytes; copies own theirs, moves keep borrowing", "[core][tensor]") {
  Tensor storage(DType::Float32, {10});
  REQUIRE(storage.owns_bytes());
  REQUIRE(storage.capacity() >= 40);
  Tensor v = storage.view();
  CHECK(v.raw() == storage.raw());
  CHECK(v.dtype() == DType::UInt8);
  CHECK(v.size() == static_cast<int64_t>(storage.capacity()));
  CHECK_FALSE(v.owns_bytes());
  v.data<uint8_t>()[0] = 7;
  CHECK(storage.data<uint8_t>()[0] == 7);
  const Tensor copy = v;
  CHECK(copy.raw() != storage.raw());
  CHECK(copy.owns_bytes());
  CHECK(copy.data<uint8_t>()[0] == 7);
  Tensor moved = std::move(v);
  CHECK(moved.raw() == storage.raw());
  CHECK(moved.capacity() == storage.capacity());
  CHECK(v.capacity() == 0);  // NOLINT(bugprone-use-after-move): a moved-from tensor holds nothing
}

TEST_CASE("can_hold and reuse: any type within the bytes, never strings, mapped or sequences", "[core][tensor]") {
  Tensor t(DType::Float32, {4, 4});  // 64 bytes
  const int64_t doubles = static_cast<int64_t>(t.capacity() / 8);
  CHECK(t.can_hold(DType::Int64, doubles));
  CHECK_FALSE(t.can_hold(DType::Int64, doubles + 1));
  CHECK_FALSE(t.can_hold(DType::String, 1));
  CHECK_FALSE(t.can_hold(DType::Undefined, 1));
  CHECK_FALSE(t.can_hold(DType::Float32, -1));
  const void* bytes = t.raw();
  t.reuse(DType::UInt8, {3, 5});
  CHECK(t.raw() == bytes);
  CHECK(t.dtype() == DType::UInt8);
  CHECK(t.shape() == quant::Dims{3, 5});
  CHECK(t.byte_size() == 15);
  CHECK_FALSE(Tensor::strings({2}, {"a", "b"}).can_hold(DType::UInt8, 1));
  CHECK_FALSE(Tensor::sequence(DType::Float32, {Tensor(DType::Float32, {4})}).can_hold(DType::UInt8, 1));
  CHECK(Tensor().capacity() == 0);
  CHECK(Tensor().view().empty());
}

TEST_CASE("reuse_or_create keeps a view's bytes when they are enough, else allocates", "[core][tensor]") {
  Tensor storage(DType::UInt8, {256});
  Tensor out = storage.view();
  REQUIRE(quant::interp::reuse_or_create(out, DType::Float32, {2, 8}).is_ok());
  CHECK(out.raw() == storage.raw());
  CHECK(out.shape() == quant::Dims{2, 8});
  const int64_t before = quant::tensor_allocations();
  REQUIRE(quant::interp::reuse_or_create(out, DType::Int64, {4, 8}).is_ok());  // 256 bytes: still fits
  CHECK(out.raw() == storage.raw());
  CHECK(quant::tensor_allocations() == before);
  REQUIRE(quant::interp::reuse_or_create(out, DType::Float32, {100}).is_ok());  // 400 bytes: a tensor of its own
  CHECK(out.raw() != storage.raw());
  CHECK(out.owns_bytes());
  CHECK(quant::tensor_allocations() == before + 1);
}
