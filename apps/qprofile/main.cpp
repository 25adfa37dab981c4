// qprofile: runs a float model over representative inputs and records, per
// float activation, min/max and a histogram (DESIGN); `merge` combines shards,
// `show` explains a profile.
#include <malloc.h>

#include <cstdio>
#include <limits>

#include "apps/common/cli.h"
#include "apps/common/data.h"
#include "apps/qprofile/bench.h"
#include "apps/qprofile/collect.h"
#include "apps/qprofile/merge.h"
#include "apps/qprofile/model_file.h"
#include "apps/qprofile/show.h"
#include "libquant/core/sha256.h"
#include "libquant/interp/session.h"
#include "libquant/ir/signature.h"
#include "libquant/onnx/model_io.h"

namespace {

using quant::Status;

struct Flags {
  std::string model;
  qtool::DataFlags data;
  std::string output;
  qtool::CollectOptions collect;
  bool verbose = false;
  int bench = 0;  // --bench N: measure what profiling costs, write no profile (apps/qprofile/bench.h)
  std::vector<std::string> merge_inputs;
  qtool::ShowOptions show;
};

// glibc gives a freed block above M_MMAP_THRESHOLD, and free memory at the top
// of the heap above M_TRIM_THRESHOLD, back to the kernel; the next allocation
// of that size then faults every page in again, zero-filled. qprofile frees
// large blocks it will need again right away: the parsed protobuf's weights
// (about the size of the model) just before the session packs its own copy,
// and per sample the input tensors and the bytes they are read from. With
// freed memory kept in the process for reuse, creating the session of resnet18
// (45 MB) took 30 ms of CPU instead of 250 ms. Blocks above 32 MiB (glibc's
// limit for this setting) are still mapped and unmapped each time.
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
}

Status profile_model(const Flags& f) {
  if (f.model.empty()) return Status::bad_input("no model given (usage: qprofile MODEL.onnx --data DIR -o PROFILE.json)");
  if (f.output.empty() && f.bench == 0) return Status::bad_input("no output given: -o PROFILE.json");
  if (!f.output.empty() && f.bench > 0) return Status::bad_input("--bench writes no profile: drop -o");
  keep_freed_memory();
  std::string digest;
  std::unique_ptr<quant::ir::Graph> graph;
  {
    // Read once: the bytes are both hashed (model.digest) and parsed; the
    // graph holds its own copy of the weights, so the file is let go here.
    QT_ASSIGN_OR_RETURN(auto file, qtool::ModelFile::open(f.model));
    QT_ASSIGN_OR_RETURN(graph, quant::onnx_io::load_model_from_bytes(file.bytes(), f.model));
    digest = quant::sha256_hex(file.bytes());
  }
  QT_ASSIGN_OR_RETURN(auto data, qtool::DataReader::create(f.data, *graph, f.model));
  quant::interp::SessionOptions options;
  // --bench runs one sample at a time: every thread goes to the kernels.
  options.threads = f.bench > 0 ? f.collect.threads : qtool::split_threads(data.runs(), f.collect.threads).kernel_threads;
  options.release_mapped_weights = true;  // profiling memory flat in model size (DESIGN "Large models")
  auto session_or = quant::interp::Session::create(*graph, options);
  if (!session_or) return session_or.status().with_context(f.model);
  auto session = std::move(session_or).value();
  if (f.bench > 0) return qtool::bench_profile(*session, data, f.collect.bins, f.bench, f.model);

  quant::profile::Profile profile;
  profile.model_path = f.model;
  profile.model_digest = digest;
  profile.graph_signature = quant::ir::graph_signature(*graph);
  profile.bins = f.collect.bins;
  QT_RETURN_IF_ERROR(qtool::collect_profile(*session, data, f.collect, f.model, profile));
  return quant::profile::save_profile(profile, f.output);
}

}  // namespace

// The examples --help ends with; help2man sets the "$ " lines in constant width in
// the man page's EXAMPLES section.
constexpr const char* kExamples =
    "  Profile a model on a directory of .npy samples:\n"
    "    $ qprofile model.onnx --data calib/ -o model.profile.json\n"
    "  Rank its tensors by how hard they are to quantize, draw one histogram:\n"
    "    $ qprofile show model.profile.json --tensor conv1_out\n"
    "  The ranges table and every histogram as one page to open in a browser:\n"
    "    $ qprofile show model.profile.json --html profile.html\n"
    "  Combine the profiles of --shard 0/2 and --shard 1/2 into one:\n"
    "    $ qprofile merge shard_0.json shard_1.json -o model.profile.json\n";

int main(int argc, char** argv) {
  return qtool::guarded_main([&] {
    CLI::App app{"qprofile: record per-activation ranges and histograms of a float ONNX model"};
    qtool::describe_tool(app, "qprofile", kExamples);
    app.set_help_all_flag("--help-all", "Print this help message with the merge and show subcommands' options and exit");
    Flags f;
    f.collect.threads = qtool::default_threads();
    app.add_option("model", f.model, "float model (.onnx)")->check(CLI::ExistingFile);
    qtool::add_data_flags(app, f.data);
    qtool::add_image_flags(app, f.data);
    qtool::add_batch_flags(app, f.data);
    app.add_option("-o,--output", f.output, "profile to write (.json)");
    app.add_option("--bins", f.collect.bins, "histogram bins per tensor")->check(CLI::Range(16, 1 << 20));
    app.add_option("--threads", f.collect.threads, "profile samples on N threads (same result as 1; default: every core this process may run on)")
        ->check(CLI::Range(1, 256));
    app.add_flag("-q,--quiet", f.collect.quiet, "no progress bar");
    app.add_flag("--strict", f.collect.strict, "a sample with NaN/Inf inputs is an error (exit 2); by default it is left out with a warning");
    app.add_flag("-v,--verbose", f.verbose, "debug logging");
    app.add_option("--bench", f.bench,
                   "measure instead of writing a profile: each sample's run with and without profiling, N times each, "
                   "alternating; print their CPU time per sample and the difference per profiled value")
        ->check(CLI::Range(1, 1000000));

    auto* merge = app.add_subcommand("merge", "combine shard profiles of one model into one");
    merge->add_option("profiles", f.merge_inputs, "profiles to merge")->required()->check(CLI::ExistingFile);
    merge->add_option("-o,--output", f.output, "merged profile to write")->required();

    auto* show = app.add_subcommand("show", "explain a profile: ranges per calibration method, hardest tensors first");
    show->add_option("profile", f.show.profile, "profile (.json)")->required()->check(CLI::ExistingFile);
    show->add_option("--tensor", f.show.tensor, "draw this tensor's histogram with the chosen clip range");
    show->add_option("--calibration", f.show.calibration, "method whose range is chosen: minmax|percentile[:P]|kl|mse");
    show->add_option("--plot", f.show.plot_dir, "write one PNG per tensor and an index.html into DIR");
    show->add_option("--html", f.show.html,
                     "write the analysis as one self-contained HTML page: the ranges table and every tensor's histogram");
    show->add_flag("--json", f.show.json, "print the analysis as JSON");

    int code = 0;
    if (!qtool::parse_flags(app, argc, argv, code)) return code;
    qtool::init_logging(f.verbose);
    if (merge->parsed()) return qtool::report(qtool::merge_profiles(f.merge_inputs, f.output));
    if (show->parsed()) return qtool::report(qtool::show_profile(f.show));
    return qtool::report(profile_model(f));
  });
}
