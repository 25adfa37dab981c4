#include "libquant/core/tensor.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <new>

namespace quant {

int64_t element_count(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string dims_to_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

void Tensor::AlignedFree::operator()(std::byte* p) const { std::free(p); }

Tensor::Tensor(DType dtype, Dims shape) : dtype_(dtype), shape_(std::move(shape)) {
  size_ = element_count(shape_);
  assert(size_ >= 0);
  // Round the allocation up to the alignment, as aligned_alloc requires; never 0 bytes.
  size_t bytes = (byte_size() + 63) / 64 * 64;
  if (bytes == 0) bytes = 64;
  auto* p = static_cast<std::byte*>(std::aligned_alloc(64, bytes));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  data_.reset(p);
}

Tensor::Tensor(const Tensor& other) : Tensor(other.dtype_, other.shape_) {
  if (other.data_) std::memcpy(data_.get(), other.data_.get(), byte_size());
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

void Tensor::reshape(Dims shape) {
  assert(element_count(shape) == size_);
  shape_ = std::move(shape);
}

double Tensor::as_double(int64_t i) const {
  switch (dtype_) {
    case DType::Float32: return data<float>()[i];
    case DType::Float64: return data<double>()[i];
    case DType::UInt8: case DType::Bool: case DType::UInt4: return data<uint8_t>()[i];
    case DType::Int8: case DType::Int4: return data<int8_t>()[i];
    case DType::UInt16: return data<uint16_t>()[i];
    case DType::Int16: return data<int16_t>()[i];
    case DType::Int32: return data<int32_t>()[i];
    case DType::Int64: return static_cast<double>(data<int64_t>()[i]);
    case DType::UInt32: return data<uint32_t>()[i];
    case DType::UInt64: return static_cast<double>(data<uint64_t>()[i]);
    default: assert(false && "as_double on an unsupported dtype"); return 0;
  }
}

int64_t Tensor::as_int64(int64_t i) const {
  switch (dtype_) {
    case DType::Int64: return data<int64_t>()[i];
    case DType::UInt64: return static_cast<int64_t>(data<uint64_t>()[i]);
    case DType::Float32: case DType::Float64: return static_cast<int64_t>(as_double(i));
    default: return static_cast<int64_t>(as_double(i));
  }
}

}  // namespace quant
