// A region of a file mapped into memory, the storage of tensors whose bytes
// live in a model's external data file (DESIGN "Large models").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "libquant/core/status.h"

namespace quant {

// mmap(MAP_PRIVATE) of [offset, offset + length) of a file. The kernel reads a
// page from disk when it is first touched, and the pages leave the process
// when the region is unmapped (the last tensor holding it goes), so a model's
// weights cost memory only while a pass or kernel is using them. The mapping
// is writable copy-on-write: a write changes this process's copy, never the file.
// The file must not shrink while mapped (reading a page past its end would be
// a SIGBUS); qtool only maps files it has checked the size of.
class MappedRegion {
 public:
  // bad_input naming `path` when it cannot be opened or mapped.
  static Expected<std::shared_ptr<MappedRegion>> map(const std::string& path, int64_t offset, int64_t length);
  ~MappedRegion();
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  std::byte* data() const { return base_ + skew_; }
  const std::string& path() const { return path_; }
  int64_t offset() const { return offset_; }
  int64_t length() const { return length_; }

  // Tensor's non-const accessors call this: the bytes may have been written
  // (copy-on-write pages that exist only in this process). Conservative: a
  // pointer asked for is counted as a write.
  void note_write() const { written_.store(true, std::memory_order_relaxed); }
  // Gives the touched pages back (madvise MADV_DONTNEED) unless note_write()
  // was called: they are clean copies of the file's page cache, so a later
  // read maps them again with the same bytes, from any thread, and a reader
  // running meanwhile only faults them in again. Returns whether it released.
  // Sessions call it after a step read a large mapped weight, so that a run
  // over a model larger than memory holds one layer's weights at a time
  // (DESIGN "Large models").
  bool release_pages() const;

 private:
  MappedRegion() = default;
  std::byte* base_ = nullptr;  // page-aligned start of the mapping
  size_t skew_ = 0;            // offset_ minus the page boundary below it
  size_t mapped_ = 0;          // bytes mapped from base_
  std::string path_;
  int64_t offset_ = 0;
  int64_t length_ = 0;
  mutable std::atomic<bool> written_{false};
};

}  // namespace quant
