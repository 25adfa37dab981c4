// qprofile: runs a float model over representative inputs and records, per
// float activation, min/max and a histogram (DESIGN); `merge` combines shards.
#include <cstdio>

#include "apps/common/cli.h"
#include "apps/common/data.h"
#include "apps/common/progress.h"
#include "libquant/core/file_util.h"
#include "libquant/core/sha256.h"
#include "libquant/interp/session.h"
#include "libquant/ir/signature.h"
#include "libquant/onnx/model_io.h"
#include "libquant/profile/profile.h"

namespace {

using quant::Status;

struct Flags {
  std::string model;
  qtool::DataFlags data;
  std::string output;
  int bins = 2048;
  bool quiet = false;
  bool verbose = false;
  std::vector<std::string> merge_inputs;
};

Status profile_model(const Flags& f) {
  if (f.model.empty()) return Status::bad_input("no model given (usage: qprofile MODEL.onnx --data DIR -o PROFILE.json)");
  if (f.output.empty()) return Status::bad_input("no output given: -o PROFILE.json");
  QT_ASSIGN_OR_RETURN(std::string model_bytes, quant::read_file(f.model));
  QT_ASSIGN_OR_RETURN(auto graph, quant::onnx_io::load_model(f.model));
  auto session_or = quant::interp::Session::create(*graph);
  if (!session_or) return session_or.status().with_context(f.model);
  auto session = std::move(session_or).value();
  QT_ASSIGN_OR_RETURN(auto samples, qtool::collect_samples(f.data));
  std::vector<std::string> input_names;
  for (const auto* v : graph->inputs) input_names.push_back(v->name());

  quant::profile::Profile profile;
  profile.model_path = f.model;
  profile.model_digest = quant::sha256_hex(model_bytes);
  profile.graph_signature = quant::ir::graph_signature(*graph);
  profile.bins = f.bins;
  // Histograms are updated per sample and activations dropped right after:
  // memory stays flat in the number of samples.
  auto observe = [&](const quant::ir::Value& v, const quant::Tensor& t) {
    if (t.dtype() != quant::DType::Float32 || quant::ir::constant_data(&v)) return;
    auto it = profile.tensors.find(v.name());
    if (it == profile.tensors.end()) {
      quant::profile::TensorProfile tp{"float32", t.shape(), quant::profile::Histogram(f.bins)};
      it = profile.tensors.emplace(v.name(), std::move(tp)).first;
    }
    it->second.hist.add(t.data<float>(), t.size());
  };
  qtool::Progress progress("qprofile", samples.size(), f.quiet);
  for (const auto& sample : samples) {
    QT_ASSIGN_OR_RETURN(auto inputs, quant::io::load_sample(sample, input_names));
    auto outs = session->run(inputs, observe);
    if (!outs) return outs.status().with_context(f.model + ", sample " + sample.stem);
    ++profile.samples;
    progress.tick();
  }
  return quant::profile::save_profile(profile, f.output);
}

Status merge_profiles(const Flags& f) {
  if (f.merge_inputs.empty()) return Status::bad_input("merge needs at least one profile");
  if (f.output.empty()) return Status::bad_input("no output given: -o OUT.json");
  QT_ASSIGN_OR_RETURN(auto merged, quant::profile::load_profile(f.merge_inputs[0]));
  for (size_t i = 1; i < f.merge_inputs.size(); ++i) {
    QT_ASSIGN_OR_RETURN(auto next, quant::profile::load_profile(f.merge_inputs[i]));
    if (next.graph_signature != merged.graph_signature)
      return Status::bad_input(f.merge_inputs[i] + ": profile of another model than " + f.merge_inputs[0] +
                               " (graph signatures differ)");
    for (auto& [name, tp] : next.tensors) {
      auto it = merged.tensors.find(name);
      if (it == merged.tensors.end()) {
        merged.tensors.emplace(name, tp);
      } else {
        it->second.hist = quant::profile::Histogram::merge(it->second.hist, tp.hist);
      }
    }
    merged.samples += next.samples;
  }
  return quant::profile::save_profile(merged, f.output);
}

}  // namespace

int main(int argc, char** argv) {
  return qtool::guarded_main([&] {
    CLI::App app{"qprofile: record per-activation ranges and histograms of a float ONNX model"};
    app.set_version_flag("--version", QTOOL_VERSION);
    Flags f;
    app.add_option("model", f.model, "float model (.onnx)")->check(CLI::ExistingFile);
    qtool::add_data_flags(app, f.data);
    app.add_option("-o,--output", f.output, "profile to write (.json)");
    app.add_option("--bins", f.bins, "histogram bins per tensor")->check(CLI::Range(16, 1 << 20));
    app.add_flag("-q,--quiet", f.quiet, "no progress bar");
    app.add_flag("-v,--verbose", f.verbose, "debug logging");
    auto* merge = app.add_subcommand("merge", "combine shard profiles of one model into one");
    merge->add_option("profiles", f.merge_inputs, "profiles to merge")->required()->check(CLI::ExistingFile);
    merge->add_option("-o,--output", f.output, "merged profile to write")->required();
    int code = 0;
    if (!qtool::parse_flags(app, argc, argv, code)) return code;
    qtool::init_logging(f.verbose);
    return qtool::report(merge->parsed() ? merge_profiles(f) : profile_model(f));
  });
}
