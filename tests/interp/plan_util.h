// Helpers of the memory-plan tests (test_memory_plan.cpp, test_concat_plan.cpp):
// float inputs and weights from a seed, runs that must succeed, bit-equal outputs.
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"

namespace quant::testing {

// Float32 of `shape`, normal(0, 1) from `seed`.
inline Tensor random_tensor(Dims shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensor t(DType::Float32, std::move(shape));
  for (float& v : t.values<float>()) v = normal(rng);
  return t;
}

// A float32 constant of `shape`, random_tensor's values.
inline ir::Value* random_weight(ir::Graph& g, const std::string& name, Dims shape, uint32_t seed) {
  ir::Value* v = g.add_value(name);
  v->dtype = DType::Float32;
  v->constant = std::make_unique<Tensor>(random_tensor(std::move(shape), seed));
  return v;
}

inline std::vector<Tensor> run(const interp::Session& s, const Tensor& x) {
  auto out = s.run({x});
  INFO(out.status().message());
  REQUIRE(out.has_value());
  return *out;
}

inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

}  // namespace quant::testing
