// SHA-256 (FIPS 180-4), used for model digests and graph signatures in profiles.
#pragma once

#include <string>
#include <string_view>

namespace quant {

// Lowercase hex digest (64 characters) of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace quant
