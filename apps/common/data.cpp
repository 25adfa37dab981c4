#include "apps/common/data.h"

#include <CLI/CLI.hpp>

#include "libquant/io/npy.h"

#include <algorithm>

namespace qtool {

void add_data_flags(CLI::App& app, DataFlags& flags) {
  app.add_option("--data", flags.dirs, "dataset directory: .npy files, sample folders or ONNX test-data layout")
      ->check(CLI::ExistingDirectory);
  app.add_option("--input", flags.inputs, "one sample given as NAME=FILE (.npy or .pb); repeat per model input");
  app.add_option("--limit", flags.limit, "read only the first N samples")->check(CLI::NonNegativeNumber);
}

void add_image_flags(CLI::App& app, DataFlags& flags) {
  app.add_option("--image-size", flags.image_size, "resize images to HxW (default: the model input's H and W)");
  app.add_option("--mean", flags.mean, "per-channel mean subtracted from pixel/255, e.g. 0.485,0.456,0.406");
  app.add_option("--std", flags.std, "per-channel std dividing (pixel/255 - mean), e.g. 0.229,0.224,0.225");
  app.add_option("--layout", flags.layout, "image tensor layout: nchw (default) or nhwc");
  app.add_option("--channels", flags.channels, "channel order: rgb (default), bgr or gray");
}

void add_batch_flags(CLI::App& app, DataFlags& flags) {
  app.add_option("--batch", flags.batch, "stack N samples along dim 0 per run (dim 0 must be dynamic)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  app.add_option("--shard", flags.shard, "profile only the I-th of N interleaved parts (0 <= I < N), e.g. 0/4");
}

quant::Expected<std::vector<quant::io::SampleSource>> collect_samples(const DataFlags& flags, bool model_has_inputs) {
  if (flags.dirs.empty() && flags.inputs.empty()) return quant::Status::bad_input("no data: give --data DIR or --input NAME=FILE");
  if (!flags.dirs.empty() && !flags.inputs.empty())
    return quant::Status::bad_input("--data and --input cannot be combined");
  std::vector<quant::io::SampleSource> all;
  if (!flags.inputs.empty()) {
    quant::io::SampleSource one;
    one.stem = "input";
    for (const auto& spec : flags.inputs) {
      auto eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        return quant::Status::bad_input("--input '" + spec + "' is not NAME=FILE");
      one.files.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
    }
    all.push_back(std::move(one));
  } else {
    for (const auto& dir : flags.dirs) {
      quant::io::DatasetOptions opt;
      opt.model_has_inputs = model_has_inputs;
      opt.limit = flags.limit ? flags.limit - std::min(flags.limit, all.size()) : 0;
      if (flags.limit && opt.limit == 0) break;
      QT_ASSIGN_OR_RETURN(auto samples, quant::io::list_samples(dir, opt));
      for (auto& s : samples) all.push_back(std::move(s));
    }
  }
  if (!flags.shard.empty()) {
    QT_ASSIGN_OR_RETURN(auto shard, quant::io::parse_shard(flags.shard));
    all = quant::io::select_shard(all, shard);
    if (all.empty())
      return quant::Status::bad_input("--shard " + flags.shard + ": the shard is empty (the data has fewer samples than shards)");
  }
  return all;
}

quant::Expected<DataReader> DataReader::create(const DataFlags& flags, const quant::ir::Graph& graph,
                                               const std::string& model_path) {
  DataReader r;
  QT_ASSIGN_OR_RETURN(r.samples_, collect_samples(flags, !graph.inputs.empty()));
  QT_ASSIGN_OR_RETURN(r.image_, quant::io::parse_image_options(flags.image_size, flags.mean, flags.std, flags.layout,
                                                              flags.channels));
  r.batch_ = std::max<size_t>(flags.batch, 1);
  for (const auto* v : graph.inputs) {
    r.input_names_.push_back(v->name());
    if (r.batch_ > 1 && (!v->has_shape || v->shape.empty() || v->shape[0] >= 0)) {
      std::string dim0 = v->has_shape && !v->shape.empty() ? std::to_string(v->shape[0]) : "unknown";
      return quant::Status::bad_input(model_path + ": input '" + v->name() + "' has a fixed dim 0 (" + dim0 +
                                      "); --batch " + std::to_string(r.batch_) + " needs a dynamic batch dimension");
    }
  }
  // Images default to the size the model's first input expects, when it says.
  if (flags.image_size.empty() && !graph.inputs.empty()) {
    const auto* in = graph.inputs.front();
    if (in->has_shape && in->shape.size() == 4) {
      bool nchw = r.image_.layout == quant::io::ImageLayout::NCHW;
      int64_t h = in->shape[nchw ? 2 : 1], w = in->shape[nchw ? 3 : 2];
      // A size beyond what qtool resizes to keeps the images' own size; the
      // input shape check then names both (an int cast would wrap instead).
      if (h > 0 && w > 0 && h <= quant::io::kMaxImageSide && w <= quant::io::kMaxImageSide) {
        r.image_.height = static_cast<int>(h);
        r.image_.width = static_cast<int>(w);
      }
    }
  }
  return r;
}

quant::Expected<std::vector<quant::Tensor>> DataReader::load(size_t run) const {
  const size_t first = run * batch_, n = samples_in_run(run);
  std::vector<std::vector<quant::Tensor>> loaded;
  std::vector<std::string> stems;
  for (size_t i = first; i < first + n; ++i) {
    QT_ASSIGN_OR_RETURN(auto inputs, quant::io::load_sample(samples_[i], input_names_, image_));
    loaded.push_back(std::move(inputs));
    stems.push_back(samples_[i].stem);
  }
  return quant::io::stack_samples(loaded, stems, input_names_);
}

std::string DataReader::describe(size_t run) const {
  const size_t first = run * batch_, n = samples_in_run(run);
  if (n == 1) return "sample " + samples_[first].stem;
  return "samples " + samples_[first].stem + ".." + samples_[first + n - 1].stem;
}

std::string DataReader::file_of(size_t run, size_t k, size_t input) const {
  const quant::io::SampleSource& s = samples_[run * batch_ + k];
  const std::string by_index = "#" + std::to_string(input);
  for (const auto& [name, path] : s.files)
    if (name == input_names_[input] || name == by_index) return path;
  return s.files.size() == 1 ? s.files[0].second : "sample " + s.stem;
}

quant::Expected<std::vector<int64_t>> read_labels(const std::string& path) {
  QT_ASSIGN_OR_RETURN(quant::Tensor t, quant::io::read_npy(path));
  if (t.dtype() != quant::DType::Int64 && t.dtype() != quant::DType::Int32)
    return quant::Status::bad_input(path + ": labels must be an int64 or int32 array, got " + std::string(quant::dtype_name(t.dtype())));
  std::vector<int64_t> labels(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) labels[static_cast<size_t>(i)] = t.as_int64(i);
  return labels;
}

}  // namespace qtool
