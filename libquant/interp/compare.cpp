#include "libquant/interp/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "libquant/kernels/quantize.h"

namespace quant::interp {

Status ErrorStats::add(const Tensor& reference, const Tensor& tested) {
  if (reference.dtype() != DType::Float32 || tested.dtype() != DType::Float32)
    return Status::bad_input("comparison needs float32 outputs");
  if (reference.shape() != tested.shape())
    return Status::bad_input("output shapes differ: reference " + dims_to_string(reference.shape()) + ", tested " +
                             dims_to_string(tested.shape()));
  const float* r = reference.data<float>();
  const float* t = tested.data<float>();
  for (int64_t i = 0; i < reference.size(); ++i) {
    const double a = r[i], b = t[i], e = b - a;
    if (!std::isfinite(a) || !std::isfinite(b)) ++nonfinite_;
    signal_ += a * a;
    noise_ += e * e;
    dot_ += a * b;
    ref_norm2_ += a * a;
    test_norm2_ += b * b;
    max_abs_ = std::max(max_abs_, std::abs(e));
    sum_abs_ += std::abs(e);
  }
  count_ += reference.size();
  return Status::ok();
}

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double ErrorStats::snr_db() const {
  if (nonfinite_) return kNaN;
  if (noise_ == 0) return std::numeric_limits<double>::infinity();
  if (signal_ == 0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal_ / noise_);
}

double ErrorStats::cosine() const {
  if (nonfinite_) return kNaN;
  if (ref_norm2_ == 0 && test_norm2_ == 0) return 1.0;
  if (ref_norm2_ == 0 || test_norm2_ == 0) return 0.0;
  return dot_ / std::sqrt(ref_norm2_ * test_norm2_);
}

// std::max drops a NaN second argument, so max_abs_ alone would read 0 for an
// all-NaN output.
double ErrorStats::max_abs_error() const { return nonfinite_ ? kNaN : max_abs_; }

double ErrorStats::mean_abs_error() const {
  if (nonfinite_) return kNaN;
  return count_ ? sum_abs_ / static_cast<double>(count_) : 0;
}

int64_t count_nonfinite(const Tensor& t) {
  if (t.dtype() != DType::Float32) return 0;
  const float* p = t.data<float>();
  int64_t n = 0;
  for (int64_t i = 0; i < t.size(); ++i) n += !std::isfinite(p[i]);
  return n;
}

std::vector<int64_t> argmax_rows(const Tensor& scores) {
  std::vector<int64_t> out;
  if (scores.dtype() != DType::Float32 || scores.rank() == 0 || scores.size() == 0) return out;
  const int64_t classes = scores.dim(scores.rank() - 1);
  if (classes == 0) return out;
  const float* p = scores.data<float>();
  for (int64_t row = 0; row < scores.size() / classes; ++row) {
    int64_t best = 0;
    for (int64_t c = 0; c < classes && best >= 0; ++c) {
      if (std::isnan(p[row * classes + c])) best = -1;
      else if (p[row * classes + c] > p[row * classes + best]) best = c;
    }
    out.push_back(best);
  }
  return out;
}

bool in_top_k(const float* row, int64_t classes, int64_t label, int k) {
  if (label < 0 || label >= classes) return false;
  int64_t better = 0;
  for (int64_t c = 0; c < classes; ++c) {
    if (std::isnan(row[c])) return false;
    if (row[c] > row[label] || (row[c] == row[label] && c < label)) ++better;
  }
  return better < k;
}

namespace {

// real = scale * (q - zero_point), as DequantizeLinear computes it.
Expected<Tensor> dequantize(const Tensor& q, const QuantizedTwin& twin) {
  Tensor out(DType::Float32, q.shape());
  const float scale = twin.scale;
  auto run = [&](auto tag) {
    using Q = decltype(tag);
    const Q zp = static_cast<Q>(twin.zero_point);
    kernels::dequantize_linear<Q>(q.data<Q>(), out.data<float>(), 1, q.size(), 1, &scale, &zp, 0, 1);
  };
  switch (q.dtype()) {
    case DType::UInt8: run(uint8_t{}); break;
    case DType::Int8: run(int8_t{}); break;
    case DType::UInt16: run(uint16_t{}); break;
    case DType::Int16: run(int16_t{}); break;
    case DType::Int32: run(int32_t{}); break;
    default: return Status::bad_input("tensor '" + twin.name + "' has type " + std::string(dtype_name(q.dtype())) + ", not a quantized type");
  }
  return out;
}

// The reference values outside what the integer type of `twin` represents.
void count_clipped(LayerComparison::Layer& layer, const Tensor& reference, DType type, const QuantizedTwin& twin) {
  const auto limits = int_range(type);
  if (!limits) return;
  const double scale = twin.scale;
  layer.range_min = scale * static_cast<double>(limits->min - twin.zero_point);
  layer.range_max = scale * static_cast<double>(limits->max - twin.zero_point);
  const float* r = reference.data<float>();
  int64_t n = 0;
  for (int64_t i = 0; i < reference.size(); ++i) n += r[i] < layer.range_min || r[i] > layer.range_max;
  layer.clipped += n;
}

}  // namespace

LayerComparison::LayerComparison(const ir::Graph& tested, const ir::Graph& reference, const std::vector<QuantizedTwin>& twins) {
  auto in_reference = [&](const std::string& name) {
    const ir::Value* v = reference.find_value(name);
    return v && !v->is_constant();
  };
  for (const QuantizedTwin& t : twins) {
    if (!in_reference(t.float_name)) continue;
    twins_[t.name] = t;
    wanted_.insert(t.float_name);
    covered_.insert(t.float_name);
  }
  for (const ir::Value* v : tested.inputs) skip_.insert(v->name());
  for (const ir::Value* v : tested.values())
    if (!v->is_constant() && !skip_.count(v->name()) && in_reference(v->name())) wanted_.insert(v->name());
}

Observer LayerComparison::reference_observer() {
  return [this](const ir::Value& value, const Tensor& tensor) {
    if (wanted_.count(value.name()) && tensor.dtype() == DType::Float32) reference_tensors_[value.name()] = tensor;
  };
}

Observer LayerComparison::tested_observer() {
  return [this](const ir::Value& value, const Tensor& tensor) { observe_tested(value, tensor); };
}

void LayerComparison::observe_tested(const ir::Value& value, const Tensor& tensor) {
  const std::string& name = value.name();
  if (skip_.count(name)) return;
  auto twin = twins_.find(name);
  const bool integer = twin != twins_.end();
  const std::string ref_name = integer ? twin->second.float_name : name;
  if (!integer && (covered_.count(name) || tensor.dtype() != DType::Float32)) return;
  auto ref = reference_tensors_.find(ref_name);
  if (ref == reference_tensors_.end()) return;
  auto [it, fresh] = layers_.try_emplace(name);
  Layer& layer = it->second;
  if (fresh) {
    layer.tensor = name;
    layer.reference = ref_name;
    layer.dequantized = integer;
    layer.order = next_order_++;
  }
  Status st;
  if (integer) {
    auto real = dequantize(tensor, twin->second);
    st = real ? layer.stats.add(ref->second, *real) : real.status();
    if (st.is_ok()) {
      count_clipped(layer, ref->second, tensor.dtype(), twin->second);
      if (pair_hook_) pair_hook_(layer, ref->second, *real);
    }
  } else {
    st = layer.stats.add(ref->second, tensor);
    if (st.is_ok() && pair_hook_) pair_hook_(layer, ref->second, tensor);
  }
  if (!st.is_ok()) ++skipped_;
}

std::vector<LayerComparison::Layer> LayerComparison::by_snr() const {
  std::vector<Layer> out;
  for (const auto& [name, layer] : layers_)
    if (layer.stats.count() > 0) out.push_back(layer);
  // A NaN SNR (non-finite values) ranks worst; comparing it with < would
  // break the strict weak ordering std::sort needs.
  std::sort(out.begin(), out.end(), [](const Layer& a, const Layer& b) {
    const double sa = a.stats.snr_db(), sb = b.stats.snr_db();
    if (std::isnan(sa) != std::isnan(sb)) return std::isnan(sa);
    return sa != sb && !std::isnan(sa) ? sa < sb : a.order < b.order;
  });
  return out;
}

}  // namespace quant::interp
