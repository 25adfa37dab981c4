// Heap blocks for tensors, packed weights and kernel scratch: 64-byte aligned
// for the widest vector loads, and from 2 MiB up on 2 MiB pages where the
// kernel allows it (transparent huge pages in "madvise" mode, Debian's and
// most distributions' default). A convolution streaming 9 MiB of packed
// weights (resnet18's layer4) touches 2300 small pages a run, more than the
// second-level TLB holds next to the rest of the model; on huge pages it
// touches five.
#pragma once

#include <cstddef>

namespace quant {

// The smallest block allocate_aligned hands out: 2 MiB.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// What allocate_aligned(bytes) spans: `bytes` rounded up to 64 (at least
// 64), or from kHugePageBytes up to whole huge pages.
size_t aligned_size(size_t bytes);

// aligned_size(bytes) bytes, uninitialised, 64-byte aligned (huge-page
// aligned and advised from kHugePageBytes up; the advice may be refused,
// which changes nothing but speed). Released with std::free; throws
// std::bad_alloc when the memory is not there.
void* allocate_aligned(size_t bytes);

}  // namespace quant
