// The external data file of a model qtool writes (DESIGN "Large models"):
// initializers appended tensor by tensor, so that no step holds the whole
// output in memory or in one protobuf string.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"
#include "libquant/io/tensor_proto.h"

namespace quant::io {

class ExternalDataWriter {
 public:
  // Opens a temporary file beside `data_path` (the final name, e.g.
  // "out.onnx.data"); nothing appears under the final name before commit().
  static Expected<std::unique_ptr<ExternalDataWriter>> create(const std::string& data_path);
  // Removes the temporary file unless committed.
  ~ExternalDataWriter();
  ExternalDataWriter(const ExternalDataWriter&) = delete;
  ExternalDataWriter& operator=(const ExternalDataWriter&) = delete;

  // Appends the bytes of `t` as ONNX stores them (little endian, int4 packed)
  // at the next offset aligned to 64 bytes (4096 for tensors of a page or
  // more, so that a runtime can map them); returns where they are.
  Expected<ExternalRef> append(const Tensor& t);
  // Appends `t` and returns a tensor mapping those bytes back from the file:
  // the caller's memory goes, and the bytes come back from the page cache only
  // if read. Types whose file form is not their memory form (Bool, String,
  // int4) are returned as they are.
  Expected<Tensor> spill(Tensor t);
  // As spill, for `bytes` (the memory form of a `dtype` tensor of `shape`,
  // not Bool, String or int4) that the caller keeps in a buffer it reuses:
  // no tensor is allocated for them (DESIGN "Large models").
  Expected<Tensor> spill_bytes(DType dtype, const Dims& shape, const void* bytes);
  // Where `t`'s bytes already are in this file (a tensor spill() returned), or nullptr.
  std::optional<ExternalRef> find(const Tensor& t) const;

  // Flushes to disk and renames the file to its final name.
  Status commit();
  int64_t bytes_written() const { return end_; }
  const std::string& path() const { return path_; }

 private:
  ExternalDataWriter() = default;
  Expected<ExternalRef> append_bytes(const void* bytes, int64_t size);
  std::string path_;      // final name
  std::string tmp_;       // temporary file while writing
  std::string location_;  // file name relative to the model's folder
  int fd_ = -1;
  int64_t end_ = 0;
  bool committed_ = false;
};

}  // namespace quant::io
