#include <catch2/catch.hpp>

#include "libquant/kernels/shape_util.h"

using quant::kernels::Dims;

TEST_CASE("element_count", "[kernels][shape]") {
  using quant::kernels::element_count;
  CHECK(element_count(Dims{}) == 1);
  CHECK(element_count(Dims{2, 3, 4}) == 24);
  CHECK(element_count(Dims{2, 0, 5}) == 0);
}

TEST_CASE("broadcast_shapes follows numpy rules", "[kernels][shape]") {
  using quant::kernels::broadcast_shapes;
  CHECK(broadcast_shapes(Dims{2, 1, 3}, Dims{4, 1}) == Dims{2, 4, 3});
  CHECK(broadcast_shapes(Dims{4, 1}, Dims{2, 1, 3}) == Dims{2, 4, 3});
  CHECK(broadcast_shapes(Dims{}, Dims{3}) == Dims{3});
  CHECK(broadcast_shapes(Dims{2, 3}, Dims{2, 3}) == Dims{2, 3});
  CHECK(broadcast_shapes(Dims{1}, Dims{0}) == Dims{0});
  CHECK(broadcast_shapes(Dims{5, 1, 4}, Dims{1, 6, 1}) == Dims{5, 6, 4});
  CHECK_FALSE(broadcast_shapes(Dims{3}, Dims{4}).has_value());
  CHECK_FALSE(broadcast_shapes(Dims{2, 3}, Dims{3, 3}).has_value());
}

TEST_CASE("broadcast_strides are zero on broadcast dims", "[kernels][shape]") {
  using quant::kernels::broadcast_strides;
  CHECK(broadcast_strides(Dims{4, 1}, Dims{2, 4, 3}) == Dims{0, 1, 0});
  CHECK(broadcast_strides(Dims{2, 1, 3}, Dims{2, 4, 3}) == Dims{3, 0, 1});
  CHECK(broadcast_strides(Dims{3}, Dims{2, 3}) == Dims{0, 1});
  CHECK(broadcast_strides(Dims{}, Dims{2, 3}) == Dims{0, 0});
  CHECK(broadcast_strides(Dims{2, 3, 4}, Dims{2, 3, 4}) == Dims{12, 4, 1});
  CHECK(quant::kernels::contiguous_strides(Dims{2, 3, 4}) == Dims{12, 4, 1});
}
