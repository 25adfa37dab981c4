// --data directories (DESIGN "Inputs"): listing the samples of a directory, then loading one sample's tensors at a time so that
// profiling memory stays flat in the number of samples.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"
#include "libquant/io/image.h"

namespace quant::io {

struct SampleSource {
  std::string stem;  // file name without .npy, or the sample folder's name
  // (input name, or "#k" for the model's k-th input; path)
  std::vector<std::pair<std::string, std::string>> files;
};

struct DatasetOptions {
  size_t limit = 0;  // 0 = all samples
  // For a model without inputs (the ONNX node test test_constant): a sample
  // folder holding no input file is a sample (one run), not an error.
  bool model_has_inputs = true;
};

// Lists the samples of a --data directory, sorted by name (byte order):
//  - a directory of .npy files: one sample per file, files = {{"#0", path}} (single-input models);
//  - a directory of images (is_image_file: png, jpg, bmp, ppm, ...): the same, one image per sample;
//  - a directory of sample folders, each holding `<input-name>.npy` or `input_<k>.pb` files (the ONNX
//    test-data layout, e.g. test_data_set_0/input_0.pb): one sample per folder; output_*.pb are ignored.
// Other files (model.onnx, README, ...) and hidden entries are ignored. A missing directory, an empty
// dataset, a mix of forms, or a sample folder without inputs is an error naming the directory.
Expected<std::vector<SampleSource>> list_samples(const std::string& dir, const DatasetOptions& options);

// Loads one sample's tensors in `input_names` order; "#k" binds to input_names[k], a named file must
// match one of input_names, every input must be given exactly once. Images are decoded with `image`.
// Errors name the file.
Expected<std::vector<Tensor>> load_sample(const SampleSource& sample, const std::vector<std::string>& input_names,
                                          const ImageOptions& image = {});

}  // namespace quant::io
