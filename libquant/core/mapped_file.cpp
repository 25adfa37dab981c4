#include "libquant/core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace quant {

Expected<std::shared_ptr<MappedRegion>> MappedRegion::map(const std::string& path, int64_t offset, int64_t length) {
  if (offset < 0 || length < 0) return Status::bad_input(path + ": negative offset or length to map");
  std::shared_ptr<MappedRegion> r(new MappedRegion());
  r->path_ = path;
  r->offset_ = offset;
  r->length_ = length;
  if (length == 0) return r;
  const auto page = static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  const int64_t start = offset / page * page;
  r->skew_ = static_cast<size_t>(offset - start);
  r->mapped_ = r->skew_ + static_cast<size_t>(length);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::bad_input(path + ": cannot open (" + std::strerror(errno) + ")");
  void* p = ::mmap(nullptr, r->mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, static_cast<off_t>(start));
  const int err = errno;
  ::close(fd);  // the mapping keeps the file open
  if (p == MAP_FAILED) {
    r->mapped_ = 0;
    return Status::bad_input(path + ": cannot map " + std::to_string(length) + " bytes at offset " +
                             std::to_string(offset) + " (" + std::strerror(err) + ")");
  }
  r->base_ = static_cast<std::byte*>(p);
  return r;
}

bool MappedRegion::release_pages() const {
  if (!base_ || written_.load(std::memory_order_relaxed)) return false;
  return ::madvise(base_, mapped_, MADV_DONTNEED) == 0;
}

MappedRegion::~MappedRegion() {
  if (base_) ::munmap(base_, mapped_);
}

}  // namespace quant
