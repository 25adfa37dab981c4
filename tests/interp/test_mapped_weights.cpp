// MatMul and Gemm weights mapped from external data are not packed when the
// session is made (ops_nn.cpp prepacked_weight: a packed copy would double a
// large model in memory); each run packs as it goes. The outputs must be the
// same bits as with the weight in memory. Sessions with
// SessionOptions::release_mapped_weights give the mapped pages back after
// the step that read them (qprofile on models larger than memory).
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "libquant/core/mapped_file.h"
#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"
#include "tests/smaps.h"

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

// The pages this process has of the mapping that holds `p`, whatever the
// rest of the process allocates or frees meanwhile.
int64_t mapping_resident_bytes(const void* p) {
  const int64_t bytes = quant::testing::smaps_resident_bytes(p);
  REQUIRE(bytes >= 0);
  return bytes;
}

// Y of one `op` node reading x (a graph input) and the constant weight w;
// `weight_resident` gets how much of w's mapping is resident after the
// session's first run.
Tensor run_linear(const std::string& op, const Tensor& x, Tensor w, bool trans_b,
                  const quant::interp::SessionOptions& options = {}, int64_t* weight_resident = nullptr) {
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
  auto session = quant::interp::Session::create(g, options);
  REQUIRE(session);
  auto y = (*session)->run({x});
  REQUIRE(y);
  const Tensor& weight = *wv->constant;  // const: a non-const pointer would pin its pages
  if (weight_resident) *weight_resident = mapping_resident_bytes(weight.raw());
  auto again = (*session)->run({x});  // a released weight is read back the same
  REQUIRE(again);
  REQUIRE(std::memcmp((*again)[0].raw(), (*y)[0].raw(), (*y)[0].byte_size()) == 0);
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

TEST_CASE("A mapped region gives back its clean pages, never written ones", "[core][mapped]") {
  const Tensor w = random_tensor({2048, 1024}, 3);  // 8 MiB
  std::string path;
  const Tensor mapped = mapped_copy(w, path);
  CHECK(mapping_resident_bytes(mapped.raw()) < (1 << 20));
  CHECK(std::memcmp(mapped.raw(), w.raw(), w.byte_size()) == 0);  // touches every page
  CHECK(mapping_resident_bytes(mapped.raw()) >= (7 << 20));
  REQUIRE(mapped.mapping()->release_pages());
  CHECK(mapping_resident_bytes(mapped.raw()) < (1 << 20));
  CHECK(std::memcmp(mapped.raw(), w.raw(), w.byte_size()) == 0);  // read back from the file

  // Once a non-const pointer was handed out, the pages may hold this process's
  // writes: they stay.
  std::remove(path.c_str());
  Tensor written = mapped_copy(w, path);
  written.data<float>()[5] = 42.0f;
  CHECK_FALSE(written.mapping()->release_pages());
  CHECK(written.data<float>()[5] == 42.0f);
  std::remove(path.c_str());
}

TEST_CASE("A session with release_mapped_weights runs a mapped MatMul weight without keeping its pages",
          "[interp][matmul]") {
  const int64_t M = 2, K = 1024, N = 2048;  // an 8 MiB weight
  const Tensor x = random_tensor({M, K}, 4);
  const Tensor w = random_tensor({K, N}, 5);
  std::string path, path2;
  quant::interp::SessionOptions release;
  release.release_mapped_weights = true;
  int64_t kept = 0, released = 0;
  const Tensor y_kept = run_linear("MatMul", x, mapped_copy(w, path), false, {}, &kept);
  const Tensor y_released = run_linear("MatMul", x, mapped_copy(w, path2), false, release, &released);
  std::remove(path.c_str());
  std::remove(path2.c_str());
  CHECK(kept >= (7 << 20));
  CHECK(released < (2 << 20));
  CHECK(std::memcmp(y_kept.raw(), y_released.raw(), y_kept.byte_size()) == 0);
}
