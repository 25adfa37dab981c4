// The graph side of empirical bias correction (qconvert --bias-correction; the
// maths and its source are in calib/bias_correction.h):
//  1. on the float graph, InputMeanCollector observes a run over calibration
//     data (an interp::Observer) and sums the inputs of every Conv, Gemm and
//     MatMul with a constant weight, as its weights read them;
//  2. add_missing_biases gives such layers a zero bias before quantization, so
//     that the correction has a bias to go into;
//  3. after insert_qdq, correct_biases folds -(W_q - W) E[x] into each bias:
//     an int32 bias keeps its scale s_in * s_w (DESIGN "Numerics") and is
//     rounded again, a float bias (a target's `bias: float`) is corrected in
//     float; a MatMul's bias is the constant vector an Add adds to its output
//     (float in QDQ form).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "libquant/calib/bias_correction.h"
#include "libquant/core/status.h"
#include "libquant/ir/graph.h"

namespace quant::passes {

class InputMeanCollector {
 public:
  // The Conv (1 to 3 spatial dims, explicit or VALID padding), Gemm and
  // MatMul (2-D weight) nodes of `graph` with a constant float weight and a
  // unique non-empty name.
  explicit InputMeanCollector(const ir::Graph& graph);
  // For interp::Observer: the values those layers read.
  void observe(const ir::Value& value, const Tensor& tensor);
  // Node name -> its input sums (layers never observed are absent).
  const std::map<std::string, calib::InputMeans>& means() const { return means_; }
  // Layers whose input did not fit their geometry (named once each).
  const std::vector<std::string>& skipped() const { return skipped_; }

 private:
  struct Reader {
    std::string node;
    bool gemm = false;
    bool trans_a = false;
    calib::ConvGeometry geometry;
  };
  std::multimap<const ir::Value*, Reader> readers_;
  std::map<std::string, calib::InputMeans> means_;
  std::vector<std::string> skipped_;
};

// Gives every Conv/Gemm named in `layers` that has no bias a zero float32 bias.
void add_missing_biases(ir::Graph& graph, const std::map<std::string, calib::InputMeans>& layers);

// Float weights of the Conv/Gemm/MatMul nodes named in `layers`, by node name (taken
// from the float graph right before quantization).
std::map<std::string, Tensor> float_weights(const ir::Graph& graph, const std::map<std::string, calib::InputMeans>& layers);

// Corrects the bias of every quantized Conv/Gemm/MatMul (+ Add) of `quantized` named in
// `means` whose float weight is in `weights`; one note per layer corrected
// or left.
Status correct_biases(ir::Graph& quantized, const std::map<std::string, Tensor>& weights,
                      const std::map<std::string, calib::InputMeans>& means, std::vector<std::string>& notes);

}  // namespace quant::passes
