#include "libquant/io/tensor_proto.h"

#include <onnx/onnx-data_pb.h>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "libquant/core/file_util.h"

namespace quant::io {
namespace {

template <class Dst, class Src>
void copy_converted(const Src& src, Tensor& t) {
  Dst* d = t.data<Dst>();
  for (int64_t i = 0; i < t.size(); ++i) d[i] = static_cast<Dst>(src.Get(static_cast<int>(i)));
}

// Bytes of raw data a tensor of `dtype` with `n` elements holds (int4 packed two per byte).
int64_t raw_bytes(DType dtype, int64_t n) {
  if (dtype == DType::Int4 || dtype == DType::UInt4) return n / 2 + n % 2;
  return n * static_cast<int64_t>(dtype_size(dtype));
}

// Entries the typed field of `dtype` holds (int32_data for the narrow types).
int64_t typed_field_size(const onnx::TensorProto& p, DType dtype) {
  switch (dtype) {
    case DType::Float32: return p.float_data_size();
    case DType::Float64: return p.double_data_size();
    case DType::Int64: return p.int64_data_size();
    case DType::UInt32: case DType::UInt64: return p.uint64_data_size();
    default: return p.int32_data_size();
  }
}

void unpack_int4(Tensor& t, const auto& byte_at) {
  for (int64_t i = 0; i < t.size(); ++i) {
    int byte = byte_at(i / 2) & 0xFF;
    int nib = (i % 2 == 0) ? (byte & 0xF) : (byte >> 4);
    if (t.dtype() == DType::Int4) t.data<int8_t>()[i] = static_cast<int8_t>(nib >= 8 ? nib - 16 : nib);
    else t.data<uint8_t>()[i] = static_cast<uint8_t>(nib);
  }
}

// Copies the typed field into t, whose entry count the caller has checked.
void fill_typed_fields(const onnx::TensorProto& p, Tensor& t) {
  switch (t.dtype()) {
    case DType::Float32: copy_converted<float>(p.float_data(), t); break;
    case DType::Float64: copy_converted<double>(p.double_data(), t); break;
    case DType::Int64: copy_converted<int64_t>(p.int64_data(), t); break;
    case DType::UInt32: copy_converted<uint32_t>(p.uint64_data(), t); break;
    case DType::UInt64: copy_converted<uint64_t>(p.uint64_data(), t); break;
    case DType::Int32: copy_converted<int32_t>(p.int32_data(), t); break;
    case DType::Int16: copy_converted<int16_t>(p.int32_data(), t); break;
    case DType::UInt16: case DType::Float16: case DType::BFloat16: copy_converted<uint16_t>(p.int32_data(), t); break;
    case DType::Int8: copy_converted<int8_t>(p.int32_data(), t); break;
    case DType::UInt8: copy_converted<uint8_t>(p.int32_data(), t); break;
    case DType::Bool: {
      uint8_t* d = t.data<uint8_t>();
      for (int64_t i = 0; i < t.size(); ++i) d[i] = p.int32_data(static_cast<int>(i)) != 0;
      break;
    }
    case DType::Int4: case DType::UInt4:
      // int32_data holds the packed bytes, two values per entry's low byte.
      unpack_int4(t, [&](int64_t k) { return p.int32_data(static_cast<int>(k)); });
      break;
    case DType::Undefined: case DType::String: assert(false); break;
  }
}

// Copies raw little-endian bytes into t; the caller has checked their size.
void fill_raw(std::string_view raw, Tensor& t) {
  if (t.dtype() == DType::Int4 || t.dtype() == DType::UInt4) {
    unpack_int4(t, [&](int64_t k) { return static_cast<unsigned char>(raw[static_cast<size_t>(k)]); });
    return;
  }
  // ONNX raw_data is little endian, as is every machine qtool targets.
  if (!raw.empty()) std::memcpy(t.raw(), raw.data(), raw.size());
  if (t.dtype() == DType::Bool)
    for (auto& b : t.values<uint8_t>()) b = b ? 1 : 0;
}

bool parse_int64(const std::string& s, int64_t& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Tensors at least this large are mapped rather than read (smaller ones would
// each hold a page or more of address space and a mapping for little gain).
constexpr int64_t kMapBytes = 64 << 10;

// The `want` bytes of an external tensor of `dtype` and `shape`. The location
// must stay inside base_dir (after resolving "..", and symlinks that exist),
// name a regular file, and hold [offset, offset + want). Large tensors whose
// bytes are the in-memory form and 64-byte aligned in the file are mapped
// (DESIGN "Large models"); the others are read.
Expected<Tensor> read_external(const onnx::TensorProto& p, const std::string& base_dir, DType dtype, const Dims& shape,
                               int64_t want) {
  namespace fs = std::filesystem;
  const std::string who = "tensor '" + p.name() + "'";
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if ((kv.key() == "offset" && !parse_int64(kv.value(), offset)) ||
             (kv.key() == "length" && !parse_int64(kv.value(), length)))
      return Status::bad_input(who + ": external " + kv.key() + " '" + kv.value() + "' is not a number");
  }
  if (location.empty()) return Status::bad_input(who + " is external but names no location");
  if (location.find('\0') != std::string::npos) return Status::bad_input(who + ": external location holds a NUL byte");
  fs::path rel(location);
  if (rel.is_absolute()) return Status::bad_input(who + ": external location '" + location + "' is absolute");
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::path(base_dir.empty() ? "." : base_dir), ec);
  if (ec) return Status::bad_input(who + ": cannot resolve the model's folder '" + base_dir + "' (" + ec.message() + ")");
  fs::path full = fs::weakly_canonical(base / rel, ec);
  if (ec) return Status::bad_input(who + ": cannot resolve external location '" + location + "' (" + ec.message() + ")");
  auto [b_end, f_it] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (b_end != base.end() || f_it == full.end())
    return Status::bad_input(who + ": external location '" + location + "' escapes the model's folder");
  if (!fs::exists(full, ec)) return Status::bad_input(who + ": external data file '" + full.string() + "' is missing");
  if (!fs::is_regular_file(full, ec))
    return Status::bad_input(who + ": external data file '" + full.string() + "' is not a regular file");
  const auto file_size = static_cast<int64_t>(fs::file_size(full, ec));
  if (ec) return Status::bad_input(who + ": cannot read external data file '" + full.string() + "' (" + ec.message() + ")");
  if (length >= 0 && length != want)
    return Status::bad_input(who + ": external length " + std::to_string(length) + " differs from the " +
                             std::to_string(want) + " bytes its shape and type need");
  if (offset < 0 || offset > file_size || want > file_size - offset)
    return Status::bad_input(who + ": external data file '" + full.string() + "' (" + std::to_string(file_size) +
                             " bytes) is too short for " + std::to_string(want) + " bytes at offset " + std::to_string(offset));
  const bool packed = dtype == DType::Int4 || dtype == DType::UInt4;
  if (want >= kMapBytes && offset % 64 == 0 && !packed && dtype != DType::Bool) {
    auto region = MappedRegion::map(full.string(), offset, want);
    if (!region) return region.status().with_context(who);
    return Tensor::mapped(dtype, shape, *std::move(region));
  }
  std::ifstream in(full, std::ios::binary);
  if (!in) return Status::bad_input(who + ": cannot open external data file '" + full.string() + "'");
  std::string bytes(static_cast<size_t>(want), '\0');
  in.seekg(offset);
  in.read(bytes.data(), want);
  if (!in || in.gcount() != want)
    return Status::bad_input(who + ": reading external data file '" + full.string() + "' failed");
  Tensor t(dtype, shape);
  fill_raw(bytes, t);
  return t;
}

}  // namespace

Expected<Tensor> tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir) {
  auto dtype = dtype_from_onnx(p.data_type());
  if (!dtype) {
    return Status::bad_input("tensor '" + p.name() + "' has data type " + std::to_string(p.data_type()) +
                             ", which qtool does not support");
  }
  if (p.has_segment()) return Status::bad_input("tensor '" + p.name() + "' is segmented, which qtool does not support");
  Dims shape(p.dims().begin(), p.dims().end());
  if (*dtype == DType::String) {
    QT_ASSIGN_OR_RETURN(int64_t n, checked_element_count(shape));
    if (p.string_data_size() != n)
      return Status::bad_input("tensor '" + p.name() + "' has " + std::to_string(p.string_data_size()) +
                               " strings, expected " + std::to_string(n) + " for shape " + dims_to_string(shape));
    return Tensor::strings(std::move(shape), std::vector<std::string>(p.string_data().begin(), p.string_data().end()));
  }
  // Every size is checked against the data actually present before allocating.
  if (Status st = check_tensor_size(*dtype, shape); !st) return st.with_context("tensor '" + p.name() + "'");
  const int64_t n = element_count(shape);
  const int64_t want = raw_bytes(*dtype, n);
  const bool packed = *dtype == DType::Int4 || *dtype == DType::UInt4;
  auto wrong_size = [&](int64_t have, int64_t expected, const char* unit) {
    return Status::bad_input("tensor '" + p.name() + "' has " + std::to_string(have) + " " + unit + " of data, expected " +
                             std::to_string(expected) + " for shape " + dims_to_string(shape) + " " +
                             std::string(dtype_name(*dtype)));
  };
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    return read_external(p, base_dir, *dtype, shape, want);
  }
  if (p.has_raw_data()) {
    const auto have = static_cast<int64_t>(p.raw_data().size());
    if (have != want) return wrong_size(have, want, "bytes");
    Tensor t(*dtype, shape);
    fill_raw(p.raw_data(), t);
    return t;
  }
  // The typed field holds one entry per element, or per packed byte for int4.
  const int64_t have = typed_field_size(p, *dtype);
  const int64_t expected = packed ? want : n;
  if (have != expected) return wrong_size(have, expected, "entries");
  Tensor t(*dtype, shape);
  fill_typed_fields(p, t);
  return t;
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->Clear();
  p->set_name(name);
  p->set_data_type(static_cast<int>(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  if (t.dtype() == DType::String) {
    for (const std::string& s : t.string_values()) p->add_string_data(s);
    return;
  }
  if (t.dtype() == DType::Int4 || t.dtype() == DType::UInt4) {
    p->set_raw_data(pack_int4(t));
    return;
  }
  p->set_raw_data(std::string(static_cast<const char*>(t.raw()), t.byte_size()));
}

std::string pack_int4(const Tensor& t) {
  std::string packed(static_cast<size_t>((t.size() + 1) / 2), '\0');
  const auto* v = t.data<uint8_t>();
  for (int64_t i = 0; i < t.size(); ++i) {
    uint8_t nib = v[i] & 0xF;
    packed[static_cast<size_t>(i / 2)] = static_cast<char>(packed[static_cast<size_t>(i / 2)] | (i % 2 ? nib << 4 : nib));
  }
  return packed;
}

void tensor_to_external_proto(const Tensor& t, const std::string& name, const ExternalRef& ref, onnx::TensorProto* p) {
  p->Clear();
  p->set_name(name);
  p->set_data_type(static_cast<int>(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  p->set_data_location(onnx::TensorProto::EXTERNAL);
  const std::pair<const char*, std::string> entries[] = {
      {"location", ref.location}, {"offset", std::to_string(ref.offset)}, {"length", std::to_string(ref.length)}};
  for (const auto& [key, value] : entries) {
    auto* kv = p->add_external_data();
    kv->set_key(key);
    kv->set_value(value);
  }
}

Expected<Tensor> read_tensor_pb(const std::string& path, std::string* name) {
  QT_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) return Status::bad_input(path + ": not a valid ONNX TensorProto (.pb) file");
  if (name) *name = proto.name();
  auto dir = std::filesystem::path(path).parent_path().string();
  auto t = tensor_from_proto(proto, dir);
  if (!t) return t.status().with_context(path);
  return t;
}

namespace {

Expected<Tensor> sequence_from_proto(const onnx::SequenceProto& proto, const std::string& dir) {
  if (proto.elem_type() != onnx::SequenceProto::UNDEFINED && proto.elem_type() != onnx::SequenceProto::TENSOR)
    return Status::bad_input("sequences of sequences, maps, optionals or sparse tensors are not supported");
  std::vector<Tensor> items;
  DType elem = DType::Undefined;
  for (const auto& tp : proto.tensor_values()) {
    QT_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(tp, dir));
    if (elem != DType::Undefined && t.dtype() != elem) return Status::bad_input("sequence tensors differ in type");
    elem = t.dtype();
    items.push_back(std::move(t));
  }
  return Tensor::sequence(elem, std::move(items));
}

}  // namespace

Expected<Tensor> read_value_pb(const std::string& path, Tensor::Kind kind) {
  if (kind == Tensor::Kind::Tensor) return read_tensor_pb(path);
  QT_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  const std::string dir = std::filesystem::path(path).parent_path().string();
  Expected<Tensor> value = Status::bad_input("no value");
  if (kind == Tensor::Kind::Sequence) {
    onnx::SequenceProto proto;
    if (!proto.ParseFromString(bytes)) return Status::bad_input(path + ": not a valid ONNX SequenceProto (.pb) file");
    value = sequence_from_proto(proto, dir);
  } else {
    onnx::OptionalProto proto;
    if (!proto.ParseFromString(bytes)) return Status::bad_input(path + ": not a valid ONNX OptionalProto (.pb) file");
    Expected<Tensor> inner = Status::bad_input("no value");
    if (proto.has_tensor_value() || proto.has_sequence_value()) {
      inner = proto.has_tensor_value() ? tensor_from_proto(proto.tensor_value(), dir)
                                       : sequence_from_proto(proto.sequence_value(), dir);
      if (!inner) return inner.status().with_context(path);
      value = Tensor::optional(std::move(inner).value());
    } else if (proto.elem_type() == onnx::OptionalProto::UNDEFINED || proto.elem_type() == onnx::OptionalProto::TENSOR ||
               proto.elem_type() == onnx::OptionalProto::SEQUENCE) {
      value = Tensor::optional(std::nullopt);
    } else {
      return Status::bad_input(path + ": optionals of maps or sparse tensors are not supported");
    }
  }
  if (!value) return value.status().with_context(path);
  return value;
}

}  // namespace quant::io
