#include "libquant/core/dtype.h"

namespace quant {

std::optional<DType> dtype_from_onnx(int onnx_type) {
  switch (onnx_type) {
#define QT_DTYPE_FROM(name, num, ctype, size, str) \
  case num:                                        \
    return DType::name;
    QT_DTYPES(QT_DTYPE_FROM)
#undef QT_DTYPE_FROM
    case 8:
      return DType::String;
    default:
      return std::nullopt;
  }
}

std::optional<DType> dtype_from_name(std::string_view name) {
#define QT_DTYPE_BY_NAME(n, num, ctype, size, str) \
  if (name == str) return DType::n;
  QT_DTYPES(QT_DTYPE_BY_NAME)
#undef QT_DTYPE_BY_NAME
  if (name == "string") return DType::String;
  return std::nullopt;
}

std::optional<IntRange> int_range(DType t) {
  switch (t) {
    case DType::UInt8: return IntRange{0, 255};
    case DType::Int8: return IntRange{-128, 127};
    case DType::UInt16: return IntRange{0, 65535};
    case DType::Int16: return IntRange{-32768, 32767};
    case DType::Int32: return IntRange{INT32_MIN, INT32_MAX};
    case DType::UInt4: return IntRange{0, 15};
    case DType::Int4: return IntRange{-8, 7};
    default: return std::nullopt;
  }
}

}  // namespace quant
