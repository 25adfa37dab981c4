#pragma once

#include <string>

#include "libquant/core/status.h"

namespace quant {

// Whole file as bytes; the error names the path and the reason.
Expected<std::string> read_file(const std::string& path);

// Writes through a temporary file in the same directory and renames it over
// `path`, so that a failed or killed run never leaves a truncated output.
Status write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace quant
