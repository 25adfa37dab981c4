// libFuzzer target: image decoding and preprocessing (the --data reader for
// png/jpg/bmp/ppm/pgm directories). The first byte picks the options - channels,
// layout and whether to resize to a small size - the rest is the file.
// Built with -DQTOOL_FUZZ=ON (clang), run by scripts/fuzz.sh.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "libquant/io/image.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // A declared image size must be refused from the header, within the fuzzer's memory limit.
  quant::set_max_tensor_bytes(int64_t{16} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t config = data[0];
  static const char* const kChannels[] = {"rgb", "bgr", "gray", "rgb"};
  const std::string size_flag = (config & 4) ? std::to_string(1 + (config >> 3 & 7)) + "x" + std::to_string(1 + (config >> 6)) : "";
  auto options = quant::io::parse_image_options(size_flag, "0.5", "0.25", (config & 8) ? "nhwc" : "nchw", kChannels[config & 3]);
  if (!options) std::abort();  // the flags above are all valid

  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  auto t = quant::io::decode_image(bytes, "fuzz.png", *options);
  if (!t) {
    if (t.status().code() != quant::StatusCode::kBadInput) std::abort();
    return 0;
  }
  // A decoded image is [1, C, H, W] or [1, H, W, C] of the requested size, and
  // every value is (pixel / 255 - 0.5) / 0.25 for a pixel in 0..255.
  const quant::Dims& s = t->shape();
  if (s.size() != 4) std::abort();
  const bool nchw = options->layout == quant::io::ImageLayout::NCHW;
  const int64_t c = nchw ? s[1] : s[3], h = nchw ? s[2] : s[1], w = nchw ? s[3] : s[2];
  if (s[0] != 1 || c != options->channel_count()) std::abort();
  if (options->height && (h != options->height || w != options->width)) std::abort();
  if (h < 1 || w < 1) std::abort();
  for (float v : t->values<float>())
    if (!(v >= -2.0f && v <= 2.0f)) std::abort();
  return 0;
}
