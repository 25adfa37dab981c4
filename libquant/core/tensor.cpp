#include "libquant/core/tensor.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "libquant/core/aligned_memory.h"

namespace quant {

int64_t element_count(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d == 0) return 0;  // before any product: the other dims may be large
    n *= d;
  }
  return n;
}

Expected<int64_t> checked_element_count(std::span<const int64_t> dims) {
  // The product of the non-zero dims must fit too, even when a zero dim makes
  // the tensor empty: kernels multiply dims in any grouping (outer * inner ...).
  int64_t n = 1;
  bool zero = false;
  for (int64_t d : dims) {
    if (d < 0) return Status::bad_input("shape " + dims_to_string(dims) + " has a negative dimension");
    if (d == 0) {
      zero = true;
      continue;
    }
    if (n > INT64_MAX / d) return Status::bad_input("shape " + dims_to_string(dims) + " has more elements than fit in 64 bits");
    n *= d;
  }
  return zero ? int64_t{0} : n;
}

namespace {

constexpr int64_t kHardTensorLimit = int64_t{16} << 30;
std::atomic<int64_t> g_tensor_limit{0};  // 0: the default

int64_t default_tensor_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return kHardTensorLimit;
  const int64_t phys = static_cast<int64_t>(pages) * static_cast<int64_t>(page);
  return std::min(kHardTensorLimit, phys);
}

}  // namespace

int64_t max_tensor_bytes() {
  const int64_t set = g_tensor_limit.load(std::memory_order_relaxed);
  if (set > 0) return set;
  static const int64_t kDefault = default_tensor_limit();
  return kDefault;
}

void set_max_tensor_bytes(int64_t bytes) { g_tensor_limit.store(bytes > 0 ? bytes : 0, std::memory_order_relaxed); }

Status check_tensor_size(DType dtype, std::span<const int64_t> dims) {
  QT_ASSIGN_OR_RETURN(int64_t n, checked_element_count(dims));
  const int64_t item = static_cast<int64_t>(std::max<size_t>(dtype_size(dtype), 1));
  const int64_t limit = max_tensor_bytes();
  if (n > limit / item) {
    return Status::bad_input("shape " + dims_to_string(dims) + " " + std::string(dtype_name(dtype)) + " needs more than " +
                             std::to_string(limit >> 20) + " MiB, the most qtool allocates for one tensor");
  }
  return Status::ok();
}

std::string dims_to_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

namespace {
std::atomic<int64_t> g_allocations{0};
}  // namespace

int64_t tensor_allocations() { return g_allocations.load(std::memory_order_relaxed); }

void Tensor::AlignedFree::operator()(std::byte* p) const { std::free(p); }

Tensor::Tensor(DType dtype, Dims shape) : dtype_(dtype), shape_(std::move(shape)) {
  size_ = element_count(shape_);
  assert(size_ >= 0);
  const size_t bytes = aligned_size(byte_size());
  auto* p = static_cast<std::byte*>(allocate_aligned(bytes));
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  std::memset(p, 0, bytes);
  data_.reset(p);
  bytes_ = p;
  capacity_ = dtype_ == DType::String || dtype_ == DType::Undefined ? 0 : bytes;
  if (dtype_ == DType::String) strings_ = std::make_shared<const std::vector<std::string>>(static_cast<size_t>(size_));
}

Expected<Tensor> Tensor::create(DType dtype, Dims shape) {
  QT_RETURN_IF_ERROR(check_tensor_size(dtype, shape));
  return Tensor(dtype, std::move(shape));
}

Tensor Tensor::mapped(DType dtype, Dims shape, std::shared_ptr<const MappedRegion> region) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.size_ = element_count(t.shape_);
  assert(dtype != DType::Bool && dtype != DType::String && dtype != DType::Int4 && dtype != DType::UInt4);
  assert(region && region->length() == static_cast<int64_t>(t.byte_size()));
  assert(reinterpret_cast<uintptr_t>(region->data()) % 64 == 0 || t.byte_size() == 0);
  t.mapped_ = std::move(region);
  t.bytes_ = t.mapped_->data();
  return t;
}

Tensor::Tensor(Tensor&& other) noexcept
    : dtype_(other.dtype_),
      shape_(std::move(other.shape_)),
      size_(other.size_),
      data_(std::move(other.data_)),
      mapped_(std::move(other.mapped_)),
      bytes_(std::exchange(other.bytes_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      kind_(other.kind_),
      elem_dtype_(other.elem_dtype_),
      items_(std::move(other.items_)),
      strings_(std::move(other.strings_)) {}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    dtype_ = other.dtype_;
    shape_ = std::move(other.shape_);
    size_ = other.size_;
    data_ = std::move(other.data_);
    mapped_ = std::move(other.mapped_);
    bytes_ = std::exchange(other.bytes_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    kind_ = other.kind_;
    elem_dtype_ = other.elem_dtype_;
    items_ = std::move(other.items_);
    strings_ = std::move(other.strings_);
  }
  return *this;
}

Tensor::Tensor(const Tensor& other) : Tensor(other.dtype_, other.shape_) {
  if (other.raw()) std::memcpy(data_.get(), other.raw(), byte_size());
  kind_ = other.kind_;
  elem_dtype_ = other.elem_dtype_;
  items_ = other.items_;
  strings_ = other.strings_;
}

Tensor Tensor::strings(Dims shape, std::vector<std::string> values) {
  Tensor t(DType::String, std::move(shape));
  assert(static_cast<int64_t>(values.size()) == t.size());
  t.strings_ = std::make_shared<const std::vector<std::string>>(std::move(values));
  return t;
}

const std::vector<std::string>& Tensor::string_values() const {
  static const std::vector<std::string> kNone;
  return strings_ ? *strings_ : kNone;
}

Tensor Tensor::sequence(DType elem, std::vector<Tensor> items) {
  Tensor t;
  t.kind_ = Kind::Sequence;
  t.elem_dtype_ = elem;
  t.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return t;
}

Tensor Tensor::optional(std::optional<Tensor> value) {
  Tensor t;
  t.kind_ = Kind::Optional;
  std::vector<Tensor> items;
  if (value) items.push_back(std::move(*value));
  t.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return t;
}

const std::vector<Tensor>& Tensor::items() const {
  static const std::vector<Tensor> kNone;
  return items_ ? *items_ : kNone;
}

std::string describe_value(const Tensor& t) {
  switch (t.kind()) {
    case Tensor::Kind::Tensor:
      return t.empty() ? std::string("no value") : std::string(dtype_name(t.dtype())) + " " + dims_to_string(t.shape());
    case Tensor::Kind::Sequence:
      return "sequence of " + std::to_string(t.items().size()) + " " + std::string(dtype_name(t.elem_dtype())) + " tensors";
    case Tensor::Kind::Optional:
      return t.items().empty() ? std::string("optional (empty)") : "optional of " + describe_value(t.items()[0]);
  }
  return "";
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

void Tensor::reshape(Dims shape) {
  assert(element_count(shape) == size_);
  shape_ = std::move(shape);
}

bool Tensor::can_hold(DType dtype, int64_t count) const {
  if (kind_ != Kind::Tensor || dtype == DType::String || dtype == DType::Undefined || count < 0) return false;
  const size_t element = dtype_size(dtype);
  return element > 0 && static_cast<uint64_t>(count) <= capacity_ / element;
}

void Tensor::reuse(DType dtype, Dims shape) {
  const int64_t count = element_count(shape);
  assert(can_hold(dtype, count));
  dtype_ = dtype;
  shape_ = std::move(shape);
  size_ = count;
}

Tensor Tensor::view(size_t offset, size_t limit) {
  Tensor t;
  if (offset >= capacity_) return t;
  const size_t bytes = limit > 0 ? std::min(limit, capacity_ - offset) : capacity_ - offset;
  t.dtype_ = DType::UInt8;
  t.size_ = static_cast<int64_t>(bytes);
  t.shape_ = {t.size_};
  t.bytes_ = bytes_ + offset;
  t.capacity_ = bytes;
  return t;
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
