// Checks run on an image file before stb_image reads it. stb_image 2.27
// (Debian's libstb-dev) trusts several fields of hostile files: fuzz_image
// found out-of-bounds reads and writes, uninitialised tables and huge
// allocations behind them. Each check refuses one such file with a sentence
// for the `error:` line; valid files pass untouched. Used by io/image.cpp only.
#pragma once

#include <string>
#include <string_view>

namespace quant::io::detail {

// Before stb parses the header: PNM header numbers, PNG chunk lengths, JPEG
// marker segments. Returns the problem, or "" when stb may read the file.
std::string check_before_decoding(std::string_view bytes);

// After stbi_info: stb pads a short BMP, PNM or JPEG with zeros (or reads
// uninitialised memory) and reports success; a file cut short is refused.
std::string check_complete(std::string_view bytes, int w, int h, int channels);

}  // namespace quant::io::detail
