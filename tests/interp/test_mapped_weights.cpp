// MatMul and Gemm weights mapped from external data are not packed when the
// session is made (ops_nn.cpp prepacked_weight: a packed copy would double a
// large model in memory); each run packs as it goes. The outputs must be the
// same bits as with the weight in memory.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "libquant/core/mapped_file.h"
#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"

using quant::DType;
using quant::Tensor;

namespace {

Tensor random_tensor(quant::Dims shape, uint32_t seed) {
  Tensor t(DType::Float32, shape);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (float& v : t.values<float>()) v = d(rng);
  return t;
}

// The weight's bytes written to a temporary file and mapped back.
Tensor mapped_copy(const Tensor& w, std::string& path) {
  char name[] = "/tmp/qtool_mapped_weightXXXXXX";
  const int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  path = name;
  REQUIRE(::write(fd, w.raw(), w.byte_size()) == static_cast<ssize_t>(w.byte_size()));
  ::close(fd);
  auto region = quant::MappedRegion::map(path, 0, static_cast<int64_t>(w.byte_size()));
  REQUIRE(region);
  return Tensor::mapped(DType::Float32, w.shape(), *std::move(region));
}

// Y of one `op` node reading x (a graph input) and the constant weight w.
Tensor run_linear(const std::string& op, const Tensor& x, Tensor w, bool trans_b) {
  quant::ir::Graph g;
  g.opset_imports[""] = 13;
  quant::ir::Value* in = g.add_value("x");
  in->dtype = DType::Float32;
  g.inputs.push_back(in);
  quant::ir::Value* wv = g.add_value("w");
  wv->dtype = DType::Float32;
  wv->constant = std::make_unique<Tensor>(std::move(w));
  quant::ir::Value* out = g.add_value("y");
  quant::ir::Node* n = g.add_node(op, {in, wv}, {out}, "node");
  if (trans_b) n->attributes["transB"] = quant::ir::Attribute::of_int(1);
  g.outputs = {out};
  auto session = quant::interp::Session::create(g, {});
  REQUIRE(session);
  auto y = (*session)->run({x});
  REQUIRE(y);
  return (*y)[0];
}

}  // namespace

TEST_CASE("MatMul and Gemm give the same bits with a mapped (not prepacked) weight", "[interp][matmul][gemm]") {
  const int64_t M = 5, K = 67, N = 41;
  const Tensor x = random_tensor({M, K}, 1);
  for (bool trans_b : {false, true}) {
    for (const std::string op : {"MatMul", "Gemm"}) {
      if (op == "MatMul" && trans_b) continue;
      CAPTURE(op, trans_b);
      const Tensor w = random_tensor(trans_b ? quant::Dims{N, K} : quant::Dims{K, N}, 2);
      std::string path;
      Tensor mapped = mapped_copy(w, path);
      REQUIRE(mapped.mapping() != nullptr);
      const Tensor in_memory = run_linear(op, x, w, trans_b);
      const Tensor from_map = run_linear(op, x, std::move(mapped), trans_b);
      std::remove(path.c_str());
      REQUIRE(in_memory.shape() == from_map.shape());
      CHECK(std::memcmp(in_memory.raw(), from_map.raw(), in_memory.byte_size()) == 0);
    }
  }
}
