#include "libquant/io/npy.h"

#include <bit>
#include <cstring>
#include <optional>
#include <vector>

#include "libquant/core/file_util.h"

namespace quant::io {
namespace {

static_assert(std::endian::native == std::endian::little, "npy reading assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// numpy refuses headers over 10000 characters for safety; a little more slack
// here, but still a bound on what an untrusted header may make us parse.
constexpr size_t kMaxHeaderLen = 1 << 16;
constexpr size_t kMaxRank = 64;  // numpy's NPY_MAXDIMS

struct TypeCode {
  const char* code;  // descr without the byte-order character
  DType dtype;
};
constexpr TypeCode kTypes[] = {
    {"f2", DType::Float16}, {"f4", DType::Float32}, {"f8", DType::Float64}, {"i1", DType::Int8},
    {"u1", DType::UInt8},   {"i2", DType::Int16},   {"u2", DType::UInt16},  {"i4", DType::Int32},
    {"u4", DType::UInt32},  {"i8", DType::Int64},   {"u8", DType::UInt64},  {"b1", DType::Bool},
};

std::optional<DType> dtype_from_code(std::string_view code) {
  for (const auto& t : kTypes)
    if (code == t.code) return t.dtype;
  return std::nullopt;
}

// The header is a Python dict literal written by repr(); this parses the subset
// numpy produces (string keys; string, bool and int-tuple values), accepting
// either quote style, any whitespace, trailing commas and Python 2 'L' suffixes.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view s) : s_(s) {}

  struct Fields {
    std::optional<std::string> descr;
    std::optional<bool> fortran_order;
    std::optional<Dims> shape;
  };

  // Returns an error description (without the file name) or "" on success.
  std::string parse(Fields& out) {
    skip_ws();
    if (!eat('{')) return "header is not a dict: " + excerpt();
    skip_ws();
    while (!eat('}')) {
      std::string key;
      if (!parse_string(key)) return "malformed header dict at " + excerpt();
      skip_ws();
      if (!eat(':')) return "malformed header dict: expected ':' after '" + key + "'";
      skip_ws();
      if (key == "descr") {
        if (peek() == '[') return "structured dtypes (descr is a list) are not supported";
        std::string v;
        if (!parse_string(v)) return "descr is not a string";
        out.descr = v;
      } else if (key == "fortran_order") {
        if (s_.substr(pos_, 4) == "True") {
          out.fortran_order = true;
          pos_ += 4;
        } else if (s_.substr(pos_, 5) == "False") {
          out.fortran_order = false;
          pos_ += 5;
        } else {
          return "fortran_order is not True or False";
        }
      } else if (key == "shape") {
        Dims dims;
        std::string err = parse_shape(dims);
        if (!err.empty()) return err;
        out.shape = std::move(dims);
      } else {
        return "unexpected key '" + key + "' in header";
      }
      skip_ws();
      if (eat(',')) {
        skip_ws();
      } else if (peek() != '}') {
        return "malformed header dict at " + excerpt();
      }
    }
    skip_ws();
    if (pos_ != s_.size()) return "unexpected text after the header dict: " + excerpt();
    return "";
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  std::string excerpt() const {
    std::string e(s_.substr(pos_, 20));
    return pos_ >= s_.size() ? "end of header" : "'" + e + "'";
  }
  bool parse_string(std::string& out) {
    char q = peek();
    if (q != '\'' && q != '"') return false;
    ++pos_;
    out.clear();
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\') return false;  // numpy's descrs and keys never need escapes
      out += s_[pos_++];
    }
    return eat(q);
  }
  std::string parse_shape(Dims& dims) {
    if (!eat('(')) return "shape is not a tuple";
    skip_ws();
    while (!eat(')')) {
      if (dims.size() >= kMaxRank) return "shape has more than 64 dimensions";
      if (peek() < '0' || peek() > '9') return "shape holds something other than non-negative integers: " + excerpt();
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (v > (INT64_MAX - 9) / 10) return "shape dimension is too large";
        v = v * 10 + (s_[pos_++] - '0');
      }
      eat('L');
      dims.push_back(v);
      skip_ws();
      if (eat(',')) skip_ws();
      else if (peek() != ')') return "malformed shape tuple at " + excerpt();
    }
    return "";
  }

  std::string_view s_;
  size_t pos_ = 0;
};

uint32_t read_le(std::string_view bytes, size_t offset, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i) v |= uint32_t{static_cast<unsigned char>(bytes[offset + i])} << (8 * i);
  return v;
}

std::string shape_repr(const Dims& shape) {
  // Python's repr of a tuple: "()", "(3,)", "(2, 3)".
  if (shape.empty()) return "()";
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

Expected<Tensor> parse_npy(std::string_view bytes, const std::string& name) {
  auto bad = [&](const std::string& why) { return Status::bad_input(name + ": " + why); };
  if (bytes.size() < kMagicLen + 2 || bytes.substr(0, kMagicLen) != std::string_view(kMagic, kMagicLen))
    return bad("not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(bytes[6]);
  int minor = static_cast<unsigned char>(bytes[7]);
  if (minor != 0 || major < 1 || major > 3)
    return bad("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  // Version 1.0 stores the header length in 2 bytes, 2.0 and 3.0 (UTF-8 header) in 4.
  size_t len_width = major == 1 ? 2 : 4;
  size_t prefix = kMagicLen + 2 + len_width;
  if (bytes.size() < prefix) return bad("file ends inside the header length");
  size_t header_len = read_le(bytes, kMagicLen + 2, len_width);
  if (header_len > kMaxHeaderLen) return bad("header of " + std::to_string(header_len) + " bytes is implausibly long");
  if (bytes.size() - prefix < header_len) return bad("file ends inside the header");
  std::string_view header = bytes.substr(prefix, header_len);

  HeaderParser::Fields f;
  std::string err = HeaderParser(header).parse(f);
  if (!err.empty()) return bad(err);
  if (!f.descr || !f.fortran_order || !f.shape) return bad("header lacks one of 'descr', 'fortran_order', 'shape'");
  if (*f.fortran_order) return bad("fortran_order True is not supported (save a C-ordered array: np.ascontiguousarray)");

  const std::string& descr = *f.descr;
  std::optional<DType> dtype;
  if (descr.size() >= 2) {
    char order = descr[0];
    std::string_view code = std::string_view(descr).substr(1);
    dtype = dtype_from_code(code);
    if (dtype) {
      bool one_byte = dtype_size(*dtype) == 1;
      if (order == '>' && !one_byte)
        return bad("big-endian dtype '" + descr + "' is not supported (convert with arr.astype(arr.dtype.newbyteorder('<')))");
      // '|' (not applicable) is how numpy marks byte-sized types; '=' is native, little endian here.
      bool ok_order = order == '<' || order == '=' || (one_byte && (order == '|' || order == '>'));
      if (!ok_order) dtype.reset();
    }
  }
  if (!dtype)
    return bad("unsupported dtype '" + descr + "' (supported: float16/32/64, int8/16/32/64, uint8/16/32/64, bool)");

  const Dims& shape = *f.shape;
  size_t item = dtype_size(*dtype);
  size_t data_bytes = bytes.size() - prefix - header_len;
  // Bound the element count by what the file holds before allocating anything.
  uint64_t max_count = data_bytes / item;
  uint64_t count = 1;
  bool has_zero = false;
  for (int64_t d : shape) has_zero = has_zero || d == 0;
  if (has_zero) {
    // Empty, but the other dims still may not overflow (kernels multiply them).
    if (auto n = checked_element_count(shape); !n) return bad(n.status().message());
    count = 0;
  } else {
    for (int64_t d : shape) {
      if (count > max_count / static_cast<uint64_t>(d))
        return bad("data is short: " + std::to_string(data_bytes) + " bytes, shape " + dims_to_string(shape) + " " +
                   std::string(dtype_name(*dtype)) + " needs more");
      count *= static_cast<uint64_t>(d);
    }
  }
  if (count * item != data_bytes) {
    std::string want = std::to_string(count * item);
    if (count * item > data_bytes)
      return bad("data is short: " + std::to_string(data_bytes) + " bytes, expected " + want + " for shape " +
                 dims_to_string(shape) + " " + std::string(dtype_name(*dtype)));
    return bad(std::to_string(data_bytes) + " bytes of data, expected " + want + " for shape " + dims_to_string(shape) +
               " (several arrays saved into one file?)");
  }
  Tensor t(*dtype, shape);
  if (data_bytes) std::memcpy(t.raw(), bytes.data() + prefix + header_len, data_bytes);
  if (*dtype == DType::Bool) {
    for (auto& b : t.values<uint8_t>()) b = b ? 1 : 0;
  }
  return t;
}

Expected<Tensor> read_npy(const std::string& path) {
  QT_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  return parse_npy(bytes, path);
}

std::string serialize_npy(const Tensor& tensor) {
  assert(!tensor.empty());
  // Types numpy has no descr for are widened losslessly.
  const Tensor* src = &tensor;
  Tensor widened;
  const char* descr = nullptr;
  switch (tensor.dtype()) {
    case DType::Float32: descr = "<f4"; break;
    case DType::Float64: descr = "<f8"; break;
    case DType::Float16: descr = "<f2"; break;
    case DType::Int8: case DType::Int4: descr = "|i1"; break;
    case DType::UInt8: case DType::UInt4: descr = "|u1"; break;
    case DType::Bool: descr = "|b1"; break;
    case DType::Int16: descr = "<i2"; break;
    case DType::UInt16: descr = "<u2"; break;
    case DType::Int32: descr = "<i4"; break;
    case DType::UInt32: descr = "<u4"; break;
    case DType::Int64: descr = "<i8"; break;
    case DType::UInt64: descr = "<u8"; break;
    case DType::BFloat16: {
      // bfloat16 is the top half of a float32, so the widening is exact.
      widened = Tensor(DType::Float32, tensor.shape());
      const uint16_t* in = tensor.data<uint16_t>();
      uint32_t* out = widened.data<uint32_t>();
      for (int64_t i = 0; i < tensor.size(); ++i) out[i] = uint32_t{in[i]} << 16;
      src = &widened;
      descr = "<f4";
      break;
    }
    case DType::Undefined: case DType::String: descr = "|u1"; break;  // refused by write_npy
  }

  // As numpy's _write_array_header: sorted keys, repr values, then spare
  // spaces so the first dimension can grow in place, then _wrap_header's padding.
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " +
                       shape_repr(src->shape()) + ", }";
  if (!src->shape().empty()) header += std::string(21 - std::to_string(src->shape()[0]).size(), ' ');
  auto wrap = [&](int major, size_t len_width) {
    size_t hlen = header.size() + 1;  // + the final newline
    size_t pad = 64 - (kMagicLen + 2 + len_width + hlen) % 64;
    size_t total = hlen + pad;
    std::string out(kMagic, kMagicLen);
    out += static_cast<char>(major);
    out += '\0';
    for (size_t i = 0; i < len_width; ++i) out += static_cast<char>((total >> (8 * i)) & 0xFF);
    out += header;
    out.append(pad, ' ');
    out += '\n';
    return std::make_pair(out, total);
  };
  auto [out, total] = wrap(1, 2);
  if (total > 0xFFFF) out = wrap(2, 4).first;
  out.append(static_cast<const char*>(src->raw()), src->byte_size());
  return out;
}

Status write_npy(const std::string& path, const Tensor& tensor) {
  if (tensor.empty()) return Status::internal(path + ": cannot write an untyped (empty) tensor");
  if (!tensor.is_tensor() || tensor.dtype() == DType::String)
    return Status::bad_input(path + ": a " + describe_value(tensor) + " value has no .npy form");
  return write_file_atomic(path, serialize_npy(tensor));
}

}  // namespace quant::io
