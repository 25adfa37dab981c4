// libFuzzer target: profile JSON parsing, then every calibration method and
// schema on every histogram it holds, and a write/read round trip.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "libquant/calib/params.h"
#include "libquant/calib/range.h"
#include "libquant/profile/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto p = quant::profile::profile_from_json(text, "fuzz.json");
  if (!p) {
    if (p.status().code() != quant::StatusCode::kBadInput) std::abort();
    return 0;
  }
  for (const auto& [name, t] : p->tensors) {
    for (const char* method : {"minmax", "percentile", "percentile:99", "kl", "mse"}) {
      auto range = quant::calib::range_by_name(t.hist, method);
      if (!range) std::abort();
      for (auto schema : {quant::calib::Schema::Asymmetric, quant::calib::Schema::Symmetric,
                          quant::calib::Schema::SymmetricUInt8, quant::calib::Schema::Power2Scale})
        for (auto precision : {quant::DType::UInt8, quant::DType::Int8})
          (void)quant::calib::choose_quant_params(*range, schema, precision);
    }
  }
  auto back = quant::profile::profile_from_json(quant::profile::profile_to_json(*p), "roundtrip.json");
  if (!back) std::abort();
  return 0;
}
