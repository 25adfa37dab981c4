#include "libquant/core/aligned_memory.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace quant {

size_t aligned_size(size_t bytes) {
  if (bytes >= kHugePageBytes) return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  return bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
}

void* allocate_aligned(size_t bytes) {
  const size_t size = aligned_size(bytes);
  const bool huge = size >= kHugePageBytes;
  void* p = std::aligned_alloc(huge ? kHugePageBytes : 64, size);
  if (!p) throw std::bad_alloc();
  // One page fault per 2 MiB instead of 512 on first touch (on a virtual
  // machine most of what touching fresh memory costs) and one TLB entry.
  if (huge) madvise(p, size, MADV_HUGEPAGE);  // advice only: a refusal changes nothing
  return p;
}

}  // namespace quant
