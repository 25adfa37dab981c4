#pragma once

#include <string>

#include "libquant/core/status.h"

namespace quant {

// Whole file as bytes; the error names the path and the reason.
Expected<std::string> read_file(const std::string& path);

// Writes through a temporary file in the same directory and renames it over
// `path`, so that a failed or killed run never leaves a truncated output.
Status write_file_atomic(const std::string& path, const std::string& bytes);

// The parts of write_file_atomic, for outputs made of several files (a
// model and its external data) that appear together or not at all:
// write_temp_beside writes `bytes` to a fresh temporary file in `path`'s
// directory and syncs it (returning its name; nothing is left on failure),
// create_temp_beside only opens one (its name in *tmp, the descriptor
// returned) for write_all to fill, and rename_into_place renames `tmp` over
// `path` (removing tmp when that fails).
Expected<std::string> write_temp_beside(const std::string& path, const std::string& bytes);
Expected<int> create_temp_beside(const std::string& path, std::string* tmp);
Status write_all(int fd, const void* data, size_t size, const std::string& path);
Status rename_into_place(const std::string& tmp, const std::string& path);

}  // namespace quant
