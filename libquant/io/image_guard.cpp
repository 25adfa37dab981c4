#include "libquant/io/image_guard.h"

#include <cstdint>

#include <stb/stb_image.h>

namespace quant::io::detail {
namespace {

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

unsigned byte(std::string_view b, size_t at) { return at < b.size() ? static_cast<unsigned char>(b[at]) : 0u; }

uint32_t read_be16(std::string_view b, size_t at) {
  return at + 2 <= b.size() ? static_cast<uint32_t>(static_cast<unsigned char>(b[at])) << 8 | static_cast<unsigned char>(b[at + 1]) : 0;
}

// JPEG marker segments (ISO 10918-1 B.2), walked the way stb_image meets them:
// entropy-coded data ends at the first 0xFF not followed by 0x00, a fill 0xFF
// or a restart marker. Where stb would stop with an error of its own the walk
// stops too and leaves the message to stb. Two things stb 2.27 does not check
// are refused here (both found by fuzz_image):
// - a Huffman table (DHT, B.2.4.2) of more than 256 codes: stb builds it into
//   256-entry arrays and writes past them;
// - a scan that uses a Huffman or quantization table no earlier segment
//   defined: stb allocates its decoder state with malloc and would decode with
//   whatever that memory held (an out-of-bounds read when the stale table is
//   inconsistent, different pixels from run to run otherwise). Which tables a
//   scan uses follows stb's decoder and G.1.2: a sequential scan the DC and AC
//   table of each component; a progressive DC scan (Ss = 0) its DC table on
//   the first pass (Ah = 0) and none on refinement; a progressive AC scan its
//   AC table.
std::string check_jpeg_segments(std::string_view b) {
  bool dc_defined[4] = {}, ac_defined[4] = {}, quant_defined[4] = {};
  bool progressive = false;
  unsigned component_ids[4] = {}, component_quant[4] = {}, component_count = 0;
  size_t pos = 0;
  while (pos + 1 < b.size()) {
    if (byte(b, pos) != 0xFF) {
      ++pos;  // entropy-coded data or padding
      continue;
    }
    const unsigned m = byte(b, pos + 1);
    if (m == 0xFF || m == 0x00 || (m >= 0xD0 && m <= 0xD8)) {
      pos += m == 0xFF ? 1 : 2;  // fill byte, stuffed 0xFF, restart marker, start of image
      continue;
    }
    if (m == 0xD9) break;  // end of image
    const int64_t length = read_be16(b, pos + 2);
    const size_t body = pos + 4;
    if (m == 0xC4) {  // DHT: class/id, 16 code counts, the symbols
      int64_t left = length - 2;
      size_t at = body;
      while (left > 0) {
        const unsigned q = byte(b, at), tc = q >> 4, th = q & 15;
        if (tc > 1 || th > 3) return "";  // stb refuses the table
        int64_t n = 0;
        for (size_t i = 1; i <= 16; ++i) n += byte(b, at + i);
        if (n > 256) return "JPEG Huffman table has " + std::to_string(n) + " codes, more than 256";
        (tc == 0 ? dc_defined : ac_defined)[th] = true;
        left -= 17 + n;
        at += static_cast<size_t>(17 + n);
      }
      if (left != 0) return "";  // stb refuses the segment
    } else if (m == 0xDB) {  // DQT: precision/id, 64 entries of 8 or 16 bits
      int64_t left = length - 2;
      size_t at = body;
      while (left > 0) {
        const unsigned q = byte(b, at), precision = q >> 4, tq = q & 15;
        if (precision > 1 || tq > 3) return "";  // stb refuses the table
        quant_defined[tq] = true;
        const int64_t size = precision ? 129 : 65;
        left -= size;
        at += static_cast<size_t>(size);
      }
    } else if (m >= 0xC0 && m <= 0xC2 && component_count == 0) {  // SOF0 baseline, SOF1 extended, SOF2 progressive
      progressive = m == 0xC2;
      component_count = byte(b, body + 5);
      if (component_count != 1 && component_count != 3 && component_count != 4) return "";  // stb refuses the frame
      for (unsigned c = 0; c < component_count; ++c) {
        component_ids[c] = byte(b, body + 6 + 3 * c);
        component_quant[c] = byte(b, body + 8 + 3 * c);
        if (component_quant[c] > 3) return "";  // stb refuses the frame
      }
    } else if (m == 0xDA) {  // SOS: per component its id and DC/AC tables, then Ss, Se, Ah/Al
      const size_t in_scan = byte(b, body);
      const size_t spectral = body + 1 + 2 * in_scan;
      const unsigned ss = byte(b, spectral), ah = byte(b, spectral + 2) >> 4;
      for (size_t s = 0; s < in_scan; ++s) {
        const unsigned id = byte(b, body + 1 + 2 * s), tables = byte(b, body + 2 + 2 * s);
        const unsigned td = tables >> 4, ta = tables & 15;
        if (td > 3 || ta > 3) return "";  // stb refuses the scan
        unsigned c = 0;
        while (c < component_count && component_ids[c] != id) ++c;
        if (c == component_count) return "";  // stb refuses the scan (or there was no frame)
        const bool uses_dc = !progressive || (ss == 0 && ah == 0);
        const bool uses_ac = !progressive || ss != 0;
        const std::string scan = "JPEG scan of component " + std::to_string(id) + " uses ";
        if (uses_dc && !dc_defined[td])
          return scan + "DC Huffman table " + std::to_string(td) + ", which no segment before it defines";
        if (uses_ac && !ac_defined[ta])
          return scan + "AC Huffman table " + std::to_string(ta) + ", which no segment before it defines";
        if (!quant_defined[component_quant[c]])
          return scan + "quantization table " + std::to_string(component_quant[c]) + ", which no segment before it defines";
      }
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

}  // namespace

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
  } else if (b.size() >= 2 && b[0] == 'B' && b[1] == 'M') {
    // The smallest BMP (14-byte file header, 12-byte OS/2 header, one 4-byte
    // row) has 30 bytes; stb reads the missing header bytes of a shorter file
    // as zeros and its pixels as padding (a 29-byte file declaring 589831x1
    // pixels, found by fuzz_image).
    if (b.size() < 30) return "BMP header is truncated (" + std::to_string(size) + " bytes)";
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


std::string check_before_decoding(std::string_view bytes) {
  size_t unused = 0;
  if (bytes.size() >= 2 && bytes[0] == 'P' && (bytes[1] == '5' || bytes[1] == '6')) return pnm_header(bytes, unused);
  // stb takes any file starting with 0xFF (fill bytes may precede SOI) as a JPEG.
  if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0xFF) return check_jpeg_segments(bytes);
  if (bytes.substr(0, 8) == std::string_view("\x89PNG\r\n\x1a\n", 8)) return check_png_chunks(bytes);
  return "";
}

}  // namespace quant::io::detail
