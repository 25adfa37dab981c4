// ONNX TensorProto <-> Tensor, shared by the model importer (initializers,
// Constant values) and the `.pb` test-data reader.
#pragma once

#include <cstdint>
#include <string>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"

namespace onnx {
class TensorProto;
}

namespace quant::io {

// `base_dir` resolves external data (data_location = EXTERNAL); a location
// that escapes base_dir, or a missing or short file, is refused.
Expected<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir);

// Always writes raw_data (little endian), int4 types packed two per byte
// (low nibble first) as ONNX 1.16 specifies for INT4/UINT4.
void tensor_to_proto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto);

// The int4 elements of `t` (Int4 / UInt4) packed two per byte, low nibble first.
std::string pack_int4(const Tensor& t);

// Where a tensor's bytes live in an external data file: `location` relative to
// the model's folder, as ONNX's external_data keys say.
struct ExternalRef {
  std::string location;
  int64_t offset = 0;
  int64_t length = 0;
};
// The proto of `t` without data: data_location EXTERNAL and the keys of `ref`.
void tensor_to_external_proto(const Tensor& tensor, const std::string& name, const ExternalRef& ref,
                              onnx::TensorProto* proto);

// Reads a serialized TensorProto file (`input_0.pb` of the ONNX test layout).
Expected<Tensor> read_tensor_pb(const std::string& path, std::string* name = nullptr);

// Reads a test-data file holding a value of `kind`: a TensorProto, or a
// SequenceProto / OptionalProto (onnx-data.proto) of tensors or sequences.
Expected<Tensor> read_value_pb(const std::string& path, Tensor::Kind kind);

}  // namespace quant::io
