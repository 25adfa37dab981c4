// Error metrics between a tested tensor and its reference (quantized vs float):
// what `qrun --reference` prints and gates on.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"
#include "libquant/interp/session.h"
#include "libquant/ir/graph.h"

namespace quant::interp {

// Accumulates over any number of tensor pairs (samples, outputs).
//
// A NaN or Inf in either tensor leaves the error undefined: every metric is
// then NaN, and gates must be written so that NaN fails them (`!(snr >= min)`,
// not `snr < min`, which is false for NaN and would pass a model whose every
// output is NaN).
class ErrorStats {
 public:
  // Both tensors must be float32 of the same shape.
  Status add(const Tensor& reference, const Tensor& tested);

  int64_t count() const { return count_; }
  // Elements where the reference or the tested value is NaN or +-Inf.
  int64_t nonfinite() const { return nonfinite_; }
  // 10 log10(sum ref^2 / sum (tested-ref)^2); +inf when identical.
  double snr_db() const;
  // Cosine similarity of the flattened tensors; 1 when both are zero.
  double cosine() const;
  double max_abs_error() const;
  double mean_abs_error() const;

 private:
  double signal_ = 0, noise_ = 0, dot_ = 0, ref_norm2_ = 0, test_norm2_ = 0, max_abs_ = 0, sum_abs_ = 0;
  int64_t count_ = 0, nonfinite_ = 0;
};

// Number of NaN or +-Inf values of a float32 tensor (0 for other types).
int64_t count_nonfinite(const Tensor& t);

// Index of the largest value of each row along the last axis (first on ties):
// the top-1 class per row of a [..., classes] tensor. A row holding a NaN has
// no top-1: -1, which equals no label and, in agreement, no other row's class.
std::vector<int64_t> argmax_rows(const Tensor& scores);
// Whether `label` is among the k largest values of `row`; never for a row
// holding a NaN.
bool in_top_k(const float* row, int64_t classes, int64_t label, int k);

// An integer tensor of the tested model that stands for a float tensor of the
// reference: real = scale * (q - zero_point). (passes::find_quantized_tensors
// lists them; interp/ does not depend on passes/.)
struct QuantizedTwin {
  std::string name;
  std::string float_name;
  float scale = 1;
  int32_t zero_point = 0;
};

// Per-layer comparison (qrun --reference --per-layer): pairs the tensors a
// tested (quantized) model computes with their float twins in the reference
// model through the Session observers, and accumulates ErrorStats per pair
// over all samples. Pairing: an integer tensor listed in `twins` is
// dequantized and compared with its float twin; a float tensor pairs with the
// reference tensor of the same name (qconvert keeps float names), unless an
// integer tensor already stands for that name (what the next layer reads is
// the quantized value). Graph inputs and constants are not compared; pairs
// whose shapes differ are counted in `skipped`.
//
// Range clipping: for an integer tensor, the reference's values that fall
// outside the range its type represents, [scale * (qmin - zero_point),
// scale * (qmax - zero_point)], are counted: the float values quantization
// saturates (a range calibrated too narrow).
//
// Per sample: run the reference with reference_observer() first (it keeps
// only the tensors some pair needs), then the tested model with
// tested_observer(), then end_sample().
class LayerComparison {
 public:
  LayerComparison(const ir::Graph& tested, const ir::Graph& reference, const std::vector<QuantizedTwin>& twins);

  Observer reference_observer();
  Observer tested_observer();
  void end_sample() { reference_tensors_.clear(); }

  struct Layer {
    std::string tensor;     // in the tested model
    std::string reference;  // its twin in the reference model
    bool dequantized = false;
    int order = 0;          // position in the tested model's execution
    ErrorStats stats;
    // Dequantized pairs: the real range of the integer tensor and how many
    // reference values lie outside it. NaN bounds for float pairs.
    double range_min = std::numeric_limits<double>::quiet_NaN();
    double range_max = std::numeric_limits<double>::quiet_NaN();
    int64_t clipped = 0;
    // The share of compared reference values outside the range (0 for float pairs).
    double clipped_share() const { return stats.count() ? static_cast<double>(clipped) / static_cast<double>(stats.count()) : 0; }
  };
  // Called with every pair as it is compared: the layer so far, the
  // reference tensor and the tested one in real values (dequantized), both
  // float32 of one shape. For reports that want more than the ErrorStats
  // (qrun --html keeps histograms of both).
  using PairHook = std::function<void(const Layer& layer, const Tensor& reference, const Tensor& tested)>;
  void set_pair_hook(PairHook hook) { pair_hook_ = std::move(hook); }
  // Pairs seen so far, worst SNR first (ties: execution order).
  std::vector<Layer> by_snr() const;
  int64_t skipped() const { return skipped_; }

 private:
  void observe_tested(const ir::Value& value, const Tensor& tensor);

  std::unordered_map<std::string, QuantizedTwin> twins_;  // by tested name
  std::set<std::string> wanted_;                          // reference names some pair reads
  std::set<std::string> covered_;                         // reference names an integer twin stands for
  std::set<std::string> skip_;                            // tested graph inputs
  std::map<std::string, Tensor> reference_tensors_;       // this sample's
  std::map<std::string, Layer> layers_;
  int next_order_ = 0;
  int64_t skipped_ = 0;
  PairHook pair_hook_;
};

}  // namespace quant::interp
