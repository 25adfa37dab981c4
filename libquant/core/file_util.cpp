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

Status write_file_atomic(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::bad_input(path + ": directory " + dir.string() + " does not exist");
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmpXXXXXX")).string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) return Status::bad_input(path + ": cannot create a file there (" + std::strerror(errno) + ")");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmpl.c_str());
      return Status::internal(path + ": write failed (" + why + ")");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    return Status::internal(path + ": write failed (" + std::strerror(errno) + ")");
  }
  // mkstemp creates 0600; give the output the usual permissions.
  ::chmod(tmpl.c_str(), 0644);
  if (std::rename(tmpl.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmpl.c_str());
    return Status::bad_input(path + ": cannot write (" + why + ")");
  }
  return Status::ok();
}

}  // namespace quant
