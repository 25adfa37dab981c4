// SHA-256 (FIPS 180-4), used for model digests and graph signatures in profiles.
#pragma once

#include <string>
#include <string_view>

namespace quant {

// Lowercase hex digest (64 characters) of `bytes`.
std::string sha256_hex(std::string_view bytes);

// Which compression function sha256_hex uses: kBest is SHA-NI where the CPU
// has it, else the portable C++. kPortable forces the portable one, so that
// tests check it against the FIPS vectors on SHA-NI hosts too (where it would
// otherwise never run).
enum class Sha256Path { kBest, kPortable };
std::string sha256_hex(std::string_view bytes, Sha256Path path);
// Whether kBest means SHA-NI on this CPU.
bool sha256_uses_sha_ni();

}  // namespace quant
