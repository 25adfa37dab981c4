// Calls a generic lambda with a value of the C++ type that stores a DType, so
// that one kernel body serves every element type the spec allows:
//   return dispatch_dtype(t.dtype(), [&](auto tag) { using T = decltype(tag); ... });
#pragma once

#include <cstdint>
#include <string>

#include "libquant/core/dtype.h"
#include "libquant/core/status.h"

namespace quant::interp {

// Numeric types with arithmetic (no float16/bfloat16/bool).
template <class F>
Status dispatch_numeric(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Int8: return f(int8_t{});
    case DType::UInt8: return f(uint8_t{});
    case DType::Int16: return f(int16_t{});
    case DType::UInt16: return f(uint16_t{});
    case DType::Int32: return f(int32_t{});
    case DType::UInt32: return f(uint32_t{});
    case DType::Int64: return f(int64_t{});
    case DType::UInt64: return f(uint64_t{});
    default: return Status::bad_input("element type " + std::string(dtype_name(t)) + " is not supported here");
  }
}

// Float types only.
template <class F>
Status dispatch_float(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    default: return Status::bad_input("element type " + std::string(dtype_name(t)) + " is not supported here (float only)");
  }
}

}  // namespace quant::interp
