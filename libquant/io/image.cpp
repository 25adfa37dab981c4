#include "libquant/io/image.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <memory>

#include "libquant/core/file_util.h"
#include "libquant/io/image_guard.h"

// The one translation unit holding stb's implementations (header-only libraries).
// stb's decoder state is allocated zeroed: a table a corrupt file leaves
// undefined then decodes the same way on every run instead of from whatever the
// memory held (image_guard.cpp refuses the cases known to read out of bounds).
#define STBI_MALLOC(size) std::calloc(1, size)
#define STBI_REALLOC(p, size) std::realloc(p, size)
#define STBI_FREE(p) std::free(p)
#define STB_IMAGE_IMPLEMENTATION
#define STBI_FAILURE_USERMSG
// Only the decoders of the formats DESIGN lists: stb_image otherwise sniffs the
// content and would also run its GIF/PSD/TGA/HDR/PIC decoders on a file named .png.
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_PNM
#include <stb/stb_image.h>
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb/stb_image_resize.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace quant::io {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool parse_float(std::string_view s, float& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
}

// "a,b,c" or "a" (the same for every channel).
Status parse_triple(const std::string& flag, const std::string& text, std::array<float, 3>& out) {
  std::vector<float> values;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view item(text.data() + start, (comma == std::string::npos ? text.size() : comma) - start);
    float v = 0;
    if (!parse_float(item, v))
      return Status::bad_input(flag + " '" + text + "': expected one number or three separated by commas, e.g. 0.485,0.456,0.406");
    values.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (values.size() != 1 && values.size() != 3)
    return Status::bad_input(flag + " '" + text + "': expected one number or three, got " + std::to_string(values.size()));
  for (size_t c = 0; c < 3; ++c) out[c] = values[values.size() == 1 ? 0 : c];
  return Status::ok();
}

struct StbFree {
  void operator()(unsigned char* p) const { stbi_image_free(p); }
};

}  // namespace

Expected<ImageOptions> parse_image_options(const std::string& size, const std::string& mean, const std::string& std,
                                           const std::string& layout, const std::string& channels) {
  ImageOptions opt;
  if (!size.empty()) {
    size_t x = lower(size).find('x');
    int h = 0, w = 0;
    bool ok = x != std::string::npos;
    if (ok) {
      auto r1 = std::from_chars(size.data(), size.data() + x, h);
      auto r2 = std::from_chars(size.data() + x + 1, size.data() + size.size(), w);
      ok = r1.ec == std::errc() && r1.ptr == size.data() + x && r2.ec == std::errc() &&
           r2.ptr == size.data() + size.size() && h > 0 && w > 0 && h <= kMaxImageSide && w <= kMaxImageSide;
    }
    if (!ok) return Status::bad_input("--image-size '" + size + "': expected HxW with 1 <= H, W <= 16384, e.g. 224x224");
    opt.height = h;
    opt.width = w;
  }
  if (!mean.empty()) QT_RETURN_IF_ERROR(parse_triple("--mean", mean, opt.mean));
  if (!std.empty()) QT_RETURN_IF_ERROR(parse_triple("--std", std, opt.std));
  for (float s : opt.std)
    if (s == 0) return Status::bad_input("--std '" + std + "': a standard deviation of 0 would divide by zero");
  std::string l = lower(layout), c = lower(channels);
  if (l == "nchw") {
    opt.layout = ImageLayout::NCHW;
  } else if (l == "nhwc") {
    opt.layout = ImageLayout::NHWC;
  } else {
    return Status::bad_input("--layout '" + layout + "': expected nchw or nhwc");
  }
  if (c == "rgb") {
    opt.channels = ImageChannels::RGB;
  } else if (c == "bgr") {
    opt.channels = ImageChannels::BGR;
  } else if (c == "gray") {
    opt.channels = ImageChannels::Gray;
  } else {
    return Status::bad_input("--channels '" + channels + "': expected rgb, bgr or gray");
  }
  return opt;
}

bool is_image_file(std::string_view name) {
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return false;
  std::string ext = lower(name.substr(dot + 1));
  return ext == "png" || ext == "jpg" || ext == "jpeg" || ext == "bmp" || ext == "ppm" || ext == "pgm";
}

Expected<Tensor> read_image(const std::string& path, const ImageOptions& options) {
  QT_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  return decode_image(bytes, path, options);
}

Expected<Tensor> decode_image(std::string_view bytes, const std::string& name, const ImageOptions& options) {
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) return Status::bad_input(name + ": image file too large");
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const int length = static_cast<int>(bytes.size());
  const int channels = options.channel_count();
  int w = 0, h = 0, file_channels = 0;
  // The header first: sizes are checked before stb allocates for the pixels,
  // and what stb itself misreads is refused before it reads it.
  const std::string err = detail::check_before_decoding(bytes);
  if (!err.empty()) return Status::bad_input(name + ": cannot decode image (" + err + ")");
  if (!stbi_info_from_memory(data, length, &w, &h, &file_channels))
    return Status::bad_input(name + ": cannot decode image (" + stbi_failure_reason() + ")");
  if (w <= 0 || h <= 0)
    return Status::bad_input(name + ": image is " + std::to_string(w) + "x" + std::to_string(h) + " pixels, which holds no pixels");
  // The decoded pixels (up to 4 channels of 16 bits) and the float tensor both fit in the per-tensor limit.
  if (Status st = check_tensor_size(DType::Float32, Dims{1, std::max(channels, file_channels), h, w}); !st)
    return st.with_context(name + ": image is " + std::to_string(w) + "x" + std::to_string(h) + " pixels");
  if (std::string err = detail::check_complete(bytes, w, h, file_channels); !err.empty())
    return Status::bad_input(name + ": cannot decode image (" + err + ")");

  // stb converts grey <-> RGB and drops alpha when asked for `channels`.
  int decoded_w = 0, decoded_h = 0;
  std::unique_ptr<unsigned char, StbFree> decoded(stbi_load_from_memory(data, length, &decoded_w, &decoded_h, &file_channels, channels));
  if (!decoded) return Status::bad_input(name + ": cannot decode image (" + stbi_failure_reason() + ")");
  if (decoded_w != w || decoded_h != h)
    return Status::bad_input(name + ": cannot decode image (header says " + std::to_string(w) + "x" + std::to_string(h) +
                             ", pixels are " + std::to_string(decoded_w) + "x" + std::to_string(decoded_h) + ")");

  const int out_h = options.height ? options.height : h, out_w = options.width ? options.width : w;
  const bool nchw = options.layout == ImageLayout::NCHW;
  Dims shape = nchw ? Dims{1, channels, out_h, out_w} : Dims{1, out_h, out_w, channels};
  auto checked = Tensor::create(DType::Float32, shape);
  if (!checked) return checked.status().with_context(name);
  Tensor t = std::move(checked).value();

  const unsigned char* pixels = decoded.get();
  std::vector<unsigned char> resized;
  if (out_h != h || out_w != w) {
    resized.resize(static_cast<size_t>(out_h) * static_cast<size_t>(out_w) * static_cast<size_t>(channels));
    if (!stbir_resize_uint8(pixels, w, h, 0, resized.data(), out_w, out_h, 0, channels))
      return Status::internal(name + ": resizing the image failed");
    pixels = resized.data();
  }

  float* out = t.data<float>();
  const size_t plane = static_cast<size_t>(out_h) * static_cast<size_t>(out_w);
  for (size_t p = 0; p < plane; ++p) {
    for (int c = 0; c < channels; ++c) {
      // BGR: tensor channel c holds the file's channel 2 - c.
      int src_c = options.channels == ImageChannels::BGR ? 2 - c : c;
      float v = pixels[p * static_cast<size_t>(channels) + static_cast<size_t>(src_c)] / 255.0f;
      v = (v - options.mean[static_cast<size_t>(c)]) / options.std[static_cast<size_t>(c)];
      size_t index = nchw ? static_cast<size_t>(c) * plane + p : p * static_cast<size_t>(channels) + static_cast<size_t>(c);
      out[index] = v;
    }
  }
  return t;
}

Status write_png(const std::string& path, int width, int height, int channels, const std::vector<uint8_t>& pixels) {
  assert(channels >= 1 && channels <= 4 &&
         pixels.size() == static_cast<size_t>(width) * static_cast<size_t>(height) * static_cast<size_t>(channels));
  std::string png;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  if (!stbi_write_png_to_func(append, &png, width, height, channels, pixels.data(), width * channels))
    return Status::internal(path + ": encoding the PNG failed");
  return write_file_atomic(path, png);
}

}  // namespace quant::io
