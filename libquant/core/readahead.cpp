#include "libquant/core/readahead.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace quant {

bool prefetch(const MappedRegion& region) {
  if (region.length() <= 0) return false;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(region.data());
  const uintptr_t start = begin / page * page;
  const auto end = begin + static_cast<uintptr_t>(region.length());
  return ::madvise(reinterpret_cast<void*>(start), end - start, MADV_WILLNEED) == 0;
}

}  // namespace quant
