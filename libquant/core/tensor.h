// A dense, row-major tensor over 64-byte aligned storage: owned, or a mapped
// region of a model's external data file (weights, read on first touch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "libquant/core/dtype.h"
#include "libquant/core/mapped_file.h"
#include "libquant/core/status.h"

namespace quant {

using Dims = std::vector<int64_t>;

// Product of dims; 1 for a scalar (rank 0). Dims must be known to be sane
// (shapes of tensors that exist); untrusted shapes go through checked_element_count.
int64_t element_count(std::span<const int64_t> dims);
std::string dims_to_string(std::span<const int64_t> dims);

// The central guard against hostile shapes (models, .npy/.pb headers, shape
// arithmetic of kernels): the element count of `dims`, or bad_input when a dim
// is negative or the product overflows int64. The message has no context; the
// caller prefixes the file / node.
Expected<int64_t> checked_element_count(std::span<const int64_t> dims);

// The largest tensor qtool will allocate, in bytes: the smaller of 16 GiB and
// the machine's physical memory, so that a declared size that could never fit
// is refused before allocating instead of ending in the OOM killer.
// set_max_tensor_bytes lowers it (fuzz targets, tests); 0 restores the default.
int64_t max_tensor_bytes();
void set_max_tensor_bytes(int64_t bytes);

// Tensor buffers allocated so far by this process (every thread): what
// tests read to show that steady-state runs allocate nothing.
int64_t tensor_allocations();

// Checks that a tensor of `dtype` and `dims` may be allocated: dims >= 0, no
// overflow, at most max_tensor_bytes(). bad_input naming the shape otherwise.
Status check_tensor_size(DType dtype, std::span<const int64_t> dims);

class Tensor {
 public:
  // What a value holds: a tensor, or one of ONNX's non-tensor types, a
  // sequence of tensors (opset 11) or an optional (opset 15) holding a tensor,
  // a sequence or nothing. The interpreter carries all three in the same
  // value slots; a sequence or optional has no dtype, shape or data of its own.
  enum class Kind : uint8_t { Tensor, Sequence, Optional };
  // A sequence whose tensors all have element type `elem` (kept for an empty one).
  static Tensor sequence(DType elem, std::vector<Tensor> items);
  // An optional holding `value`, or nothing.
  static Tensor optional(std::optional<Tensor> value);
  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  // A sequence's tensors, or an optional's value (none or one); empty for a tensor.
  const std::vector<Tensor>& items() const;
  // The element type of a sequence's tensors (Undefined for a tensor or an optional).
  DType elem_dtype() const { return elem_dtype_; }
  // A string tensor (DType::String) of `shape` holding `values` in row-major order.
  static Tensor strings(Dims shape, std::vector<std::string> values);
  // The elements of a string tensor; empty for other types.
  const std::vector<std::string>& string_values() const;

  Tensor() = default;
  // Zero-filled tensor of the given type and shape; the shape must be sane
  // (asserted). Shapes that come from user input use create().
  Tensor(DType dtype, Dims shape);
  // As the constructor, but a shape that check_tensor_size refuses is bad_input.
  static Expected<Tensor> create(DType dtype, Dims shape);
  // A tensor whose bytes are `region` (little endian, one element per
  // dtype_size, so neither Bool, String nor the int4 types); the region's
  // length must be the byte size and its data 64-byte aligned (asserted).
  // Copies of it own their bytes; moves keep the mapping.
  static Tensor mapped(DType dtype, Dims shape, std::shared_ptr<const MappedRegion> region);
  // The mapped region holding the bytes, or nullptr when they are owned.
  const MappedRegion* mapping() const { return mapped_.get(); }
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;

  template <class T>
  static Tensor from_vector(Dims shape, const std::vector<T>& values) {
    Tensor t(dtype_of<T>(), std::move(shape));
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }
  template <class T>
  static Tensor scalar(T value) {
    return from_vector<T>({}, {value});
  }

  DType dtype() const { return dtype_; }
  const Dims& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t size() const { return size_; }
  size_t byte_size() const { return static_cast<size_t>(size_) * dtype_size(dtype_); }
  // No value at all (an omitted optional input); a sequence or optional is not empty.
  bool empty() const { return dtype_ == DType::Undefined && kind_ == Kind::Tensor; }

  // Same bytes, new shape with the same element count (Reshape).
  void reshape(Dims shape);

  // Bytes this tensor may hold without allocating: those it owns or borrows
  // (a view), 0 for a mapped, string, sequence or optional value.
  size_t capacity() const { return capacity_; }
  // Whether capacity() bytes are this tensor's own (not a view's or a mapping's).
  bool owns_bytes() const { return data_ != nullptr && capacity_ > 0; }
  // Whether `count` elements of `dtype` fit in capacity() (never for strings).
  bool can_hold(DType dtype, int64_t count) const;
  // This tensor's bytes as a tensor of `dtype` and `shape`, contents stale;
  // can_hold(dtype, element count of shape) must be true (asserted).
  void reuse(DType dtype, Dims shape);
  // A tensor over this one's bytes from `offset` on (UInt8, capacity() -
  // offset of them, at most `limit` when limit > 0; none when offset reaches
  // capacity()) that owns nothing:
  // the Session's planned buffers reach kernels this way (interp/output.h),
  // so that a kernel that makes its own output tensor leaves the buffer in
  // place. It must not outlive this tensor; copies of it own their bytes,
  // moves keep borrowing.
  Tensor view(size_t offset = 0, size_t limit = 0);

  // Non-const access to a mapped tensor marks its region as maybe written
  // (MappedRegion::note_write), so that its pages are never given back.
  void* raw() {
    if (mapped_) mapped_->note_write();
    return bytes_;
  }
  const void* raw() const { return bytes_; }
  template <class T>
  T* data() { return static_cast<T*>(raw()); }
  template <class T>
  const T* data() const { return static_cast<const T*>(raw()); }
  template <class T>
  std::span<const T> values() const { return {data<T>(), static_cast<size_t>(size_)}; }
  template <class T>
  std::span<T> values() { return {data<T>(), static_cast<size_t>(size_)}; }

  // Value i converted to double / int64, whatever the storage type
  // (for attributes-as-inputs such as Reshape's shape or Clip's min).
  double as_double(int64_t i) const;
  int64_t as_int64(int64_t i) const;

 private:
  struct AlignedFree {
    void operator()(std::byte* p) const;
  };
  DType dtype_ = DType::Undefined;
  Dims shape_;
  int64_t size_ = 0;
  std::unique_ptr<std::byte[], AlignedFree> data_;
  std::shared_ptr<const MappedRegion> mapped_;  // the bytes when data_ is null
  std::byte* bytes_ = nullptr;                  // data_.get() or mapped_->data(), or borrowed (view)
  size_t capacity_ = 0;                         // bytes at bytes_ this tensor may write: see capacity()
  Kind kind_ = Kind::Tensor;
  DType elem_dtype_ = DType::Undefined;
  std::shared_ptr<const std::vector<Tensor>> items_;  // immutable once made: copies share it
  std::shared_ptr<const std::vector<std::string>> strings_;  // DType::String elements, shared likewise
};

// "float32 [2,3]", "sequence of 2 float32 tensors", "optional (empty)": for messages.
std::string describe_value(const Tensor& t);

// Quantization parameters attached to a tensor: real = scale * (q - zero_point).
// Per-tensor when scale has one element; per-channel along `axis` otherwise;
// with block_size > 0, one scale per block of `block_size` along `axis`.
struct QuantParams {
  DType qtype = DType::UInt8;
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
  int64_t axis = 1;
  int64_t block_size = 0;
  bool per_tensor() const { return scale.size() == 1; }
};

}  // namespace quant
