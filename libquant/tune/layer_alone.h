// Each quantized layer run alone on the float model's own inputs (method
// "layer-alone"): the noise a layer adds by itself, measured with one float
// pass per sample instead of a full model run per layer.
//
// For a layer of the QDQ model (passes/quant_points.h) its mini model holds
// the Q/DQ pairs on its activation inputs, its dequantized constants, the
// layer, a fused Relu/Clip after it and the Q/DQ on its output; it reads the
// float tensors the reference computes under the same names (qconvert keeps
// float names) and its output is compared with the reference's tensor of the
// name its output Q quantizes. The mini models are lowered and run as the
// target computes (tune/run_setup.h). A layer whose inputs or output have no
// float twin in the reference is skipped, with the reason.
//
// Per sample: run the reference with reference_observer() (fusion off, so
// every value is seen), then end_sample().
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "libquant/interp/compare.h"
#include "libquant/tune/run_setup.h"

namespace quant::tune {

class LayerAlone {
 public:
  struct Layer {
    std::string node;     // name (op type and index when unnamed)
    std::string op_type;
    int order = 0;        // among the layers, in execution order
    std::string skipped;  // why it could not be measured; empty when measured
    std::vector<std::string> members;  // names of the layer's node and of a Relu/Clip fused after it
    interp::ErrorStats stats;
  };

  static Expected<std::unique_ptr<LayerAlone>> create(const ir::Graph& quantized, const ir::Graph& reference,
                                                     const RunSetup& setup);

  interp::Observer reference_observer();
  Status end_sample();
  const std::vector<Layer>& layers() const { return layers_; }

 private:
  struct Mini {
    size_t layer = 0;
    Prepared run;
    std::vector<std::string> inputs;  // reference tensor names, in the mini model's input order
    std::string twin;                 // the reference tensor its output stands for
  };
  std::vector<Layer> layers_;
  std::vector<Mini> minis_;
  std::set<std::string> wanted_;
  std::map<std::string, Tensor> cache_;
};

}  // namespace quant::tune
