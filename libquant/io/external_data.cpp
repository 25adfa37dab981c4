#include "libquant/io/external_data.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "libquant/core/file_util.h"

namespace quant::io {

Expected<std::unique_ptr<ExternalDataWriter>> ExternalDataWriter::create(const std::string& data_path) {
  std::unique_ptr<ExternalDataWriter> w(new ExternalDataWriter());
  w->path_ = data_path;
  w->location_ = std::filesystem::path(data_path).filename().string();
  QT_ASSIGN_OR_RETURN(w->fd_, create_temp_beside(data_path, &w->tmp_));
  return w;
}

ExternalDataWriter::~ExternalDataWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

Expected<ExternalRef> ExternalDataWriter::append(const Tensor& t) {
  if (fd_ < 0) return Status::internal(path_ + ": external data file is already committed");
  const bool packed = t.dtype() == DType::Int4 || t.dtype() == DType::UInt4;
  std::string int4;
  if (packed) int4 = pack_int4(t);
  const void* bytes = packed ? static_cast<const void*>(int4.data()) : t.raw();
  return append_bytes(bytes, static_cast<int64_t>(packed ? int4.size() : t.byte_size()));
}

Expected<ExternalRef> ExternalDataWriter::append_bytes(const void* bytes, int64_t size) {
  if (fd_ < 0) return Status::internal(path_ + ": external data file is already committed");
  const int64_t align = size >= 4096 ? 4096 : 64;
  const int64_t offset = (end_ + align - 1) / align * align;
  if (offset > end_) {
    static const char kZeros[4096] = {};
    QT_RETURN_IF_ERROR(write_all(fd_, kZeros, static_cast<size_t>(offset - end_), path_));
  }
  QT_RETURN_IF_ERROR(write_all(fd_, bytes, static_cast<size_t>(size), path_));
  end_ = offset + size;
#if defined(__linux__)
  // Starts writing these pages to disk now, while the next tensors are made,
  // so that commit()'s fsync waits for the last ones only (it was most of a
  // streaming conversion's wall time, DESIGN "Large models"). A hint: its
  // failure changes nothing, and fsync still reports any write error.
  if (size >= (int64_t{1} << 20)) ::sync_file_range(fd_, offset, size, SYNC_FILE_RANGE_WRITE);
#endif
  return ExternalRef{location_, offset, size};
}

Expected<Tensor> ExternalDataWriter::spill(Tensor t) {
  const DType d = t.dtype();
  if (d == DType::Bool || d == DType::String || d == DType::Int4 || d == DType::UInt4 || !t.is_tensor()) return t;
  QT_ASSIGN_OR_RETURN(ExternalRef ref, append(t));
  // The mapping reads the temporary file by its name, which stays valid after
  // commit() renames it (a mapping holds the file, not the name).
  QT_ASSIGN_OR_RETURN(auto region, MappedRegion::map(tmp_, ref.offset, ref.length));
  return Tensor::mapped(d, t.shape(), std::move(region));
}

Expected<Tensor> ExternalDataWriter::spill_bytes(DType dtype, const Dims& shape, const void* bytes) {
  if (dtype == DType::Bool || dtype == DType::String || dtype == DType::Int4 || dtype == DType::UInt4)
    return Status::internal(path_ + ": spill_bytes takes types stored as they are in memory");
  const auto size = static_cast<int64_t>(element_count(shape) * static_cast<int64_t>(dtype_size(dtype)));
  QT_ASSIGN_OR_RETURN(ExternalRef ref, append_bytes(bytes, size));
  QT_ASSIGN_OR_RETURN(auto region, MappedRegion::map(tmp_, ref.offset, ref.length));
  return Tensor::mapped(dtype, shape, std::move(region));
}

std::optional<ExternalRef> ExternalDataWriter::find(const Tensor& t) const {
  // Only this writer maps its temporary file (mkstemp made the name unique).
  const MappedRegion* m = t.mapping();
  if (!m || m->path() != tmp_) return std::nullopt;
  return ExternalRef{location_, m->offset(), m->length()};
}

Status ExternalDataWriter::commit() {
  if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
    fd_ = -1;
    return Status::internal(path_ + ": write failed (" + std::strerror(errno) + ")");
  }
  fd_ = -1;
  QT_RETURN_IF_ERROR(rename_into_place(tmp_, path_));
  committed_ = true;
  return Status::ok();
}

}  // namespace quant::io
