// The model file's bytes for qprofile, which both hashes them (model.digest)
// and parses them once.
#pragma once

#include <string>
#include <string_view>

#include "libquant/core/status.h"

namespace qtool {

// A regular file is mapped read-only instead of read into a buffer: the pages
// are the kernel's page cache, so a 45 MB model costs neither a 45 MB
// allocation (every page of it faulted in and zero-filled, a large part of
// qprofile's start-up on a virtual machine) nor the copy. Anything that
// cannot be mapped (an empty file, a pipe) is read with quant::read_file.
// The file must not be truncated while it is mapped (reading past its new
// end would raise SIGBUS), as with any reader that maps its input.
class ModelFile {
 public:
  static quant::Expected<ModelFile> open(const std::string& path);
  ModelFile(ModelFile&& other) noexcept;
  ModelFile& operator=(ModelFile&&) = delete;
  ModelFile(const ModelFile&) = delete;
  ~ModelFile();

  std::string_view bytes() const { return mapped_ ? std::string_view(mapped_, size_) : std::string_view(read_); }

 private:
  ModelFile() = default;
  const char* mapped_ = nullptr;
  size_t size_ = 0;
  std::string read_;
};

}  // namespace qtool
