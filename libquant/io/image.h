// Images as model inputs (DESIGN "Inputs": png/jpg/bmp/ppm with --image-size,
// --mean, --std, --layout, --channels), decoded with stb_image (Debian's
// libstb-dev), and PNG writing for `qprofile show --plot`.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"

namespace quant::io {

enum class ImageLayout { NCHW, NHWC };

// The largest image height or width qtool resizes to (--image-size, or the
// size a model's input declares).
inline constexpr int kMaxImageSide = 16384;
enum class ImageChannels { RGB, BGR, Gray };

// How a decoded image becomes a float32 tensor:
//   value = (pixel / 255 - mean[c]) / std[c]
// with c counted in the tensor's channel order (after the RGB -> BGR swap), so
// torchvision's mean 0.485,0.456,0.406 is given as is for an RGB model.
// height = width = 0 keeps each image's own size; otherwise images are resized
// (stb_image_resize: Mitchell filter down, cubic up) to exactly height x width.
// The tensor has a batch dimension of 1: [1, C, H, W] or [1, H, W, C].
struct ImageOptions {
  int height = 0;
  int width = 0;
  std::array<float, 3> mean{0, 0, 0};
  std::array<float, 3> std{1, 1, 1};
  ImageLayout layout = ImageLayout::NCHW;
  ImageChannels channels = ImageChannels::RGB;
  int channel_count() const { return channels == ImageChannels::Gray ? 1 : 3; }
};

// Parses the flag values: size "HxW" (empty: keep), mean/std "a,b,c" or one value
// for every channel (empty: 0 / 1), layout "nchw|nhwc", channels "rgb|bgr|gray".
// Errors name the flag and the value; a std of 0 is refused.
Expected<ImageOptions> parse_image_options(const std::string& size, const std::string& mean, const std::string& std,
                                           const std::string& layout, const std::string& channels);

// True for the extensions read as images: .png .jpg .jpeg .bmp .ppm .pgm (any case).
bool is_image_file(std::string_view name);

// Decodes and preprocesses one image; a file stb_image cannot decode, one cut
// short, or one whose declared size exceeds max_tensor_bytes() (checked from
// the header, before decoding) is bad_input naming the file and the reason.
Expected<Tensor> read_image(const std::string& path, const ImageOptions& options);
// The same for the bytes of an image file; `name` names it in errors.
Expected<Tensor> decode_image(std::string_view bytes, const std::string& name, const ImageOptions& options);

// Writes `pixels` (rows top to bottom, `channels` bytes per pixel, 1..4) as a PNG,
// atomically.
Status write_png(const std::string& path, int width, int height, int channels, const std::vector<uint8_t>& pixels);

}  // namespace quant::io
