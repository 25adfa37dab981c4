// --data / --input / --limit handling shared by qprofile and qrun, plus the
// image, --batch and --shard flags that qprofile adds (DESIGN "Inputs").
#pragma once


#include <string>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"
#include "libquant/io/batch.h"
#include "libquant/io/dataset.h"
#include "libquant/io/image.h"
#include "libquant/ir/graph.h"

namespace CLI {
class App;  // CLI11: only references here; CLI/CLI.hpp costs ~8 s of -O2 per translation unit
}  // namespace CLI

namespace qtool {

struct DataFlags {
  std::vector<std::string> dirs;    // --data DIR (repeatable)
  std::vector<std::string> inputs;  // --input NAME=FILE (one sample)
  size_t limit = 0;                 // --limit N (0: all)
  // Image preprocessing (add_image_flags).
  std::string image_size, mean, std, layout = "nchw", channels = "rgb";
  // add_batch_flags.
  size_t batch = 1;
  std::string shard;  // "I/N", empty: everything
};

void add_data_flags(CLI::App& app, DataFlags& flags);
void add_image_flags(CLI::App& app, DataFlags& flags);
void add_batch_flags(CLI::App& app, DataFlags& flags);

// Every sample the flags name, in order (--limit first, then --shard); an error if there is none.
// A model without inputs takes sample folders that hold no input file (io::DatasetOptions).
quant::Expected<std::vector<quant::io::SampleSource>> collect_samples(const DataFlags& flags, bool model_has_inputs = true);

// Class labels (--labels): an int64 or int32 .npy, one per row of output 0.
quant::Expected<std::vector<int64_t>> read_labels(const std::string& path);

// Samples grouped into model runs: one run per --batch samples, stacked along dim 0.
// Loading is const and touches no shared state, so several threads may load runs at once.
class DataReader {
 public:
  // Checks the flags against the model: --batch > 1 needs every input's dim 0 to be
  // dynamic; images without --image-size take H and W from the model's input shape.
  static quant::Expected<DataReader> create(const DataFlags& flags, const quant::ir::Graph& graph,
                                            const std::string& model_path);

  size_t samples() const { return samples_.size(); }
  size_t runs() const { return (samples_.size() + batch_ - 1) / batch_; }
  size_t samples_in_run(size_t run) const { return std::min(batch_, samples_.size() - run * batch_); }
  // Inputs of run `run`, in the order of graph.inputs.
  quant::Expected<std::vector<quant::Tensor>> load(size_t run) const;
  // "sample 0003" or "samples 0004..0007", for error context.
  std::string describe(size_t run) const;
  // The file that holds input `input` (index in graph.inputs) of the k-th
  // sample of run `run`, or the sample's name when no single file does.
  std::string file_of(size_t run, size_t k, size_t input) const;

 private:
  std::vector<quant::io::SampleSource> samples_;
  std::vector<std::string> input_names_;
  quant::io::ImageOptions image_;
  size_t batch_ = 1;
};

}  // namespace qtool
