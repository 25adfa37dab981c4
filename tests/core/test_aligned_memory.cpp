#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "libquant/core/aligned_memory.h"
#include "libquant/core/tensor.h"
#include "libquant/kernels/gemm_packed.h"
#include "libquant/kernels/qgemm_packed.h"
#include "tests/smaps.h"

using quant::aligned_size;
using quant::allocate_aligned;
using quant::kHugePageBytes;

namespace {

// Whether madvise(MADV_HUGEPAGE) marked the mapping ("hg", proc(5)).
bool advised_huge(const void* p) { return quant::testing::smaps_line(p, "VmFlags:").find(" hg") != std::string::npos; }

}  // namespace

TEST_CASE("aligned_size: 64-byte multiples, whole huge pages from 2 MiB up", "[core][aligned_memory]") {
  CHECK(aligned_size(0) == 64);
  CHECK(aligned_size(1) == 64);
  CHECK(aligned_size(64) == 64);
  CHECK(aligned_size(65) == 128);
  CHECK(aligned_size(kHugePageBytes - 64) == kHugePageBytes - 64);
  CHECK(aligned_size(kHugePageBytes - 1) == kHugePageBytes);
  CHECK(aligned_size(kHugePageBytes) == kHugePageBytes);
  CHECK(aligned_size(kHugePageBytes + 1) == 2 * kHugePageBytes);
}

TEST_CASE("allocate_aligned: aligned, writable, large blocks advised onto huge pages", "[core][aligned_memory][huge_pages]") {
  void* small = allocate_aligned(100);
  void* large = allocate_aligned(3 * (size_t{1} << 20));
  CHECK(reinterpret_cast<uintptr_t>(small) % 64 == 0);
  CHECK(reinterpret_cast<uintptr_t>(large) % kHugePageBytes == 0);
  std::memset(small, 1, aligned_size(100));
  std::memset(large, 1, aligned_size(3 * (size_t{1} << 20)));  // all of what it spans: 4 MiB
  CHECK(advised_huge(large));
  std::free(small);
  std::free(large);
}

TEST_CASE("packed weights and tensors of 2 MiB and more lie on advised huge pages", "[core][aligned_memory][huge_pages]") {
  // resnet18's layer4 streams 9 MiB of packed float weights a conv; on 4 KiB
  // pages the TLB misses cost it 11-13% (AVX2, docs/performance.md, stop 57).
  const int64_t k = 1024, n = 1024;  // 4 MiB of floats
  std::vector<float> b(static_cast<size_t>(k * n), 0.5f);
  const auto& isa = quant::kernels::detail::best_gemm_isa();
  const auto packed = quant::kernels::PackedMatrix::pack_b({b.data(), n, 1}, k, n, isa);
  CHECK(advised_huge(packed.panel(0, 0)));

  quant::kernels::AlignedBytes bytes;
  CHECK(advised_huge(bytes.reserve(kHugePageBytes)));

  const quant::Tensor t(quant::DType::Float32, {int64_t{1} << 20});  // 4 MiB
  CHECK(advised_huge(t.data<float>()));
}
