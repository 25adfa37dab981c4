#include "libquant/io/image.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <memory>

#include "libquant/core/file_util.h"

// The one translation unit holding stb's implementations (header-only libraries).
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

uint32_t read_le(std::string_view b, size_t at, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

bool pnm_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// The header of a binary PGM/PPM ("P5"/"P6"), read the way stb_image 2.27 reads
// it (stbi__pnm_info): whitespace and '#' comments between the fields, and the
// pixels start right after the one character that ends the maximum value.
// stb neither checks its integer parsing for overflow nor that the pixels are
// all there (a short file decodes to uninitialised memory), so both are
// checked here first. Returns an error text, or "" with the pixel offset set.
std::string pnm_header(std::string_view b, size_t& pixels_at) {
  size_t pos = 2;
  auto skip_space = [&] {
    while (pos < b.size()) {
      if (pnm_space(b[pos])) {
        ++pos;
      } else if (b[pos] == '#') {
        while (pos < b.size() && b[pos] != '\n' && b[pos] != '\r') ++pos;
      } else {
        break;
      }
    }
  };
  int64_t value = 0;
  for (int field = 0; field < 3; ++field) {
    skip_space();
    size_t digits = 0;
    value = 0;
    for (; pos < b.size() && b[pos] >= '0' && b[pos] <= '9' && digits <= 9; ++pos, ++digits) value = value * 10 + (b[pos] - '0');
    if (digits == 0) return "PNM header is truncated or malformed";
    if (digits > 9) return "PNM header has a number with more than 9 digits";
  }
  // stb 2.27 converts the channels of 16-bit PNM pixels as if they were 8-bit
  // and then reads past its buffer (found by fuzz_image): 8-bit only.
  if (value > 255) return "16-bit PNM (maximum value " + std::to_string(value) + ") is not supported";
  if (pos >= b.size()) return "PNM header is truncated";
  pixels_at = pos + 1;
  return "";
}

uint32_t read_be16(std::string_view b, size_t at) {
  return at + 2 <= b.size() ? static_cast<uint32_t>(static_cast<unsigned char>(b[at])) << 8 | static_cast<unsigned char>(b[at + 1]) : 0;
}

// stb_image 2.27 builds a JPEG Huffman table (DHT, ISO 10918-1 B.2.4.2) from
// its 16 code counts without checking that they add up to at most 256, the
// size of its arrays: a larger total writes past them (found by fuzz_image).
// Walks the marker segments the way stb meets them (entropy-coded data ends at
// the first 0xFF not followed by 0x00, fill 0xFF or a restart marker) and
// refuses such a table before stb sees the file; where stb would stop with an
// error of its own, the walk stops too. Returns an error text or "".
std::string check_jpeg_tables(std::string_view b) {
  size_t pos = 0;
  while (pos + 1 < b.size()) {
    if (static_cast<unsigned char>(b[pos]) != 0xFF) {
      ++pos;  // entropy-coded data or padding
      continue;
    }
    const auto m = static_cast<unsigned char>(b[pos + 1]);
    if (m == 0xFF || m == 0x00 || (m >= 0xD0 && m <= 0xD8)) {
      pos += m == 0xFF ? 1 : 2;  // fill byte, stuffed 0xFF, restart marker, start of image
      continue;
    }
    if (m == 0xD9) break;  // end of image
    const int64_t length = read_be16(b, pos + 2);
    if (m == 0xC4) {
      int64_t left = length - 2;
      size_t at = pos + 4;
      while (left > 0) {
        const auto q = at < b.size() ? static_cast<unsigned char>(b[at]) : 0;
        if ((q >> 4) > 1 || (q & 15) > 3) return "";  // stb refuses the table
        int64_t n = 0;
        for (size_t i = 1; i <= 16; ++i) n += at + i < b.size() ? static_cast<unsigned char>(b[at + i]) : 0;
        if (n > 256) return "JPEG Huffman table has " + std::to_string(n) + " codes, more than 256";
        left -= 17 + n;
        at += static_cast<size_t>(17 + n);
      }
      if (left != 0) return "";  // stb refuses the segment
    }
    pos += static_cast<size_t>(2 + length);
  }
  return "";
}

// stb_image 2.27 copies a PNG's first IDAT chunk into a buffer it has not
// allocated yet when that chunk is empty (memcpy to null: undefined behaviour,
// found by fuzz_image). Encoders never write an empty first IDAT; it is refused.
// stb also grows its IDAT buffer to a chunk's declared length before reading
// the bytes (a 177-byte file declaring a 1.6 GB chunk made it ask for 2 GiB,
// found by fuzz_image): a chunk longer than what is left of the file is refused.
std::string check_png_chunks(std::string_view b) {
  size_t pos = 8;  // after the signature
  bool seen_idat = false;
  while (pos + 8 <= b.size()) {
    const uint64_t length = static_cast<uint64_t>(read_be16(b, pos)) << 16 | read_be16(b, pos + 2);
    const std::string_view type = b.substr(pos + 4, 4);
    if (12 + length > b.size() - pos)
      return "PNG chunk '" + std::string(type) + "' declares " + std::to_string(length) +
             " bytes, more than the file holds (truncated or corrupt)";
    if (type == "IDAT" && !seen_idat) {
      if (length == 0) return "PNG's first IDAT chunk is empty";
      seen_idat = true;
    }
    if (type == "IEND") break;
    pos += static_cast<size_t>(12 + length);
  }
  return "";
}

// stb_image pads a short BMP or JPEG with zeros and reports success; a file
// cut short must be refused instead. `w`, `h` come from stbi_info.
std::string check_complete(std::string_view b, int w, int h, int channels) {
  const auto size = static_cast<uint64_t>(b.size());
  if (b.size() >= 2 && b[0] == 'P' && (b[1] == '5' || b[1] == '6')) {
    size_t at = 0;
    std::string err = pnm_header(b, at);
    if (!err.empty()) return err;
    // 16-bit when the maximum value exceeds 255 (stbi_is_16_bit).
    const uint64_t need = static_cast<uint64_t>(w) * static_cast<uint64_t>(h) * static_cast<uint64_t>(channels) *
                          (stbi_is_16_bit_from_memory(reinterpret_cast<const unsigned char*>(b.data()), static_cast<int>(b.size())) ? 2 : 1);
    if (size - at < need) return "PNM pixel data is truncated (" + std::to_string(size - at) + " of " + std::to_string(need) + " bytes)";
  } else if (b.size() >= 30 && b[0] == 'B' && b[1] == 'M') {
    // Rows are padded to 4 bytes; the last row's padding may be missing.
    const uint64_t offset = read_le(b, 10, 4), header = read_le(b, 14, 4);
    const uint64_t bpp = header == 12 ? read_le(b, 24, 2) : read_le(b, 28, 2);
    const uint64_t row = (static_cast<uint64_t>(w) * bpp + 7) / 8, stride = (static_cast<uint64_t>(w) * bpp + 31) / 32 * 4;
    const uint64_t need = offset + stride * static_cast<uint64_t>(h - 1) + row;
    if (size < need) return "BMP pixel data is truncated (" + std::to_string(size) + " of " + std::to_string(need) + " bytes)";
  } else if (!b.empty() && static_cast<unsigned char>(b[0]) == 0xFF) {
    // Entropy-coded data escapes 0xFF (ISO 10918-1 B.1.1.5), so after the last
    // start-of-scan marker (FF DA) only the end-of-image marker is FF D9.
    const size_t sos = b.rfind("\xFF\xDA");
    if (sos == std::string_view::npos || b.find("\xFF\xD9", sos) == std::string_view::npos)
      return "JPEG data is truncated (no end-of-image marker after the last scan)";
  }
  return "";
}

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
  std::string err;
  size_t unused = 0;
  if (bytes.size() >= 2 && bytes[0] == 'P' && (bytes[1] == '5' || bytes[1] == '6')) err = pnm_header(bytes, unused);
  // stb takes any file starting with 0xFF (fill bytes may precede SOI) as a JPEG.
  if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0xFF) err = check_jpeg_tables(bytes);
  if (bytes.substr(0, 8) == std::string_view("\x89PNG\r\n\x1a\n", 8)) err = check_png_chunks(bytes);
  if (!err.empty()) return Status::bad_input(name + ": cannot decode image (" + err + ")");
  if (!stbi_info_from_memory(data, length, &w, &h, &file_channels))
    return Status::bad_input(name + ": cannot decode image (" + stbi_failure_reason() + ")");
  if (w <= 0 || h <= 0)
    return Status::bad_input(name + ": image is " + std::to_string(w) + "x" + std::to_string(h) + " pixels, which holds no pixels");
  // The decoded pixels (up to 4 channels of 16 bits) and the float tensor both fit in the per-tensor limit.
  if (Status st = check_tensor_size(DType::Float32, Dims{1, std::max(channels, file_channels), h, w}); !st)
    return st.with_context(name + ": image is " + std::to_string(w) + "x" + std::to_string(h) + " pixels");
  if (std::string err = check_complete(bytes, w, h, file_channels); !err.empty())
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
