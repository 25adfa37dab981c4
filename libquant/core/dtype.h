// Element types, numbered as ONNX TensorProto.DataType numbers them so that
// import/export is a cast, not a table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace quant {

// X(enum name, ONNX number, C++ storage type, size in bytes, printable name)
// Storage for Bool is one byte per element; Float16/BFloat16 are kept as raw
// uint16 bits (no arithmetic on them yet). Int4/UInt4 are stored unpacked, one
// value per byte, and packed only when written to ONNX (opset 21 packing).
#define QT_DTYPES(X)                                  \
  X(Float32, 1, float, 4, "float32")                  \
  X(UInt8, 2, uint8_t, 1, "uint8")                    \
  X(Int8, 3, int8_t, 1, "int8")                       \
  X(UInt16, 4, uint16_t, 2, "uint16")                 \
  X(Int16, 5, int16_t, 2, "int16")                    \
  X(Int32, 6, int32_t, 4, "int32")                    \
  X(Int64, 7, int64_t, 8, "int64")                    \
  X(Bool, 9, uint8_t, 1, "bool")                      \
  X(Float16, 10, uint16_t, 2, "float16")              \
  X(Float64, 11, double, 8, "float64")                \
  X(UInt32, 12, uint32_t, 4, "uint32")                \
  X(UInt64, 13, uint64_t, 8, "uint64")                \
  X(BFloat16, 16, uint16_t, 2, "bfloat16")            \
  X(UInt4, 21, uint8_t, 1, "uint4")                   \
  X(Int4, 22, int8_t, 1, "int4")

enum class DType : int {
  Undefined = 0,
#define QT_DTYPE_ENUM(name, num, ctype, size, str) name = num,
  QT_DTYPES(QT_DTYPE_ENUM)
#undef QT_DTYPE_ENUM
  // ONNX STRING: the elements are std::string, which a Tensor keeps apart
  // from its bytes (Tensor::string_values); size 0 here, no arithmetic on them.
  String = 8,
};

constexpr size_t dtype_size(DType t) {
  switch (t) {
#define QT_DTYPE_SIZE(name, num, ctype, size, str) \
  case DType::name:                                \
    return size;
    QT_DTYPES(QT_DTYPE_SIZE)
#undef QT_DTYPE_SIZE
    case DType::Undefined:
    case DType::String:
      return 0;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
#define QT_DTYPE_NAME(name, num, ctype, size, str) \
  case DType::name:                                \
    return str;
    QT_DTYPES(QT_DTYPE_NAME)
#undef QT_DTYPE_NAME
    case DType::String:
      return "string";
    case DType::Undefined:
      return "undefined";
  }
  return "undefined";
}

// The DType of an ONNX TensorProto.DataType number, if qtool knows it.
std::optional<DType> dtype_from_onnx(int onnx_type);
std::optional<DType> dtype_from_name(std::string_view name);

template <class T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::UInt8; }
template <> constexpr DType dtype_of<int8_t>() { return DType::Int8; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::UInt16; }
template <> constexpr DType dtype_of<int16_t>() { return DType::Int16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::UInt32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::UInt64; }

constexpr bool is_float(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}

// Integer range of a quantized type; used by quantization and saturation.
struct IntRange {
  int64_t min;
  int64_t max;
};
std::optional<IntRange> int_range(DType t);

}  // namespace quant
