// Readahead advice on mapped file regions (DESIGN "Large models").
#pragma once

#include "libquant/core/mapped_file.h"

namespace quant {

// Asks the kernel to start reading `region`'s pages from disk now (madvise
// MADV_WILLNEED on its page-aligned range: asynchronous readahead into the
// page cache), so a pass working on one weight overlaps the disk reads of the
// next. Changes no byte and maps nothing into the process; returns whether the
// advice was taken (false for an empty region).
bool prefetch(const MappedRegion& region);

}  // namespace quant
