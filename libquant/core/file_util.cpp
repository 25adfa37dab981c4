#include "libquant/core/file_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace quant {

Expected<std::string> read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Status::bad_input(path + ": is a directory, expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::bad_input(path + ": cannot open (" + std::strerror(errno) + ")");
  // A regular file is read in one go into a buffer of its size: streaming
  // through an ostringstream regrows and copies the buffer several times, which
  // took most of qprofile's start-up on a 45 MB model. Anything else (a pipe, or
  // a file that changes under us) falls back to streaming.
  std::error_code size_ec;
  const auto size = std::filesystem::file_size(path, size_ec);
  if (!size_ec && size > 0) {
    std::string bytes(static_cast<size_t>(size), '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(size));
    if (in.gcount() == static_cast<std::streamsize>(size) && in.peek() == std::char_traits<char>::eof() && !in.bad())
      return bytes;
    in.clear();
    in.seekg(0);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::bad_input(path + ": read failed");
  return ss.str();
}

Expected<int> create_temp_beside(const std::string& path, std::string* tmp) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::bad_input(path + ": directory " + dir.string() + " does not exist");
  *tmp = (dir / ("." + target.filename().string() + ".tmpXXXXXX")).string();
  int fd = mkstemp(tmp->data());
  if (fd < 0) return Status::bad_input(path + ": cannot create a file there (" + std::strerror(errno) + ")");
  // mkstemp creates 0600; give the output the usual permissions.
  ::fchmod(fd, 0644);
  return fd;
}

Status write_all(int fd, const void* data, size_t size, const std::string& path) {
  const auto* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, p + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::internal(path + ": write failed (" + std::strerror(errno) + ")");
    }
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

Status rename_into_place(const std::string& tmp, const std::string& path) {
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Status::bad_input(path + ": cannot write (" + why + ")");
  }
  return Status::ok();
}

Expected<std::string> write_temp_beside(const std::string& path, const std::string& bytes) {
  std::string tmp;
  QT_ASSIGN_OR_RETURN(int fd, create_temp_beside(path, &tmp));
  Status st = write_all(fd, bytes.data(), bytes.size(), path);
  if (st && ::fsync(fd) != 0) st = Status::internal(path + ": write failed (" + std::strerror(errno) + ")");
  if (::close(fd) != 0 && st) st = Status::internal(path + ": write failed (" + std::strerror(errno) + ")");
  if (!st) {
    ::unlink(tmp.c_str());
    return st;
  }
  return tmp;
}

Status write_file_atomic(const std::string& path, const std::string& bytes) {
  QT_ASSIGN_OR_RETURN(std::string tmp, write_temp_beside(path, bytes));
  return rename_into_place(tmp, path);
}

}  // namespace quant
