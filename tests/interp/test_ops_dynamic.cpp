// DynamicQuantizeLinear, MatMulInteger, ConvInteger and com.microsoft
// MatMulNBits, against the spec's formulas written out here.
#include <catch2/catch.hpp>
#include <random>

#include "tests/interp/single_node.h"

using quant::DType;
using quant::Dims;
using quant::Tensor;
using quant::ir::Attribute;
using quant::testing::NodeSpec;
using quant::testing::run_error;
using quant::testing::run_ok;
using quant::testing::values_of;

namespace {

template <class T>
Tensor random_tensor(Dims shape, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  Tensor t(quant::dtype_of<T>(), std::move(shape));
  for (auto& v : t.values<T>()) v = static_cast<T>(dist(rng));
  return t;
}

}  // namespace

TEST_CASE("DynamicQuantizeLinear gives y, scale and zero point", "[interp][dynamic]") {
  NodeSpec s{"DynamicQuantizeLinear", 11, {Tensor::from_vector<float>({2, 3}, {0, 2, -3, -2.5f, 1.34f, 0.5f})}};
  s.num_outputs = 3;
  auto out = run_ok(s);
  CHECK(out[0].dtype() == DType::UInt8);
  CHECK(out[0].shape() == Dims{2, 3});
  CHECK(values_of<uint8_t>(out[0]) == std::vector<uint8_t>{153, 255, 0, 26, 221, 179});
  CHECK(out[1].rank() == 0);
  CHECK(out[1].data<float>()[0] == 5.0f / 255.0f);
  CHECK(out[2].data<uint8_t>()[0] == 153);
}

TEST_CASE("MatMulInteger: batched A, per-column B zero points, both type pairs", "[interp][dynamic]") {
  const int64_t B = 2, M = 3, K = 4, N = 5;
  Tensor a = random_tensor<uint8_t>({B, M, K}, 1, 0, 255);
  Tensor w = random_tensor<int8_t>({K, N}, 2, -128, 127);
  Tensor za = Tensor::scalar<uint8_t>(121);
  Tensor zb = random_tensor<int8_t>({N}, 3, -5, 5);
  auto y = run_ok(NodeSpec{"MatMulInteger", 10, {a, w, za, zb}})[0];
  REQUIRE(y.shape() == Dims{B, M, N});
  REQUIRE(y.dtype() == DType::Int32);
  for (int64_t i = 0; i < B * M; ++i)
    for (int64_t n = 0; n < N; ++n) {
      int32_t want = 0;
      for (int64_t k = 0; k < K; ++k)
        want += (a.data<uint8_t>()[i * K + k] - 121) * (w.data<int8_t>()[k * N + n] - zb.data<int8_t>()[n]);
      CHECK(y.data<int32_t>()[i * N + n] == want);
    }
  // int8 A x uint8 B, no zero points, B batched like A.
  Tensor a8 = random_tensor<int8_t>({B, M, K}, 4, -128, 127);
  Tensor b8 = random_tensor<uint8_t>({B, K, N}, 5, 0, 255);
  auto y8 = run_ok(NodeSpec{"MatMulInteger", 10, {a8, b8}})[0];
  for (int64_t b = 0; b < B; ++b)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int32_t want = 0;
        for (int64_t k = 0; k < K; ++k)
          want += a8.data<int8_t>()[(b * M + m) * K + k] * b8.data<uint8_t>()[(b * K + k) * N + n];
        CHECK(y8.data<int32_t>()[(b * M + m) * N + n] == want);
      }
  CHECK_THAT(run_error(NodeSpec{"MatMulInteger", 10, {a, w, Tensor::from_vector<uint8_t>({3}, {1, 2, 3})}}),
             Catch::Contains("per-tensor"));
  CHECK_THAT(run_error(NodeSpec{"MatMulInteger", 10, {a, random_tensor<int8_t>({3, N}, 6, 0, 1)}}),
             Catch::Contains("do not fit"));
}

TEST_CASE("ConvInteger: groups, padding, strides, per-channel weight zero points", "[interp][dynamic]") {
  const int64_t N = 2, C = 4, H = 5, W = 6, M = 6, G = 2, KH = 3, KW = 2;
  Tensor x = random_tensor<uint8_t>({N, C, H, W}, 7, 0, 255);
  Tensor w = random_tensor<int8_t>({M, C / G, KH, KW}, 8, -128, 127);
  Tensor zx = Tensor::scalar<uint8_t>(100);
  Tensor zw = random_tensor<int8_t>({M}, 9, -3, 3);
  NodeSpec s{"ConvInteger", 10, {x, w, zx, zw}};
  s.attributes["group"] = Attribute::of_int(G);
  s.attributes["pads"] = Attribute::of_ints({1, 0, 2, 1});
  s.attributes["strides"] = Attribute::of_ints({2, 1});
  auto y = run_ok(s)[0];
  const int64_t OH = (H + 1 + 2 - KH) / 2 + 1, OW = (W + 0 + 1 - KW) / 1 + 1;
  REQUIRE(y.shape() == Dims{N, M, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int32_t want = 0;
          const int64_t g = m / (M / G);
          for (int64_t c = 0; c < C / G; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * 2 + kh - 1, iw = ow + kw - 0;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;  // padding is the zero point: adds 0
                const int32_t xv = x.data<uint8_t>()[((n * C + g * (C / G) + c) * H + ih) * W + iw] - 100;
                const int32_t wv = w.data<int8_t>()[((m * (C / G) + c) * KH + kh) * KW + kw] - zw.data<int8_t>()[m];
                want += xv * wv;
              }
          CHECK(y.data<int32_t>()[((n * M + m) * OH + oh) * OW + ow] == want);
        }
}

TEST_CASE("MatMulNBits: float and int8 activation paths, refusals", "[interp][dynamic][int4]") {
  // K = 20 in blocks of 16 (the second block has 4 values), N = 2; codes 8 + v.
  const int64_t K = 20, N = 2, BS = 16, NB = 2;
  std::vector<int> v(N * K);
  for (int64_t i = 0; i < N * K; ++i) v[i] = static_cast<int>(i % 16) - 8;
  Tensor b(DType::UInt8, {N, NB, BS / 2});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < NB * BS; ++k) {
      const int code = k < K ? v[n * K + k] + 8 : 8;
      uint8_t& byte = b.data<uint8_t>()[(n * NB * BS + k) / 2];
      byte = static_cast<uint8_t>(k % 2 == 0 ? code : byte | (code << 4));
    }
  Tensor scales = Tensor::from_vector<float>({N * NB}, {0.5f, 0.25f, 1.0f, 2.0f});
  Tensor a(DType::Float32, {3, K});
  for (int64_t i = 0; i < a.size(); ++i) a.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  Tensor bias = Tensor::from_vector<float>({N}, {10, -10});
  auto spec = [&](int64_t level, int64_t block) {
    NodeSpec s{"MatMulNBits", 13, {a, b, scales, Tensor(), Tensor(), bias}};
    s.domain = "com.microsoft";
    s.attributes["K"] = Attribute::of_int(K);
    s.attributes["N"] = Attribute::of_int(N);
    s.attributes["bits"] = Attribute::of_int(4);
    s.attributes["block_size"] = Attribute::of_int(block);
    s.attributes["accuracy_level"] = Attribute::of_int(level);
    return s;
  };
  auto y = run_ok(spec(0, BS))[0];
  REQUIRE(y.shape() == Dims{3, N});
  for (int64_t m = 0; m < 3; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double want = bias.data<float>()[n];
      for (int64_t k = 0; k < K; ++k)
        want += a.data<float>()[m * K + k] * v[n * K + k] * scales.data<float>()[n * NB + k / BS];
      CHECK(y.data<float>()[m * N + n] == Approx(want));
    }
  // accuracy_level 4: A quantized per row to int8. A's rows hold integers
  // -3..3, a range of 6 / 255 per step that represents them to within half a step.
  auto y4 = run_ok(spec(4, BS))[0];
  for (int64_t i = 0; i < y.size(); ++i) CHECK(y4.data<float>()[i] == Approx(y.data<float>()[i]).margin(0.5));
  CHECK_THAT(run_error(spec(0, 24)), Catch::Contains("block_size must be a power of two"));
  CHECK_THAT(run_error(spec(0, 32)), Catch::Contains("MatMulNBits B"));
}
