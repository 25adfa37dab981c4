// libFuzzer target: .npy parsing (the --data reader), then a write/read round trip
// of whatever parsed. Built with -DQTOOL_FUZZ=ON (clang), run by scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "libquant/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A tensor the file holds must be small enough for the fuzzer's memory limit.
  quant::set_max_tensor_bytes(int64_t{64} << 20);
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto t = quant::io::parse_npy(bytes, "fuzz.npy");
  if (!t) {
    if (t.status().code() != quant::StatusCode::kBadInput) std::abort();
    return 0;
  }
  if (t->empty()) return 0;
  // What qtool writes, qtool must read back bit for bit.
  std::string again = quant::io::serialize_npy(*t);
  auto back = quant::io::parse_npy(again, "roundtrip.npy");
  if (!back || back->shape() != t->shape()) std::abort();
  if (back->byte_size() != t->byte_size() || (t->byte_size() && std::memcmp(back->raw(), t->raw(), t->byte_size()) != 0))
    std::abort();
  return 0;
}
