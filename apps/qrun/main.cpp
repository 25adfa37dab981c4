// qrun: runs a float or quantized model on the reference interpreter, writes
// outputs, and compares against a float reference with accuracy gates.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <spdlog/spdlog.h>

#include "apps/common/cli.h"
#include "apps/common/data.h"
#include "apps/common/progress.h"
#include "apps/qrun/report.h"
#include "apps/qrun/sensitivity.h"
#include "libquant/interp/compare.h"
#include "libquant/interp/session.h"
#include "libquant/kernels/cpu.h"
#include "libquant/io/npy.h"
#include "libquant/onnx/model_io.h"
#include "libquant/passes/lower_plan.h"
#include "libquant/passes/lower_qdq.h"
#include "libquant/passes/subgraphs.h"
#include "libquant/target/target.h"
#include "libquant/tune/run_setup.h"

namespace {

using quant::Expected;
using quant::Status;
using quant::Tensor;
using qtool::SensitivityInputs;

struct Flags {
  std::string model;
  qtool::DataFlags data;
  std::string out_dir;
  std::string reference;
  std::string labels;
  double min_snr = -std::numeric_limits<double>::infinity();
  double min_cosine = -1;
  double max_accuracy_drop = std::numeric_limits<double>::infinity();
  bool json = false;
  bool explain = false;
  bool no_lower = false;
  bool per_layer = false;
  bool sensitivity = false;
  std::string html;     // --html: the --per-layer or --sensitivity report page
  std::string requant;  // empty: the target's, else float
  std::string target;   // empty: exact arithmetic
  int threads = qtool::default_threads();
  bool quiet = false;
  bool verbose = false;
  int bench = 0;
  bool no_fuse = false;  // --no-fuse: every node its own step, as qprofile runs a model
};

// --bench N: every sample is run N more times after its first (warm-up) run.
// Wall-clock time per run, and the process CPU time (all threads) they took:
// on a shared machine CPU time is the steadier measure of single-thread work.
struct BenchTimes {
  std::vector<double> wall_ms;
  double cpu_ms = 0;
};

Status bench_sample(const quant::interp::Session& session, const std::vector<Tensor>& inputs, int runs, BenchTimes& t) {
  const std::clock_t cpu_start = std::clock();
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    auto outs = session.run(inputs);
    if (!outs) return outs.status();
    t.wall_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  t.cpu_ms += 1000.0 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  return Status::ok();
}

// For scripts/bench.sh. With --json the line goes to stderr, so that stdout
// stays one JSON document. The ISA is the widest the kernels used
// (kernels/cpu.h: the host's, capped by QTOOL_ISA).
void print_bench(BenchTimes t, int threads, size_t steps, bool json) {
  std::vector<double>& ms = t.wall_ms;
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  double sum = 0;
  for (double v : ms) sum += v;
  const double n = static_cast<double>(ms.size());
  std::fprintf(json ? stderr : stdout,
               "bench: %.3f ms per sample (median %.3f ms, min %.3f ms, cpu %.3f ms per sample, %zu runs, %d threads, "
               "%zu steps, %s)\n",
               sum / n, ms[ms.size() / 2], ms.front(), t.cpu_ms / n, ms.size(), threads, steps,
               quant::kernels::kernel_setup().c_str());
}

// Counts of correct predictions for one model.
struct Accuracy {
  int64_t top1 = 0, top5 = 0, rows = 0;
  double top1_pct() const { return rows ? 100.0 * static_cast<double>(top1) / static_cast<double>(rows) : 0; }
  double top5_pct() const { return rows ? 100.0 * static_cast<double>(top5) / static_cast<double>(rows) : 0; }
};

struct Summary {
  int64_t samples = 0;
  quant::interp::ErrorStats error;
  int64_t agree = 0, rows = 0;
  Accuracy tested, reference;
  bool has_labels = false;
  std::vector<quant::interp::LayerComparison::Layer> layers;  // --per-layer, worst SNR first
  std::string target;                                           // --target's name
  std::map<std::string, quant::kernels::SaturationStats> saturation;  // per node, saturating targets only
  bool saturating = false;
  // The first compared output holding NaN or Inf (either model's): the
  // comparison has no valid result then, so the run fails (exit 3).
  std::string nonfinite_where;
};

quant::kernels::SaturationStats total_saturation(const Summary& s) {
  quant::kernels::SaturationStats t;
  for (const auto& [node, st] : s.saturation) t += st;
  return t;
}

// --target with a saturating dot product: how many pairs saturated, per
// layer (most first), so a user sees which layers that CPU class breaks.
void print_saturation(const Summary& s) {
  const auto total = total_saturation(s);
  std::printf("saturated dot-product pairs (target %s): %lld of %lld\n", s.target.c_str(),
              static_cast<long long>(total.saturated), static_cast<long long>(total.pairs));
  std::vector<std::pair<std::string, quant::kernels::SaturationStats>> rows(s.saturation.begin(), s.saturation.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.saturated > b.second.saturated; });
  std::printf("  %12s %14s %9s  %s\n", "saturated", "pairs", "share", "node");
  for (const auto& [node, st] : rows)
    std::printf("  %12lld %14lld %8.4f%%  %s\n", static_cast<long long>(st.saturated), static_cast<long long>(st.pairs),
                st.pairs ? 100.0 * static_cast<double>(st.saturated) / static_cast<double>(st.pairs) : 0.0, node.c_str());
}

nlohmann::json saturation_json(const Summary& s) {
  const auto total = total_saturation(s);
  nlohmann::json j = {{"target", s.target}, {"saturated_pairs", total.saturated}, {"pairs", total.pairs}};
  j["layers"] = nlohmann::json::array();
  for (const auto& [node, st] : s.saturation)
    j["layers"].push_back({{"node", node}, {"saturated_pairs", st.saturated}, {"pairs", st.pairs}});
  return j;
}

nlohmann::json json_number(double v) {
  if (std::isnan(v)) return "nan";
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(v > 0 ? "inf" : "-inf");
}


void score(const Tensor& out, const std::vector<int64_t>& labels, int64_t first_row, Accuracy& acc) {
  const auto top1 = quant::interp::argmax_rows(out);  // empty for a scalar or empty output
  if (top1.empty()) return;
  const int64_t classes = out.dim(out.rank() - 1);
  for (size_t r = 0; r < top1.size(); ++r) {
    const int64_t label = labels[static_cast<size_t>(first_row) + r];
    acc.top1 += top1[r] >= 0 && top1[r] == label;  // -1: a row with NaN predicts nothing
    acc.top5 += quant::interp::in_top_k(out.data<float>() + static_cast<int64_t>(r) * classes, classes, label, 5);
    ++acc.rows;
  }
}

// The output folder is created with the first output, so a run that fails
// before producing anything leaves nothing behind.
Status write_outputs(const std::string& dir, const std::string& stem, const std::vector<Tensor>& outs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::bad_input(dir + ": cannot create output directory (" + ec.message() + ")");
  for (size_t k = 0; k < outs.size(); ++k) {
    std::string path = (std::filesystem::path(dir) / (stem + ".out" + std::to_string(k) + ".npy")).string();
    // Sequences, optionals and strings have no .npy form: said, and skipped.
    if (!outs[k].is_tensor() || outs[k].dtype() == quant::DType::String) {
      spdlog::warn("{}: output {} is a {}: not written (no .npy form)", stem, k, quant::describe_value(outs[k]));
      continue;
    }
    QT_RETURN_IF_ERROR(quant::io::write_npy(path, outs[k]));
  }
  return Status::ok();
}

// The per-layer table, worst SNR first: the "order" column gives the
// position in execution, so the earliest of the bad layers stands out.
void print_layers(const Flags& f, const Summary& s) {
  std::printf("per-layer (%zu tensors paired with the reference, worst SNR first):\n", s.layers.size());
  std::printf("  %9s %9s %11s %5s  %s\n", "SNR dB", "cosine", "max abs", "order", "tensor");
  for (const auto& l : s.layers) {
    std::string name = l.tensor == l.reference ? l.tensor : l.tensor + " ~ " + l.reference;
    std::printf("  %9.2f %9.6f %11.5g %5d  %s\n", l.stats.snr_db(), l.stats.cosine(), l.stats.max_abs_error(), l.order,
                name.c_str());
  }
  if (std::isfinite(f.min_snr)) {
    const quant::interp::LayerComparison::Layer* first = nullptr;
    for (const auto& l : s.layers)
      if (!(l.stats.snr_db() >= f.min_snr) && (!first || l.order < first->order)) first = &l;
    if (first) std::printf("first layer below --min-snr %.2f dB: %s (order %d, %.2f dB)\n", f.min_snr, first->tensor.c_str(), first->order, first->stats.snr_db());
  }
}

void print_summary(const Flags& f, const Summary& s) {
  const bool compare = !f.reference.empty();
  if (f.json) {
    nlohmann::json j;
    j["samples"] = s.samples;
    if (!s.target.empty()) j["target"] = s.target;
    if (s.saturating) j["saturation"] = saturation_json(s);
    if (compare) {
      j["snr_db"] = json_number(s.error.snr_db());
      j["cosine"] = json_number(s.error.cosine());
      j["max_abs_error"] = json_number(s.error.max_abs_error());
      j["mean_abs_error"] = json_number(s.error.mean_abs_error());
      j["nonfinite_values"] = s.error.nonfinite();
      j["top1_agreement"] = s.rows ? static_cast<double>(s.agree) / static_cast<double>(s.rows) : 0.0;
    }
    if (s.has_labels) {
      j["accuracy"] = {{"top1", s.tested.top1_pct()}, {"top5", s.tested.top5_pct()}, {"rows", s.tested.rows}};
      if (compare) {
        j["reference_accuracy"] = {{"top1", s.reference.top1_pct()}, {"top5", s.reference.top5_pct()}};
        j["accuracy_drop_pp"] = s.reference.top1_pct() - s.tested.top1_pct();
      }
    }
    if (f.per_layer) {
      j["layers"] = nlohmann::json::array();
      for (const auto& l : s.layers)
        j["layers"].push_back({{"tensor", l.tensor}, {"reference", l.reference}, {"dequantized", l.dequantized},
                               {"order", l.order}, {"snr_db", json_number(l.stats.snr_db())},
                               {"cosine", json_number(l.stats.cosine())},
                               {"max_abs_error", json_number(l.stats.max_abs_error())},
                               {"mean_abs_error", json_number(l.stats.mean_abs_error())},
                               {"clipped", l.clipped_share()}});
    }
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("samples: %lld\n", static_cast<long long>(s.samples));
  if (!s.target.empty()) std::printf("target: %s\n", s.target.c_str());
  if (s.has_labels) {
    if (compare) {
      std::printf("float accuracy: %.2f%% (%lld/%lld), top-5 %.2f%%\n", s.reference.top1_pct(),
                  static_cast<long long>(s.reference.top1), static_cast<long long>(s.reference.rows), s.reference.top5_pct());
      std::printf("quantized accuracy: %.2f%% (%lld/%lld), top-5 %.2f%%\n", s.tested.top1_pct(),
                  static_cast<long long>(s.tested.top1), static_cast<long long>(s.tested.rows), s.tested.top5_pct());
      std::printf("accuracy drop: %.2f pp\n", s.reference.top1_pct() - s.tested.top1_pct());
    } else {
      std::printf("accuracy: %.2f%% (%lld/%lld), top-5 %.2f%%\n", s.tested.top1_pct(), static_cast<long long>(s.tested.top1),
                  static_cast<long long>(s.tested.rows), s.tested.top5_pct());
    }
  }
  if (compare) {
    std::printf("top-1 agreement: %.2f%% (%lld/%lld)\n",
                s.rows ? 100.0 * static_cast<double>(s.agree) / static_cast<double>(s.rows) : 0.0,
                static_cast<long long>(s.agree), static_cast<long long>(s.rows));
    std::printf("SNR: %.2f dB\n", s.error.snr_db());
    std::printf("cosine: %.6f\n", s.error.cosine());
    std::printf("max abs error: %.6g\n", s.error.max_abs_error());
    std::printf("mean abs error: %.6g\n", s.error.mean_abs_error());
    if (s.error.nonfinite())
      std::printf("non-finite values: %lld (NaN or Inf)\n", static_cast<long long>(s.error.nonfinite()));
  }
  if (f.per_layer) print_layers(f, s);
  if (s.saturating && (f.explain || total_saturation(s).saturated > 0)) print_saturation(s);
}

// The run's summary at the top of the --html page.
std::vector<std::pair<std::string, std::string>> report_facts(const Flags& f, const Summary& s) {
  std::vector<std::pair<std::string, std::string>> facts = {
      {"model", f.model}, {"reference", f.reference}, {"samples", std::to_string(s.samples)}};
  if (!s.target.empty()) facts.emplace_back("target", s.target);
  facts.emplace_back("output SNR", qtool::html::number(s.error.snr_db()) + " dB");
  facts.emplace_back("output cosine", qtool::html::number(s.error.cosine(), 6));
  if (s.rows)
    facts.emplace_back("top-1 agreement", qtool::html::number(100.0 * static_cast<double>(s.agree) / static_cast<double>(s.rows)) + "%");
  if (s.has_labels)
    facts.emplace_back("top-1 accuracy", "float " + qtool::html::number(s.reference.top1_pct()) + "%, quantized " +
                                             qtool::html::number(s.tested.top1_pct()) + "%");
  return facts;
}

// Accuracy gates: the first failing one names the metric (exit 3). Each test
// is written as !(value passes) so that a NaN metric fails it.
Status check_gates(const Flags& f, const Summary& s) {
  if (f.reference.empty()) return Status::ok();
  if (s.error.nonfinite())
    return Status::gate_failed("gate failed: " + s.nonfinite_where + " holds NaN or Inf (" +
                               std::to_string(s.error.nonfinite()) + " such values in all compared outputs)");
  char buf[160];
  if (!(s.error.snr_db() >= f.min_snr)) {
    std::snprintf(buf, sizeof buf, "gate failed: SNR %.2f dB < --min-snr %.2f dB", s.error.snr_db(), f.min_snr);
    return Status::gate_failed(buf);
  }
  if (!(s.error.cosine() >= f.min_cosine)) {
    std::snprintf(buf, sizeof buf, "gate failed: cosine %.6f < --min-cosine %.6f", s.error.cosine(), f.min_cosine);
    return Status::gate_failed(buf);
  }
  const double drop = s.reference.top1_pct() - s.tested.top1_pct();
  if (s.has_labels && !(drop <= f.max_accuracy_drop)) {
    std::snprintf(buf, sizeof buf, "gate failed: accuracy drop %.2f pp > --max-accuracy-drop %.2f pp", drop,
                  f.max_accuracy_drop);
    return Status::gate_failed(buf);
  }
  return Status::ok();
}

Status run(const Flags& f) {
  if (std::isfinite(f.max_accuracy_drop) && f.labels.empty())
    return Status::bad_input("--max-accuracy-drop needs --labels");
  if ((std::isfinite(f.min_snr) || f.min_cosine > -1 || std::isfinite(f.max_accuracy_drop)) && f.reference.empty())
    return Status::bad_input("accuracy gates need --reference FLOAT.onnx");
  if (f.per_layer && f.reference.empty()) return Status::bad_input("--per-layer needs --reference FLOAT.onnx");
  if (f.sensitivity && f.reference.empty()) return Status::bad_input("--sensitivity needs --reference FLOAT.onnx");
  if (f.sensitivity && (f.per_layer || f.bench || !f.out_dir.empty() || std::isfinite(f.min_snr) || f.min_cosine > -1 ||
                        std::isfinite(f.max_accuracy_drop) || !f.labels.empty()))
    return Status::bad_input("--sensitivity runs on its own: drop --per-layer, --bench, -o, --labels and the gates");
  if (!f.html.empty()) {
    if (!f.per_layer && !f.sensitivity) return Status::bad_input("--html writes the report of --per-layer or --sensitivity: give one");
    // Refuse an unusable path before the (possibly long) run rather than after it.
    QT_RETURN_IF_ERROR(qtool::html::Page::check_path(f.html));
  }
  if (f.threads < 1) return Status::bad_input("--threads must be at least 1, got " + std::to_string(f.threads));
  // --target: compute as that runtime and CPU do (DESIGN "Targets"); read
  // before the model so that a bad target file fails fast.
  std::optional<quant::target::TargetSpec> target;
  if (!f.target.empty()) {
    QT_ASSIGN_OR_RETURN(target, quant::target::load_target(f.target));
  }
  QT_ASSIGN_OR_RETURN(auto graph, quant::onnx_io::load_model(f.model));
  std::string search_record;  // qconvert's mixed-precision decisions, for --html
  for (const auto& [key, value] : graph->metadata)
    if (key == "qtool.search") search_record = value;
  // Lowering at prepare time (DESIGN "Interpreter"): DQ -> op -> Q patterns
  // become integer ops before the Session is built; --no-lower runs Q/DQ in float.
  std::optional<quant::interp::Requant> requant_flag;
  if (!f.requant.empty())  // the flag overrides the target's field
    requant_flag = f.requant == "fixed-point" ? quant::interp::Requant::FixedPoint : quant::interp::Requant::Float;
  quant::tune::RunSetup setup = quant::tune::run_setup(target ? &*target : nullptr, requant_flag, f.threads);
  setup.lower.fold_activations = !f.per_layer;  // --per-layer pairs every integer tensor, pre-activation ones too
  setup.lower_qdq = !f.no_lower;
  // Fusion drops intermediate values (Conv -> Relu): only when no observer
  // asks for every value (--per-layer pairs them with the reference's).
  // --no-fuse runs the plan qprofile runs (every value computed), so that
  // scripts/bench.sh compares qprofile with the same float run.
  setup.plan.fuse = !f.per_layer && !f.no_fuse;
  std::optional<quant::passes::Lowering> lowering;
  std::vector<std::string> body_lowering;  // what was lowered inside If/Loop/Scan bodies
  if (!f.no_lower) {
    // Inside If/Loop/Scan bodies too (DESIGN "Subgraphs").
    auto lowered = quant::passes::lower_qdq_with_bodies(*graph, setup.lower, &body_lowering);
    if (!lowered) return lowered.status().with_context(f.model);
    lowering = std::move(lowered).value();
  }
  if (f.explain) {
    auto plan = quant::passes::describe_plan(*graph, lowering ? &*lowering : nullptr);
    if (f.json) std::printf("%s\n", quant::passes::plan_to_json(plan).dump(2).c_str());
    else std::printf("%s", quant::passes::plan_to_text(plan).c_str());
    if (!f.json && !body_lowering.empty()) {
      std::printf("inside If/Loop/Scan bodies:\n");
      for (const auto& note : body_lowering) std::printf("  %s\n", note.c_str());
    }
    if (f.data.dirs.empty() && f.data.inputs.empty()) return Status::ok();
  }
  quant::interp::SessionOptions options = setup.session;
  // The reference keeps exact float arithmetic; only the tested model
  // computes as the target does.
  quant::interp::SessionOptions ref_options;
  ref_options.requant = options.requant;
  ref_options.threads = f.threads;
  const quant::interp::PlanOptions& plan = setup.plan;
  Summary s;
  if (target) {
    s.target = target->name;
    s.saturating = target->dot != quant::kernels::DotArithmetic::Exact;
    if (s.saturating) options.saturation = std::make_shared<quant::interp::SaturationLog>();
  }
  auto session_or = quant::interp::Session::create(*graph, options, plan);
  if (!session_or) return session_or.status().with_context(f.model);
  auto session = std::move(session_or).value();
  std::unique_ptr<quant::ir::Graph> ref_graph;
  std::unique_ptr<quant::interp::Session> ref_session;
  if (!f.reference.empty()) {
    QT_ASSIGN_OR_RETURN(ref_graph, quant::onnx_io::load_model(f.reference));
    auto ref_or = quant::interp::Session::create(*ref_graph, ref_options, plan);
    if (!ref_or) return ref_or.status().with_context(f.reference);
    ref_session = std::move(ref_or).value();
    if (ref_graph->inputs.size() != graph->inputs.size() || ref_graph->outputs.size() != graph->outputs.size())
      return Status::bad_input(f.reference + ": reference model has different inputs or outputs than " + f.model);
  }
  std::vector<std::string> input_names;
  for (const auto* v : graph->inputs) input_names.push_back(v->name());
  QT_ASSIGN_OR_RETURN(auto samples, qtool::collect_samples(f.data, !graph->inputs.empty()));
  std::vector<int64_t> labels;
  if (!f.labels.empty()) {
    QT_ASSIGN_OR_RETURN(labels, qtool::read_labels(f.labels));
    s.has_labels = true;
  }
  if (!f.out_dir.empty()) {
    // Refuse an unusable -o before the (possibly long) run rather than after it.
    std::error_code ec;
    if (std::filesystem::exists(f.out_dir, ec) && !std::filesystem::is_directory(f.out_dir, ec))
      return Status::bad_input(f.out_dir + ": -o expects a directory, this is a file");
  }
  if (f.sensitivity) {
    SensitivityInputs in;
    in.model_path = f.model;
    in.reference = ref_graph.get();
    in.samples = samples;
    in.input_names = input_names;
    in.quiet = f.quiet;
    in.setup = setup;
    in.setup.session = options;
    QT_ASSIGN_OR_RETURN(auto result, qtool::measure_sensitivity(in));
    if (!f.html.empty()) {
      const std::vector<std::pair<std::string, std::string>> facts = {
          {"model", f.model},
          {"reference", f.reference},
          {"samples", std::to_string(result.samples)},
          {"model runs", std::to_string(result.model_runs)},
          {"all layers quantized", "SNR " + qtool::html::number(result.all_quantized.error.snr_db()) + " dB, top-1 agreement " +
                                       qtool::html::number(100.0 * result.all_quantized.agreement()) + "%"}};
      auto page = qtool::sensitivity_page(facts, result);
      qtool::add_search_section(page, search_record);
      QT_RETURN_IF_ERROR(page.write(f.html));
    }
    if (f.json) std::printf("%s\n", qtool::sensitivity_json(result).dump(2).c_str());
    else qtool::print_sensitivity(result);
    return Status::ok();
  }
  std::unique_ptr<quant::interp::LayerComparison> layers;
  if (f.per_layer) {
    std::vector<quant::interp::QuantizedTwin> twins;
    for (const auto& t : quant::passes::find_quantized_tensors(*graph)) twins.push_back({t.name, t.float_name, t.scale, t.zero_point});
    layers = std::make_unique<quant::interp::LayerComparison>(*graph, *ref_graph, twins);
  }
  qtool::LayerDistributions distributions;
  if (layers && !f.html.empty()) distributions.attach(*layers);
  qtool::Progress progress("qrun", samples.size(), f.quiet);
  int64_t row = 0;
  BenchTimes bench_times;
  for (const auto& sample : samples) {
    QT_ASSIGN_OR_RETURN(auto inputs, quant::io::load_sample(sample, input_names));
    // The reference runs first so that --per-layer holds its tensors when the
    // tested model produces their twins.
    std::vector<Tensor> ref_outs;
    if (ref_session) {
      auto ref = ref_session->run(inputs, layers ? layers->reference_observer() : quant::interp::Observer());
      if (!ref) return ref.status().with_context(f.reference + ", sample " + sample.stem);
      ref_outs = std::move(ref).value();
    }
    auto outs = session->run(inputs, layers ? layers->tested_observer() : quant::interp::Observer());
    if (layers) layers->end_sample();
    if (!outs) return outs.status().with_context(f.model + ", sample " + sample.stem);
    if (f.bench > 0) {
      Status st = bench_sample(*session, inputs, f.bench, bench_times);
      if (!st.is_ok()) return st.with_context(f.model + ", sample " + sample.stem);
    }
    if (!f.out_dir.empty()) QT_RETURN_IF_ERROR(write_outputs(f.out_dir, sample.stem, *outs));
    const Tensor& scores = (*outs)[0];
    const int64_t rows = scores.rank() > 0 && scores.dim(scores.rank() - 1) > 0 ? scores.size() / scores.dim(scores.rank() - 1) : 0;
    if (s.has_labels) {
      if (row + rows > static_cast<int64_t>(labels.size()))
        return Status::bad_input(f.labels + ": has " + std::to_string(labels.size()) + " labels, fewer than the samples");
      if (scores.dtype() != quant::DType::Float32) return Status::bad_input("--labels needs a float32 first output");
      score(scores, labels, row, s.tested);
    }
    if (ref_session) {
      for (size_t k = 0; k < outs->size(); ++k) {
        if (ref_outs[k].dtype() != quant::DType::Float32) continue;
        const int64_t before = s.error.nonfinite();
        QT_RETURN_IF_ERROR(s.error.add(ref_outs[k], (*outs)[k]));
        if (s.error.nonfinite() > before && s.nonfinite_where.empty()) {
          const bool tested_bad = quant::interp::count_nonfinite((*outs)[k]) > 0;
          s.nonfinite_where = "output '" + graph->outputs[k]->name() + "' of sample '" + sample.stem + "' (" +
                              (tested_bad ? f.model : f.reference) + ")";
        }
      }
      auto a = quant::interp::argmax_rows(ref_outs[0]);
      auto b = quant::interp::argmax_rows(scores);
      for (size_t r = 0; r < a.size() && r < b.size(); ++r) s.agree += a[r] >= 0 && a[r] == b[r];
      s.rows += static_cast<int64_t>(a.size());
      if (s.has_labels) score(ref_outs[0], labels, row, s.reference);
    }
    row += rows;
    ++s.samples;
    progress.tick();
  }
  // With --limit a prefix of the labels is used; otherwise they must match one to one.
  if (s.has_labels && f.data.limit == 0 && row != static_cast<int64_t>(labels.size()))
    return Status::bad_input(f.labels + ": has " + std::to_string(labels.size()) + " labels for " + std::to_string(row) +
                             " predictions");
  if (layers) {
    s.layers = layers->by_snr();
    if (layers->skipped()) spdlog::warn("--per-layer: {} tensor pairs skipped (shapes or types differ)", layers->skipped());
  }
  if (options.saturation) s.saturation = options.saturation->by_node();
  if (!f.html.empty()) {
    auto page = qtool::per_layer_page(report_facts(f, s), s.layers, distributions);
    qtool::add_search_section(page, search_record);
    QT_RETURN_IF_ERROR(page.write(f.html));
  }
  print_summary(f, s);
  print_bench(std::move(bench_times), f.threads, session->step_count(), f.json);
  return check_gates(f, s);
}

}  // namespace

// The examples --help ends with; help2man sets the "$ " lines in constant width in
// the man page's EXAMPLES section.
constexpr const char* kExamples =
    "  Run a model, one .npy per sample and graph output:\n"
    "    $ qrun model.onnx --data inputs/ -o outputs/\n"
    "  Compare with the float model; exit code 3 when the SNR is below 25 dB:\n"
    "    $ qrun model.int8.onnx --data test/ --reference model.onnx --min-snr 25\n"
    "  Every quantized tensor against its float twin, worst SNR first:\n"
    "    $ qrun model.int8.onnx --data test/ --reference model.onnx --per-layer\n"
    "  Which layers cost the most: each layer alone quantized, and alone left float:\n"
    "    $ qrun model.int8.onnx --data test/ --reference model.onnx --sensitivity --limit 32\n"
    "  The per-layer comparison as a page to open in a browser:\n"
    "    $ qrun model.int8.onnx --data test/ --reference model.onnx --per-layer --html report.html\n"
    "  Accuracy as ONNX Runtime computes on x86 without VNNI, saturated pairs per layer:\n"
    "    $ qrun model.int8.onnx --data test/ --reference model.onnx --target ort-x86-avx2 --explain\n";

int main(int argc, char** argv) {
  return qtool::guarded_main([&] {
    CLI::App app{"qrun: run a float or quantized ONNX model on the reference interpreter, compare and gate"};
    qtool::describe_tool(app, "qrun", kExamples);
    Flags f;
    app.add_option("model", f.model, "model to run (.onnx)")->required()->check(CLI::ExistingFile);
    qtool::add_data_flags(app, f.data);
    app.add_option("-o,--output", f.out_dir, "write OUTDIR/<sample-stem>.out<k>.npy per graph output k");
    app.add_option("--reference", f.reference, "float model to compare against")->check(CLI::ExistingFile);
    app.add_option("--labels", f.labels, "int64 .npy of class labels, one per row of output 0")->check(CLI::ExistingFile);
    app.add_option("--min-snr", f.min_snr, "gate: fail (exit 3) when SNR vs the reference is below DB");
    app.add_option("--min-cosine", f.min_cosine, "gate: fail (exit 3) when cosine vs the reference is below C");
    app.add_option("--max-accuracy-drop", f.max_accuracy_drop, "gate: fail (exit 3) when top-1 drops by more than PP points");
    app.add_flag("--json", f.json, "print the summary (or the --explain plan) as JSON");
    app.add_flag("--explain", f.explain,
                 "print the lowered plan: integer ops, float islands with their reasons, Q/DQ boundaries (runs the "
                 "samples too when --data is given)");
    app.add_flag("--no-lower", f.no_lower, "run Q/DQ nodes in float instead of lowering DQ -> op -> Q to integer ops (debugging)");
    app.add_flag("--per-layer", f.per_layer, "with --reference: compare every quantized tensor with its float twin, worst SNR first");
    app.add_flag("--sensitivity", f.sensitivity,
                 "with --reference: per quantized layer, the output SNR and top-1 agreement with only that layer "
                 "quantized and with only that layer float (two full model runs per layer), most sensitive first");
    app.add_option("--html", f.html,
                   "with --per-layer or --sensitivity: also write that report as one self-contained HTML page (charts "
                   "in execution order, the worst layers' float vs quantized histograms and range clipping)");
    app.add_option("--requant", f.requant, "integer requantization: float (as ONNX Runtime; the default) or fixed-point (int32 multiplier + shift); overrides the target's")
        ->check(CLI::IsMember({"float", "fixed-point"}));
    app.add_option("--target", f.target,
                   "compute as this target does (a built-in name, see qconvert --list-targets, or a target .json file): "
                   "e.g. ort-x86-avx2 = ONNX Runtime on x86 without VNNI, saturating u8 x s8 pairs; default: exact");
    app.add_option("--threads", f.threads, "threads per kernel (default: every core this process may run on; 1: single-threaded)")->check(CLI::Range(1, 1024));
    app.add_option("--bench", f.bench, "run each sample N more times and print the time per run")->check(CLI::Range(1, 1000000));
    app.add_flag("--no-fuse", f.no_fuse,
                 "run every node as its own step (no Conv -> Relu/Add fusion), as qprofile runs a model; same outputs, "
                 "for measuring (--bench)");
    app.add_flag("-q,--quiet", f.quiet, "no progress bar");
    app.add_flag("-v,--verbose", f.verbose, "debug logging");
    int code = 0;
    if (!qtool::parse_flags(app, argc, argv, code)) return code;
    qtool::init_logging(f.verbose);
    return qtool::report(run(f));
  });
}
