// qrun --sensitivity: how much each quantized layer costs the model's output.
// For every layer of the QDQ model (passes/quant_points.h) two variants are
// built from the model file and run on the samples, each a full model run
// (method "full-run"):
//  - only this layer quantized (every other layer made float), and
//  - only this layer float (every other layer quantized),
// and each variant's outputs are compared with the float reference's
// (ErrorStats over every float output, top-1 agreement on output 0). Layers
// are ranked most sensitive first: lowest SNR with only the layer quantized.
// A third number per layer costs no full run (method "layer-alone",
// tune/layer_alone.h): the layer alone on the reference's float inputs.
// Float weights for a layer made float come from the reference model (node
// of the same name); a layer whose constants have no float twin keeps them
// quantized, and the result says how many.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "libquant/interp/compare.h"
#include "libquant/interp/session.h"
#include "libquant/io/dataset.h"
#include "libquant/tune/evaluate.h"
#include "libquant/tune/run_setup.h"

namespace qtool {

using VariantScore = quant::tune::Score;

struct LayerSensitivity {
  std::string node;  // the layer's node name (its op type and position when unnamed)
  std::string op_type;
  int order = 0;     // position among the layers, in execution order
  VariantScore only_quantized, only_float;
  // Method "layer-alone": the layer run alone on the reference's float
  // inputs (tune/layer_alone.h), its output vs the reference's; or why not.
  quant::interp::ErrorStats alone;
  std::string alone_skipped;
  int kept_constants = 0;  // constants left quantized in the "only float" variant (no float twin)
};

struct SensitivityResult {
  VariantScore all_quantized;            // the model as given
  std::vector<LayerSensitivity> layers;  // most sensitive first
  std::string method = "full-run";
  int64_t samples = 0;
  int64_t model_runs = 0;
};

struct SensitivityInputs {
  std::string model_path;                     // the quantized (QDQ) model, reloaded per variant
  const quant::ir::Graph* reference = nullptr;
  std::vector<quant::io::SampleSource> samples;
  std::vector<std::string> input_names;
  quant::tune::RunSetup setup;  // how qrun runs the tested model (its target)
  bool quiet = false;
};

quant::Expected<SensitivityResult> measure_sensitivity(const SensitivityInputs& in);

void print_sensitivity(const SensitivityResult& r);
nlohmann::json sensitivity_json(const SensitivityResult& r);

}  // namespace qtool
