#include "apps/qprofile/model_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "libquant/core/file_util.h"

namespace qtool {

quant::Expected<ModelFile> ModelFile::open(const std::string& path) {
  ModelFile file;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      file.mapped_ = static_cast<const char*>(p);
      file.size_ = static_cast<size_t>(st.st_size);
    }
  }
  if (fd >= 0) ::close(fd);
  if (file.mapped_) return file;
  // read_file reports the error (missing, a directory, unreadable) naming the path.
  auto bytes = quant::read_file(path);
  if (!bytes) return bytes.status();
  file.read_ = std::move(bytes).value();
  return file;
}

ModelFile::ModelFile(ModelFile&& other) noexcept
    : mapped_(std::exchange(other.mapped_, nullptr)), size_(std::exchange(other.size_, 0)), read_(std::move(other.read_)) {}

ModelFile::~ModelFile() {
  if (mapped_) ::munmap(const_cast<char*>(mapped_), size_);
}

}  // namespace qtool
