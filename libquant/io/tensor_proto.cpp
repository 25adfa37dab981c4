#include "libquant/io/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "libquant/core/file_util.h"

namespace quant::io {
namespace {

// Upper bound on one tensor (16 GiB): refuse absurd declared sizes before allocating.
constexpr int64_t kMaxTensorBytes = int64_t{16} << 30;

template <class Dst, class Src>
void copy_converted(const Src& src, Tensor& t) {
  Dst* d = t.data<Dst>();
  for (int64_t i = 0; i < t.size(); ++i) d[i] = static_cast<Dst>(src.Get(static_cast<int>(i)));
}

Status fill_typed_fields(const onnx::TensorProto& p, Tensor& t) {
  const int64_t n = t.size();
  auto need = [&](int have) -> Status {
    if (have != n)
      return Status::bad_input("tensor '" + p.name() + "' declares " + std::to_string(n) + " elements but holds " +
                               std::to_string(have));
    return Status::ok();
  };
  switch (t.dtype()) {
    case DType::Float32:
      QT_RETURN_IF_ERROR(need(p.float_data_size()));
      copy_converted<float>(p.float_data(), t);
      break;
    case DType::Float64:
      QT_RETURN_IF_ERROR(need(p.double_data_size()));
      copy_converted<double>(p.double_data(), t);
      break;
    case DType::Int64:
      QT_RETURN_IF_ERROR(need(p.int64_data_size()));
      copy_converted<int64_t>(p.int64_data(), t);
      break;
    case DType::UInt32:
    case DType::UInt64:
      QT_RETURN_IF_ERROR(need(p.uint64_data_size()));
      if (t.dtype() == DType::UInt32) copy_converted<uint32_t>(p.uint64_data(), t);
      else copy_converted<uint64_t>(p.uint64_data(), t);
      break;
    case DType::Int32: QT_RETURN_IF_ERROR(need(p.int32_data_size())); copy_converted<int32_t>(p.int32_data(), t); break;
    case DType::Int16: QT_RETURN_IF_ERROR(need(p.int32_data_size())); copy_converted<int16_t>(p.int32_data(), t); break;
    case DType::UInt16: case DType::Float16: case DType::BFloat16:
      QT_RETURN_IF_ERROR(need(p.int32_data_size()));
      copy_converted<uint16_t>(p.int32_data(), t);
      break;
    case DType::Int8: QT_RETURN_IF_ERROR(need(p.int32_data_size())); copy_converted<int8_t>(p.int32_data(), t); break;
    case DType::UInt8: case DType::Bool:
      QT_RETURN_IF_ERROR(need(p.int32_data_size()));
      copy_converted<uint8_t>(p.int32_data(), t);
      break;
    case DType::Int4: case DType::UInt4: {
      // int32_data holds the packed bytes, two values per entry's low byte.
      if (p.int32_data_size() != (n + 1) / 2) return need(p.int32_data_size() * 2);
      for (int64_t i = 0; i < n; ++i) {
        int byte = p.int32_data(static_cast<int>(i / 2)) & 0xFF;
        int nib = (i % 2 == 0) ? (byte & 0xF) : (byte >> 4);
        if (t.dtype() == DType::Int4) t.data<int8_t>()[i] = static_cast<int8_t>(nib >= 8 ? nib - 16 : nib);
        else t.data<uint8_t>()[i] = static_cast<uint8_t>(nib);
      }
      break;
    }
    case DType::Undefined:
      return Status::bad_input("tensor '" + p.name() + "' has no data type");
  }
  return Status::ok();
}

Status fill_raw(const std::string& raw, const onnx::TensorProto& p, Tensor& t) {
  if (t.dtype() == DType::Int4 || t.dtype() == DType::UInt4) {
    size_t want = static_cast<size_t>((t.size() + 1) / 2);
    if (raw.size() != want)
      return Status::bad_input("tensor '" + p.name() + "' has " + std::to_string(raw.size()) + " bytes of data, expected " +
                               std::to_string(want));
    for (int64_t i = 0; i < t.size(); ++i) {
      int byte = static_cast<unsigned char>(raw[static_cast<size_t>(i / 2)]);
      int nib = (i % 2 == 0) ? (byte & 0xF) : (byte >> 4);
      if (t.dtype() == DType::Int4) t.data<int8_t>()[i] = static_cast<int8_t>(nib >= 8 ? nib - 16 : nib);
      else t.data<uint8_t>()[i] = static_cast<uint8_t>(nib);
    }
    return Status::ok();
  }
  if (raw.size() != t.byte_size())
    return Status::bad_input("tensor '" + p.name() + "' has " + std::to_string(raw.size()) + " bytes of data, expected " +
                             std::to_string(t.byte_size()) + " for shape " + dims_to_string(t.shape()) + " " +
                             std::string(dtype_name(t.dtype())));
  // ONNX raw_data is little endian, as is every machine qtool targets.
  if (!raw.empty()) std::memcpy(t.raw(), raw.data(), raw.size());
  return Status::ok();
}

bool parse_int64(const std::string& s, int64_t& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

Expected<std::string> read_external(const onnx::TensorProto& p, const std::string& base_dir) {
  namespace fs = std::filesystem;
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if ((kv.key() == "offset" && !parse_int64(kv.value(), offset)) ||
             (kv.key() == "length" && !parse_int64(kv.value(), length)))
      return Status::bad_input("tensor '" + p.name() + "': external " + kv.key() + " '" + kv.value() + "' is not a number");
  }
  if (location.empty()) return Status::bad_input("tensor '" + p.name() + "' is external but names no location");
  fs::path rel(location);
  if (rel.is_absolute()) return Status::bad_input("tensor '" + p.name() + "': external location '" + location + "' is absolute");
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::path(base_dir.empty() ? "." : base_dir), ec);
  fs::path full = fs::weakly_canonical(base / rel, ec);
  auto [b_end, f_it] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (b_end != base.end())
    return Status::bad_input("tensor '" + p.name() + "': external location '" + location + "' escapes the model's folder");
  std::ifstream in(full, std::ios::binary);
  if (!in) return Status::bad_input("tensor '" + p.name() + "': external data file '" + full.string() + "' is missing");
  in.seekg(0, std::ios::end);
  int64_t file_size = in.tellg();
  if (offset < 0 || offset > file_size) return Status::bad_input("tensor '" + p.name() + "': external offset past end of file");
  if (length < 0) length = file_size - offset;
  if (offset + length > file_size)
    return Status::bad_input("tensor '" + p.name() + "': external data file '" + full.string() + "' is too short");
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  return bytes;
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
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return Status::bad_input("tensor '" + p.name() + "' has a negative dimension");
    if (d != 0 && count > kMaxTensorBytes / d) return Status::bad_input("tensor '" + p.name() + "' is absurdly large");
    count *= d;
  }
  if (count * static_cast<int64_t>(dtype_size(*dtype)) > kMaxTensorBytes)
    return Status::bad_input("tensor '" + p.name() + "' declares " + dims_to_string(shape) + ", more than 16 GiB");
  Tensor t(*dtype, shape);
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    QT_ASSIGN_OR_RETURN(std::string bytes, read_external(p, base_dir));
    QT_RETURN_IF_ERROR(fill_raw(bytes, p, t));
  } else if (p.has_raw_data()) {
    QT_RETURN_IF_ERROR(fill_raw(p.raw_data(), p, t));
  } else {
    QT_RETURN_IF_ERROR(fill_typed_fields(p, t));
  }
  return t;
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->Clear();
  p->set_name(name);
  p->set_data_type(static_cast<int>(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  if (t.dtype() == DType::Int4 || t.dtype() == DType::UInt4) {
    std::string packed(static_cast<size_t>((t.size() + 1) / 2), '\0');
    const auto* v = t.data<uint8_t>();
    for (int64_t i = 0; i < t.size(); ++i) {
      uint8_t nib = v[i] & 0xF;
      packed[static_cast<size_t>(i / 2)] = static_cast<char>(packed[static_cast<size_t>(i / 2)] | (i % 2 ? nib << 4 : nib));
    }
    p->set_raw_data(packed);
    return;
  }
  p->set_raw_data(std::string(static_cast<const char*>(t.raw()), t.byte_size()));
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

}  // namespace quant::io
