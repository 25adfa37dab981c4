// The graph side of SmoothQuant (qconvert --smooth-quant; the maths and its
// source are in calib/smooth_quant.h). On the prepared float graph:
//  - a group is one activation X and the MatMul / Gemm nodes (transA = 0)
//    reading it as their first input with a float32 2-D constant weight of
//    their own; they share one s (their weights' rows are measured together,
//    as the paper does for the Q, K and V projections of one LayerNorm);
//  - s comes from the profile's channel absmax of X (profile version 2) and
//    the weights, with the group's alpha;
//  - X / s is folded into X's producer when it is a LayerNormalization
//    (opset 17, normalizing the last axis) with constant per-channel scale and
//    bias of its own (gamma /= s, beta /= s), or an affine op per channel,
//    Mul(x, c) (c /= s) or Add(Mul(x, c), b) (c /= s, b /= s: the decomposed
//    LayerNorm tail of older exports), and X is no graph output. X's readers
//    outside the group (the residual Add of a post-norm block) then read
//    X / s * s from a float Mul inserted for them: the group reads the smoothed
//    X straight from its producer, the others what they read before;
//  - otherwise a Mul by 1/s (a [K] constant) is inserted before the group, as
//    ONNX Runtime's / INC's smoother does where it cannot fold. The Mul stays
//    float (quantizing it would add a per-tensor step on its outlier input);
//    but X is still quantized where its producer is a quantized op or another
//    reader quantizes it, and that step keeps the outliers: this path gains
//    less than a fold;
//  - each weight's rows are multiplied by s.
// The float function is unchanged up to float32 rounding. The smoothed
// activations (X when folded, the Mul's output otherwise) have new values
// whose per-tensor histograms the profile cannot give; the caller measures
// them again on calibration data (SmoothReport::changed_tensors).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "libquant/calib/smooth_quant.h"
#include "libquant/core/status.h"
#include "libquant/ir/graph.h"
#include "libquant/profile/profile.h"

namespace quant::passes {

struct SmoothGroup {
  ir::Value* input = nullptr;        // X
  std::vector<ir::Node*> layers;     // its MatMul / Gemm readers, in node order
  bool all_readers = false;          // every reader of X is in `layers` (and X is no graph output)
  int64_t channels = 0;              // K
};

// The groups of `graph`, in node order of their first layer.
std::vector<SmoothGroup> find_smooth_groups(const ir::Graph& graph);

// The group's weights as calib::search_alpha reads them.
std::vector<calib::WeightView> group_weights(const SmoothGroup& group);

struct SmoothOptions {
  double alpha = 0.5;
  std::map<std::string, double> alpha_by_input;  // X's name -> alpha (--smooth-quant=auto); others take `alpha`
};

struct SmoothReport {
  struct Layer {
    std::string input;               // X
    std::vector<std::string> nodes;  // the group's layers
    std::string folded_into;         // "LayerNormalization 'name'", "Add 'name'"..., or "" (a Mul was inserted)
    std::string mul;                 // the inserted Mul's name (folded: the one restoring X for other readers, or "")
    double alpha = 0;
    float max_factor = 1;            // max s_j
  };
  std::vector<Layer> layers;
  std::vector<std::string> notes;          // groups left and why
  std::set<std::string> changed_tensors;   // activations to measure again
  std::set<std::string> float_nodes;       // the inserted Muls (kept float)
};

// Smooths every group of `graph` in place. bad_input when `profile` is
// version 1 (no channel absmax); a group whose X has no channel absmax of
// length K in the profile is left with a note.
Expected<SmoothReport> smooth_quant(ir::Graph& graph, const profile::Profile& profile, const SmoothOptions& options,
                                    const std::string& profile_path);

// For --smooth-quant=auto: keeps the first `max_rows` rows (last axis) of
// every group input X seen over a float run (an interp::Observer).
class RowSampler {
 public:
  RowSampler(const ir::Graph& graph, int64_t max_rows);
  void observe(const ir::Value& value, const Tensor& tensor);
  struct Rows {
    int64_t k = 0;
    std::vector<float> values;  // rows * k
    int64_t rows() const { return k ? static_cast<int64_t>(values.size()) / k : 0; }
  };
  const std::map<std::string, Rows>& rows() const { return rows_; }

 private:
  int64_t max_rows_;
  std::map<const ir::Value*, int64_t> inputs_;  // X -> K
  std::map<std::string, Rows> rows_;
};

}  // namespace quant::passes
