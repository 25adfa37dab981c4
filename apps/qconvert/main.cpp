// qconvert: float model + profile -> quantized ONNX model (QDQ form).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "apps/common/cli.h"
#include "apps/qconvert/accuracy_search.h"
#include "apps/qconvert/calibration_run.h"
#include "apps/qconvert/check_target.h"
#include "libquant/core/file_util.h"
#include "libquant/core/sha256.h"
#include "libquant/io/external_data.h"
#include "libquant/interp/fold.h"
#include "libquant/ir/signature.h"
#include "libquant/onnx/model_io.h"
#include "libquant/passes/bias_correction.h"
#include "libquant/passes/dynamic.h"
#include "libquant/passes/subgraphs.h"
#include "libquant/passes/equalize.h"
#include "libquant/passes/opset_upgrade.h"
#include "libquant/passes/prepare.h"
#include "libquant/passes/qdq.h"
#include "libquant/passes/qoperator.h"
#include "libquant/passes/saturation_risk.h"
#include "libquant/passes/smooth_quant.h"
#include "libquant/profile/profile.h"
#include "libquant/target/target.h"

namespace {

using quant::Expected;
using quant::Status;

struct Flags {
  std::string model, profile, output, report;
  std::string target = quant::target::kDefaultConvertTarget;
  bool list_targets = false;
  std::string check_target;  // --check-target T: check MODEL against T, convert nothing
  bool json = false;
  std::vector<std::string> overrides;  // "flag=value (target: value)" for each flag that overrode the target
  std::string schema = "asymmetric";
  std::string activations = "uint8";
  std::string weights = "int8";
  // The target's uint8 weights became int8 for QOperator int8 activations
  // (apply_target): nodes multiplied as uint8 take uint8 again after emission.
  bool qdq_nodes_uint8_weights = false;
  std::string calibration = "minmax";
  std::string format = "qdq";
  bool per_tensor = false;
  bool per_channel = false;
  std::vector<std::string> exclude_nodes, exclude_ops, include_ops;
  bool force = false;
  bool dynamic = false;
  int64_t group_size = 0;  // 0: not given (int4 default 32)
  qtool::SearchFlags search;  // --data with --min-snr / --max-drop / --min-agreement
  bool equalize = false, equalize_relu6 = false, bias_correction = false;  // need --data (search.data)
  std::string smooth_quant;  // --smooth-quant[=ALPHA|auto]: "" off, "auto", or alpha as given
  double smooth_alpha = 0.5;
  std::string external_data = "auto";  // --external-data auto|always|never
  int64_t external_threshold = 1024;     // --external-data-threshold BYTES
  std::string weight_rounding = "rtn";  // rtn|gptq|hqq (gptq needs --data)
  double gptq_damp = 0.01;
  bool gptq_damp_given = false, gptq_act_order = false;
  bool verbose = false;
};

// How the output stores its initializers (DESIGN "Large models").
quant::onnx_io::SaveOptions save_options(const Flags& f, quant::io::ExternalDataWriter* writer) {
  quant::onnx_io::SaveOptions o;
  o.external = f.external_data == "always" ? quant::onnx_io::ExternalData::Always
               : f.external_data == "never" ? quant::onnx_io::ExternalData::Never
                                            : quant::onnx_io::ExternalData::Auto;
  o.threshold = f.external_threshold;
  o.writer = writer;
  return o;
}

// One static conversion: the quantized graph, its decisions, and (after an
// accuracy search) the search's record for the report.
struct Conversion {
  std::unique_ptr<quant::ir::Graph> graph;
  quant::passes::QuantizeReport report;
  int64_t bytes_before = 0;
  nlohmann::json search;
};

nlohmann::json params_json(const quant::QuantParams& p) {
  nlohmann::json j = {{"type", std::string(quant::dtype_name(p.qtype))}, {"scale", p.scale}, {"zero_point", p.zero_point},
                      {"axis", p.per_tensor() ? nlohmann::json(nullptr) : nlohmann::json(p.axis)}};
  if (p.block_size > 0) j["block_size"] = p.block_size;
  return j;
}

// Initializer bytes of the float model and of the output (qconvert --report).
struct WeightBytes {
  int64_t before = 0, after = 0;
};

std::string report_json(const Flags& f, const quant::passes::QuantizeReport& r, const WeightBytes& bytes,
                        const nlohmann::json& search = {}) {
  nlohmann::json j;
  j["model"] = f.model;
  j["profile"] = f.profile;
  j["target"] = {{"name", f.target}, {"overrides", f.overrides}};
  if (f.dynamic) {
    j["options"] = {{"mode", "dynamic"}, {"weights", f.weights}};
  } else {
    j["options"] = {{"schema", f.schema}, {"activations", f.activations}, {"weights", f.weights},
                    {"granularity", f.per_tensor ? "per-tensor" : "per-channel"}, {"calibration", f.calibration},
                    {"format", f.format}, {"equalize", f.equalize}, {"equalize_relu6", f.equalize_relu6},
                    {"bias_correction", f.bias_correction},
                    {"smooth_quant", f.smooth_quant.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.smooth_quant)}};
  }
  if (f.weights == "int4") j["options"]["group_size"] = f.group_size;
  j["options"]["weight_rounding"] = f.weight_rounding;
  if (f.weight_rounding == "gptq") j["options"]["gptq"] = {{"damp", f.gptq_damp}, {"act_order", f.gptq_act_order}, {"block", 128}};
  j["weight_bytes"] = {{"before", bytes.before}, {"after", bytes.after},
                       {"ratio", bytes.before ? static_cast<double>(bytes.after) / static_cast<double>(bytes.before) : 0.0}};
  for (const auto& t : r.tensors) {
    nlohmann::json e = {{"tensor", t.tensor}, {"kind", t.kind}, {"method", t.method}, {"params", params_json(t.params)}};
    if (t.kind == "activation") e["range"] = {t.range.min, t.range.max};
    j["tensors"].push_back(e);
  }
  if (const auto c = quant::passes::weight_coverage(r); c.total > 0) {
    j["weight_coverage"] = {{"weight_bytes", c.total}, {"quantized_bytes", c.quantized}, {"fraction", c.fraction()},
                            {"float_bytes_by_reason", c.float_by_reason}};
  }
  j["notes"] = r.notes;
  if (!search.is_null()) j["search"] = search;
  for (const auto& n : r.nodes)
    j["nodes"].push_back({{"node", n.node}, {"op_type", n.op_type}, {"quantized", n.quantized}, {"reason", n.reason}});
  return j.dump(2) + "\n";
}

// The target's fields fill the flags the user did not give (DESIGN
// "Targets": flags override a target's fields, and every override is
// recorded in the report and metadata_props).
void apply_target(const quant::target::TargetSpec& t, const CLI::App& app, Flags& f) {
  auto take = [&](const char* flag, std::string& value, const std::string& from_target) {
    if (app.count(flag) == 0) value = from_target;
    else if (value != from_target) f.overrides.push_back(std::string(flag) + "=" + value + " (target: " + from_target + ")");
  };
  take("--schema", f.schema, std::string(quant::calib::schema_name(t.schema)));
  take("--activations", f.activations, std::string(quant::dtype_name(t.activations)));
  if (f.weights != "int4") take("--weights", f.weights, std::string(quant::dtype_name(t.weights)));
  take("--format", f.format, t.format);
  // ONNX Runtime's QOperator QLinearConv / QLinearMatMul have no int8 x uint8
  // kernel (CPU provider 1.20: u8 x s8, u8 x u8, s8 x s8); its S8S8 ones are
  // exact on x86, so int8 activations in QOperator form take int8 weights.
  // Nodes whose activations ONNX Runtime still multiplies as uint8 get
  // uint8 weights back after emission (passes/qoperator.h,
  // uint8_weights_where_u8s8).
  if (f.format == "qoperator" && f.activations == "int8" && f.weights == "uint8" && app.count("--weights") == 0) {
    f.weights = "int8";
    f.qdq_nodes_uint8_weights = true;
  }
  const bool flag_granularity = app.count("--per-tensor") || app.count("--per-channel");
  if (!flag_granularity) f.per_tensor = !t.per_channel;
  else if (f.per_tensor == t.per_channel)
    f.overrides.push_back(std::string(f.per_tensor ? "--per-tensor" : "--per-channel") + " (target: " +
                          (t.per_channel ? "per-channel" : "per-tensor") + ")");
}

void copy_target_rules(const quant::target::TargetSpec& t, quant::passes::QuantizeOptions& opt) {
  opt.quantized_ops.insert(t.ops.begin(), t.ops.end());
  opt.shares_input_params.insert(t.shares_input_params.begin(), t.shares_input_params.end());
  for (const auto& [op, fp] : t.fixed_output_params) opt.fixed_output_params[op] = {fp.scale, fp.zero_point};
  opt.per_channel_by_op = t.per_channel_by_op;
  opt.weight_max = t.weight_max;
  // --weights (a flag) sets every weight; the target's depthwise type applies
  // only while its own weight type does.
  if (opt.weights == t.weights) opt.depthwise_weights = t.depthwise_weights;
  // A pair bound is about int8 weights; --weights uint8 needs none.
  if (opt.weights == quant::DType::Int8) opt.weight_pair_bound = t.weight_pair_bound;
  opt.target = t.name;
  opt.same_params.insert(t.same_params.begin(), t.same_params.end());
  opt.placement = t.placement;
  opt.matmul_b_type = t.matmul_b_type;
  opt.matmul_b_schema = t.matmul_b_schema;
  opt.weight_inputs = t.weight_inputs;
  opt.first_layer_weight_max = t.first_layer_weight_max;
  opt.bias = t.bias;
}

// A target that sums u8 x s8 pairs in int16: which layers of the QDQ graph
// could saturate there, given the calibrated activation ranges. Warns on
// stderr and adds the counts to the report.
std::vector<quant::passes::SaturationRisk> check_saturation(const quant::target::TargetSpec& t, const quant::ir::Graph& graph,
                                                            const quant::passes::QuantizeReport& report) {
  if (t.dot == quant::kernels::DotArithmetic::Exact) return {};
  std::map<std::string, std::pair<int32_t, int32_t>> ranges;
  for (const auto& d : report.tensors) {
    if (d.kind != "activation" || d.params.scale.empty()) continue;
    const double s = d.params.scale[0], z = d.params.zero_point.empty() ? 0 : d.params.zero_point[0];
    const bool u8 = d.params.qtype == quant::DType::UInt8;
    const double qmin = u8 ? 0 : -128, qmax = u8 ? 255 : 127;
    auto q = [&](double x) { return static_cast<int32_t>(std::clamp(std::nearbyint(x / s) + z, qmin, qmax)); };
    ranges[d.tensor] = {q(d.range.min), q(d.range.max)};
  }
  auto risks = quant::passes::find_saturation_risks(graph, ranges, t.qdq_int8_activations_as_uint8);
  for (const auto& r : risks)
    spdlog::warn("target {}: {} node '{}': {} of {} weight pairs can saturate int16 on this target's arithmetic given "
                 "the profile's ranges (qrun --target {} --explain counts them on data)",
                 t.name, r.op_type, r.node, r.can_saturate, r.pairs, t.name);
  return risks;
}

// QOperator with int8 activations: the weights of the nodes ONNX Runtime
// multiplies as uint8 x int8 (main graph and bodies) back to the target's
// uint8, the report's weight entries with them.
void uint8_weights_left_in_qdq(quant::ir::Graph& graph, quant::passes::QuantizeReport& report) {
  std::vector<std::string> changed = quant::passes::uint8_weights_where_u8s8(graph);
  quant::passes::QuantizeReport none;  // the pass decides nothing new
  const quant::Status st = quant::passes::rewrite_bodies(
      graph,
      [&](quant::ir::Graph& body, const std::string& scope) -> Expected<quant::passes::QuantizeReport> {
        // A body's report entries are named "<scope>/<tensor>" (subgraphs.h).
        for (const std::string& w : quant::passes::uint8_weights_where_u8s8(body)) changed.push_back(scope + "/" + w);
        return quant::passes::QuantizeReport{};
      },
      &none);
  (void)st;  // the pass itself cannot fail
  if (changed.empty()) return;
  for (auto& t : report.tensors) {
    if (t.kind != "weight" || std::find(changed.begin(), changed.end(), t.tensor + "_quantized") == changed.end()) continue;
    t.params.qtype = quant::DType::UInt8;
    for (auto& z : t.params.zero_point) z += 128;
  }
  report.notes.push_back(std::to_string(changed.size()) +
                         " weights stored as uint8 + 128 where ONNX Runtime multiplies the activation as uint8 (uint8 "
                         "tensors, and int8 ones left in QDQ form, which it rewrites to uint8): its uint8 x uint8 kernels "
                         "are exact where uint8 x int8 pairs saturate (x86 without VNNI)");
}

Status list_targets() {
  for (const auto& t : quant::target::builtin_targets())
    std::printf("%-14s %s\n", t.name.c_str(), t.description.c_str());
  return Status::ok();
}

// Flag combinations CLI11 cannot express; checked before any file is read.
Status check_mode_flags(Flags& f) {
  if (f.group_size != 0 && f.weights != "int4") return Status::bad_input("--group-size applies to --weights int4 only");
  if (f.weights == "int4") {
    if (f.group_size == 0) f.group_size = 32;
    if (Status st = quant::passes::check_group_size(f.group_size); !st) return Status::bad_input("--group-size: " + st.message());
  }
  if (f.equalize_relu6 && !f.equalize) return Status::bad_input("--equalize-relu6 goes with --equalize");
  if (f.weight_rounding != "rtn" && f.weights != "int4" && !f.dynamic)
    return Status::bad_input("--weight-rounding " + f.weight_rounding +
                             " applies to --weights int4 and to --dynamic (int8 MatMul/Gemm weights), not to static " +
                             f.weights + " weights");
  if ((f.gptq_damp_given || f.gptq_act_order) && f.weight_rounding != "gptq")
    return Status::bad_input("--gptq-damp and --gptq-act-order go with --weight-rounding gptq");
  if (!(f.gptq_damp > 0 && f.gptq_damp <= 1))
    return Status::bad_input("--gptq-damp " + std::to_string(f.gptq_damp) +
                             ": the damping is a fraction of the Hessian's mean diagonal, in (0, 1]");
  if (f.dynamic && (f.equalize || f.bias_correction || !f.smooth_quant.empty()))
    return Status::bad_input("--equalize, --bias-correction and --smooth-quant apply to static quantization, not --dynamic");
  if (!f.smooth_quant.empty()) {
    if (f.smooth_quant != "auto") {
      char* end = nullptr;
      f.smooth_alpha = std::strtod(f.smooth_quant.c_str(), &end);
      if (end == f.smooth_quant.c_str() || *end != '\0' || !(f.smooth_alpha >= 0 && f.smooth_alpha <= 1))
        return Status::bad_input("--smooth-quant=" + f.smooth_quant + ": the migration strength alpha is a number in "
                                 "[0, 1], or auto");
    }
    if (f.weights == "int4")
      return Status::bad_input("--smooth-quant eases int8 activations; static --weights int4 keeps activations float");
  }
  if (f.dynamic) {
    if (!f.profile.empty()) return Status::bad_input("--dynamic quantizes activations at run time and takes no --profile");
    if (f.format != "qdq") return Status::bad_input("--dynamic has its own output form; --format does not apply");
  } else if (f.profile.empty()) {
    return Status::bad_input("--profile is required (or --dynamic, which needs none)");
  }
  return Status::ok();
}

// Graph preparation shared by both modes; it keeps value names, so a
// profile's entries still apply.
Status prepare_graph(const Flags& f, quant::ir::Graph& graph, std::vector<std::string>& notes) {
  const int constants = quant::passes::constants_to_initializers(graph);
  if (constants) notes.push_back("turned " + std::to_string(constants) + " Constant nodes into initializers");
  // Values computed from constants are constants for qprofile's Session too
  // (it folds them at prepare time), so the profile has no entry for them.
  auto folded = quant::interp::fold_constants(graph);
  if (!folded) return folded.status().with_context(f.model);
  if (*folded) notes.push_back("folded " + std::to_string(*folded) + " nodes on constants into initializers");
  return quant::passes::fold_batchnorm(graph, notes);
}

// Brings the model to the opset its output needs (DESIGN "Opset upgrade"):
// one warning line, and the report's notes list every rewritten node. Values
// the upgrade adds that hold a profiled value's elements share its entry.
Status upgrade_opset(const Flags& f, quant::ir::Graph& graph, const quant::passes::OpsetNeed& need,
                     std::vector<std::string>& notes, quant::profile::Profile* profile, bool announce = true) {
  const int64_t from = graph.opset();
  if (from >= need.wanted) return Status::ok();
  // Ranks do not depend on the batch: the profile's first-sample shapes give them.
  quant::passes::RankHint rank_of_profiled;
  if (profile)
    rank_of_profiled = [profile](const quant::ir::Value& v) -> int64_t {
      auto it = profile->tensors.find(v.name());
      return it == profile->tensors.end() ? -1 : static_cast<int64_t>(it->second.shape.size());
    };
  auto up = quant::passes::upgrade_opset(graph, need.wanted, rank_of_profiled);
  if (!up && from >= need.required) {
    // The output can be written at the model's own opset, less well.
    if (announce)
      spdlog::warn("{}: {} needs opset {}, and {}; {}", f.model, need.why, need.wanted, up.status().message(), need.fallback);
    notes.push_back(need.why + " needs opset " + std::to_string(need.wanted) + ", and " + up.status().message() + "; " +
                    need.fallback);
    return Status::ok();
  }
  if (!up) return up.status().with_context(f.model);
  if (announce)
    spdlog::warn("{}: upgraded from opset {} to {} for {} ({} nodes rewritten; --report lists them)", f.model, from,
                 need.wanted, need.why, up->notes.size());
  notes.push_back("opset upgraded from " + std::to_string(from) + " to " + std::to_string(need.wanted) + " for " + need.why);
  for (const auto& n : up->notes) notes.push_back("opset upgrade: " + n);
  if (profile)
    for (const auto& [added, same] : up->same_values) {
      auto it = profile->tensors.find(same);
      if (it != profile->tensors.end()) profile->tensors.emplace(added, it->second);
    }
  return Status::ok();
}

void add_target_metadata(const Flags& f, quant::ir::Graph& graph) {
  graph.metadata.emplace_back("qtool.target", f.target);
  std::string overrides;
  for (const auto& o : f.overrides) overrides += (overrides.empty() ? "" : "; ") + o;
  if (!overrides.empty()) graph.metadata.emplace_back("qtool.target_overrides", overrides);
}

// One warning when less than half of the float weight bytes were quantized,
// naming the reasons that kept the rest float, largest first.
void warn_weight_coverage(const Flags& f, const quant::passes::QuantizeReport& r) {
  const auto c = quant::passes::weight_coverage(r);
  if (c.total == 0 || 2 * c.quantized >= c.total) return;
  std::vector<std::pair<int64_t, std::string>> reasons;
  for (const auto& [why, n] : c.float_by_reason) reasons.emplace_back(n, why);
  std::sort(reasons.rbegin(), reasons.rend());
  std::string why;
  for (const auto& [n, reason] : reasons)
    why += fmt::format("{}{:.0f}% {}", why.empty() ? "" : "; ", 100.0 * static_cast<double>(n) / static_cast<double>(c.total), reason);
  spdlog::warn("{}: only {:.0f}% of the float weight bytes were quantized ({} of {}); float: {}", f.model,
               100.0 * c.fraction(), c.quantized, c.total, why);
}

// --weight-rounding into the int4 / dynamic options; gptq takes the Hessians of `calib`.
void set_weight_rounding(const Flags& f, const qtool::Calibration* calib, quant::passes::DynamicOptions& opt) {
  opt.rounding = *quant::calib::weight_rounding_from_name(f.weight_rounding);
  opt.gptq.damp = f.gptq_damp;
  opt.gptq.act_order = f.gptq_act_order;
  opt.hessians = calib ? &calib->hessians : nullptr;
}

// qconvert --dynamic: no profile; weights quantized now, activations at run time.
Status convert_dynamic(const Flags& f, const quant::target::TargetSpec& target) {
  QT_ASSIGN_OR_RETURN(auto graph, quant::onnx_io::load_model(f.model));
  WeightBytes bytes{quant::passes::initializer_bytes(*graph), 0};
  std::vector<std::string> notes;
  quant::passes::DynamicOptions opt;
  opt.weights = f.weights == "int4" ? quant::DType::Int4 : quant::DType::Int8;
  if (f.weights == "int4") opt.group_size = f.group_size;
  opt.weight_pair_bound = target.weight_pair_bound;
  // uint8 weights (the target's or --weights uint8): int8 codes stored + 128.
  opt.uint8_weights = f.weights == "uint8";
  opt.threads = qtool::default_threads();
  opt.exclude_nodes.insert(f.exclude_nodes.begin(), f.exclude_nodes.end());
  opt.exclude_ops.insert(f.exclude_ops.begin(), f.exclude_ops.end());
  // Streaming (DESIGN "Large models"): when the output will hold its weights
  // in a data file, each quantized weight goes there as it is made, so the
  // conversion holds about one layer in memory whatever the model's size.
  std::unique_ptr<quant::io::ExternalDataWriter> writer;
  if (f.external_data == "always" || (f.external_data == "auto" && bytes.before > quant::onnx_io::kAutoExternalBytes)) {
    QT_ASSIGN_OR_RETURN(writer, quant::io::ExternalDataWriter::create(quant::onnx_io::external_data_path(f.output)));
    opt.spill = [&](quant::Tensor t) -> quant::Expected<quant::Tensor> {
      if (static_cast<int64_t>(t.byte_size()) < f.external_threshold) return t;
      return writer->spill(std::move(t));
    };
    opt.spill_bytes = [&](quant::DType d, const quant::Dims& shape, const void* bytes) -> quant::Expected<quant::Tensor> {
      const int64_t size = quant::element_count(shape) * static_cast<int64_t>(quant::dtype_size(d));
      if (size >= f.external_threshold) return writer->spill_bytes(d, shape, bytes);
      quant::Tensor t(d, shape);
      std::memcpy(t.raw(), bytes, static_cast<size_t>(size));
      return t;
    };
  }
  QT_RETURN_IF_ERROR(upgrade_opset(f, *graph, quant::passes::dynamic_opset_need(opt), notes, nullptr));
  QT_RETURN_IF_ERROR(prepare_graph(f, *graph, notes));
  set_weight_rounding(f, nullptr, opt);
  std::optional<qtool::Calibration> calib;
  if (f.weight_rounding == "gptq") {
    // The inputs' Hessians, from a float run of the prepared graph (its node names are the rewritten ones).
    QT_ASSIGN_OR_RETURN(calib, qtool::run_calibration(*graph, f.search.data, f.model, 16, {}, false, true));
    set_weight_rounding(f, &*calib, opt);
    notes.insert(notes.end(), calib->notes.begin(), calib->notes.end());
  }
  auto report = quant::passes::quantize_dynamic(*graph, opt);
  if (!report) return report.status().with_context(f.model);
  // If/Loop/Scan bodies the same way (DESIGN "Subgraphs"); their weights stay
  // inline in the body, so they do not stream to the data file.
  quant::passes::DynamicOptions body_opt = opt;
  body_opt.spill = nullptr;
  body_opt.spill_bytes = nullptr;
  QT_RETURN_IF_ERROR(quant::passes::rewrite_bodies(
                         *graph, [&](quant::ir::Graph& body, const std::string&) { return quant::passes::quantize_dynamic(body, body_opt); },
                         &*report)
                         .with_context(f.model));
  report->notes.insert(report->notes.begin(), notes.begin(), notes.end());
  bytes.after = quant::passes::initializer_bytes(*graph);
  graph->metadata.emplace_back("qtool.version", QTOOL_VERSION);
  graph->metadata.emplace_back("qtool.mode", "dynamic");
  add_target_metadata(f, *graph);
  graph->metadata.emplace_back("qtool.weights", f.weights);
  if (f.weights == "int4") graph->metadata.emplace_back("qtool.group_size", std::to_string(f.group_size));
  if (f.weight_rounding != "rtn") graph->metadata.emplace_back("qtool.weight_rounding", f.weight_rounding);
  graph->producer_name = "qtool";
  graph->producer_version = QTOOL_VERSION;
  warn_weight_coverage(f, *report);
  if (!f.report.empty()) QT_RETURN_IF_ERROR(quant::write_file_atomic(f.report, report_json(f, *report, bytes)));
  return quant::onnx_io::save_model(*graph, f.output, save_options(f, writer.get()));
}

// --equalize (passes/equalize.h) on the prepared float graph. The activations
// it rescales per channel (all of them with --equalize-relu6) take the
// histograms measured again on --data (`calib`, into `profile`); returns their
// names.
Expected<std::set<std::string>> equalize_graph(const Flags& f, quant::ir::Graph& graph, std::vector<std::string>& notes,
                                               quant::profile::Profile* profile, const qtool::Calibration* calib) {
  if (!f.equalize) return std::set<std::string>{};
  quant::passes::EqualizeOptions options;
  options.relu6_to_relu = f.equalize_relu6;
  auto eq = quant::passes::equalize(graph, options);
  if (!eq) return eq.status().with_context(f.model);
  notes.push_back("equalize: " + std::to_string(eq->pairs.size()) + " pairs of layers equalized in " +
                  std::to_string(eq->iterations) + " sweeps" + (eq->converged ? "" : " (not converged)"));
  for (const auto& p : eq->pairs)
    notes.push_back("equalize: '" + p.first + "' -> " + (p.between.empty() ? "" : p.between + " -> ") + "'" + p.second + "'");
  notes.insert(notes.end(), eq->notes.begin(), eq->notes.end());
  // With Clips replaced, the float model itself changed: every activation
  // takes its range from the run on the changed graph.
  std::set<std::string> changed = eq->changed_tensors;
  if (!eq->replaced_clips.empty())
    for (const quant::ir::Value* v : graph.values()) changed.insert(v->name());
  if (profile && calib)
    for (const auto& name : changed)
      if (auto it = calib->tensors.find(name); it != calib->tensors.end()) profile->tensors[name] = it->second;
  return changed;
}

// --smooth-quant (passes/smooth_quant.h) on the prepared, equalized float
// graph; factors from `factors_from`'s channel absmax, alphas from `alphas`
// (auto) or the flag. The smoothed activations take the histograms measured
// again on --data (`calib`, into `profile`); the inserted Muls stay float
// (`float_nodes`). Returns the smoothed activations' names.
Expected<std::set<std::string>> smooth_graph(const Flags& f, quant::ir::Graph& graph, const std::map<std::string, double>& alphas,
                                             const quant::profile::Profile& factors_from, std::vector<std::string>& notes,
                                             quant::profile::Profile* profile, const qtool::Calibration* calib,
                                             std::set<std::string>* float_nodes) {
  if (f.smooth_quant.empty()) return std::set<std::string>{};
  quant::passes::SmoothOptions options;
  options.alpha = f.smooth_alpha;
  options.alpha_by_input = alphas;
  QT_ASSIGN_OR_RETURN(auto sq, quant::passes::smooth_quant(graph, factors_from, options, f.profile));
  notes.push_back("smooth-quant: " + std::to_string(sq.layers.size()) + " activations smoothed");
  for (const auto& l : sq.layers) {
    std::string nodes;
    for (const auto& n : l.nodes) nodes += (nodes.empty() ? "'" : ", '") + n + "'";
    notes.push_back(fmt::format("smooth-quant: '{}' -> {} alpha {:.2f}, max factor {:.4g}, {}", l.input, nodes, l.alpha,
                                l.max_factor,
                                l.folded_into.empty() ? "Mul '" + l.mul + "' inserted (float)"
                                                      : "folded into " + l.folded_into +
                                          (l.mul.empty() ? "" : ", Mul '" + l.mul + "' gives its other readers X back (float)")));
  }
  notes.insert(notes.end(), sq.notes.begin(), sq.notes.end());
  if (float_nodes) float_nodes->insert(sq.float_nodes.begin(), sq.float_nodes.end());
  if (profile && calib)
    for (const auto& name : sq.changed_tensors)
      if (auto it = calib->tensors.find(name); it != calib->tensors.end()) profile->tensors[name] = it->second;
  return sq.changed_tensors;
}

// The one float run --equalize, --bias-correction and --smooth-quant need, on
// the graph as convert_static prepares it (for --smooth-quant=auto, one run
// before smoothing picks the alphas).
Expected<qtool::Calibration> calibrate(const Flags& f, const quant::passes::QuantizeOptions& opt, quant::profile::Profile profile) {
  QT_ASSIGN_OR_RETURN(auto graph, quant::onnx_io::load_model(f.model));
  std::vector<std::string> notes;
  QT_RETURN_IF_ERROR(upgrade_opset(f, *graph, quant::passes::qdq_opset_need(opt), notes, &profile, false));
  QT_RETURN_IF_ERROR(prepare_graph(f, *graph, notes));
  QT_ASSIGN_OR_RETURN(auto changed, equalize_graph(f, *graph, notes, nullptr, nullptr));
  std::map<std::string, double> alphas;
  std::vector<std::string> alpha_notes;
  if (f.smooth_quant == "auto") {
    if (profile.version < 2) return quant::passes::smooth_quant(*graph, profile, {}, f.profile).status();
    QT_ASSIGN_OR_RETURN(alphas, qtool::search_smooth_alphas(*graph, f.search.data, f.model, profile, alpha_notes));
  }
  QT_ASSIGN_OR_RETURN(auto smoothed, smooth_graph(f, *graph, alphas, profile, notes, nullptr, nullptr, nullptr));
  changed.insert(smoothed.begin(), smoothed.end());
  QT_ASSIGN_OR_RETURN(auto c, qtool::run_calibration(*graph, f.search.data, f.model, profile.bins, changed,
                                                     f.bias_correction, f.weight_rounding == "gptq"));
  c.smooth_alpha = std::move(alphas);
  c.notes.insert(c.notes.begin(), alpha_notes.begin(), alpha_notes.end());
  return c;
}

// The flags and the target's rules as insert_qdq's options.
Expected<quant::passes::QuantizeOptions> quantize_options(const Flags& f, const quant::target::TargetSpec& target) {
  quant::passes::QuantizeOptions opt;
  QT_ASSIGN_OR_RETURN(opt.schema, quant::calib::schema_from_name(f.schema));
  opt.activations = *quant::dtype_from_name(f.activations);
  // int4 is for MatMul/Gemm (below); Conv and the rest keep int8 weights.
  // With int4 (MatMul/Gemm only) the other weights take the target's type.
  opt.weights = f.weights == "int4" ? target.weights : *quant::dtype_from_name(f.weights);
  opt.per_channel = !f.per_tensor;
  opt.calibration = f.calibration;
  opt.exclude_nodes.insert(f.exclude_nodes.begin(), f.exclude_nodes.end());
  opt.exclude_ops.insert(f.exclude_ops.begin(), f.exclude_ops.end());
  opt.include_ops.insert(f.include_ops.begin(), f.include_ops.end());
  copy_target_rules(target, opt);
  return opt;
}

// The static conversion, from the model file: `moved` names nodes kept float
// or given 16-bit activations
// on top of --exclude-node (the accuracy search's candidates); `qdq_only`
// skips the QOperator emission (the search evaluates the QDQ form); `calib`
// holds the float run of --equalize / --bias-correction.
Expected<Conversion> convert_static(const Flags& f, const quant::target::TargetSpec& target,
                                    quant::profile::Profile profile, const qtool::Moves& moved,
                                    bool qdq_only, const qtool::Calibration* calib) {
  QT_ASSIGN_OR_RETURN(auto graph, quant::onnx_io::load_model(f.model));
  Conversion c;
  c.bytes_before = quant::passes::initializer_bytes(*graph);
  QT_ASSIGN_OR_RETURN(quant::passes::QuantizeOptions opt, quantize_options(f, target));
  if (moved.wide == quant::DType::Undefined) {
    opt.exclude_nodes.insert(moved.nodes.begin(), moved.nodes.end());
  } else {
    opt.wide_nodes.insert(moved.nodes.begin(), moved.nodes.end());
    opt.wide_activations = moved.wide;
  }
  for (const auto& name : f.exclude_nodes) {
    bool found = false;
    for (const auto& n : graph->nodes()) found |= n->name == name;
    if (!found) return Status::bad_input("--exclude-node '" + name + "': " + f.model + " has no node of that name");
  }
  std::vector<std::string> notes;
  // The search's candidates (qdq_only) upgrade as the final conversion does, without repeating its warning.
  QT_RETURN_IF_ERROR(upgrade_opset(f, *graph, quant::passes::qdq_opset_need(opt), notes, &profile, !qdq_only));
  QT_RETURN_IF_ERROR(prepare_graph(f, *graph, notes));
  QT_RETURN_IF_ERROR(equalize_graph(f, *graph, notes, &profile, calib).status());
  {
    // Factors from the profile as read (smooth_graph then replaces the smoothed entries).
    const quant::profile::Profile read = profile;
    std::set<std::string> float_nodes;
    QT_RETURN_IF_ERROR(smooth_graph(f, *graph, calib ? calib->smooth_alpha : std::map<std::string, double>{}, read,
                                    notes, &profile, calib, &float_nodes).status());
    opt.exclude_nodes.insert(float_nodes.begin(), float_nodes.end());
  }
  // --bias-correction: every measured layer gets a bias to correct, and its
  // float weight is kept to compare the quantized one with.
  std::map<std::string, quant::Tensor> float_weights;
  if (f.bias_correction && calib) {
    quant::passes::add_missing_biases(*graph, calib->means);
    float_weights = quant::passes::float_weights(*graph, calib->means);
  }
  if ((f.bias_correction || f.weight_rounding == "gptq" || f.smooth_quant == "auto") && calib) notes.insert(notes.end(), calib->notes.begin(), calib->notes.end());
  quant::passes::QuantizeReport int4_report;
  if (f.weights == "int4") {
    // Static int4 is weight-only: MatMul/Gemm become MatMulNBits with float
    // activations (accuracy_level 0); the rest is quantized from the profile.
    // MatMulNBits (com.microsoft) then stays float for insert_qdq.
    quant::passes::DynamicOptions o4;
    o4.weights = quant::DType::Int4;
    o4.group_size = f.group_size;
    o4.accuracy_level = 0;
    o4.exclude_nodes = opt.exclude_nodes;
    o4.exclude_ops = opt.exclude_ops;
    set_weight_rounding(f, calib, o4);
    auto r4 = quant::passes::quantize_dynamic(*graph, o4);
    if (!r4) return r4.status().with_context(f.model);
    int4_report = std::move(*r4);
  }
  QT_ASSIGN_OR_RETURN(quant::passes::QuantizeReport lstm_report, quant::passes::quantize_lstms(*graph, opt));
  QT_ASSIGN_OR_RETURN(c.report, quant::passes::insert_qdq(*graph, profile, opt));
  quant::passes::append_lstm_decisions(std::move(lstm_report), c.report);
  // If/Loop/Scan bodies from their entries of the profile (DESIGN "Subgraphs"); they stay in QDQ form.
  QT_RETURN_IF_ERROR(quant::passes::rewrite_bodies(
                         *graph,
                         [&](quant::ir::Graph& body, const std::string& scope) -> Expected<quant::passes::QuantizeReport> {
                           QT_ASSIGN_OR_RETURN(quant::passes::QuantizeReport r, quant::passes::quantize_lstms(body, opt));
                           QT_ASSIGN_OR_RETURN(auto q, quant::passes::insert_qdq(body, quant::passes::body_profile(profile, scope), opt));
                           quant::passes::append_lstm_decisions(std::move(r), q);
                           return q;
                         },
                         &c.report)
                         .with_context(f.model));
  auto& report = c.report;
  if (f.bias_correction && calib)
    QT_RETURN_IF_ERROR(quant::passes::correct_biases(*graph, float_weights, calib->means, report.notes));
  report.notes.insert(report.notes.begin(), notes.begin(), notes.end());
  for (const auto& n : int4_report.nodes)
    if (n.quantized) report.nodes.push_back(n);
  report.tensors.insert(report.tensors.end(), int4_report.tensors.begin(), int4_report.tensors.end());
  if (f.format == "qoperator" && !qdq_only) {
    QT_ASSIGN_OR_RETURN(auto lowered, quant::passes::emit_qoperator(*graph));
    report.notes.insert(report.notes.end(), lowered.begin(), lowered.end());
  }
  if (f.qdq_nodes_uint8_weights) uint8_weights_left_in_qdq(*graph, report);
  // On the graph as written: QOperator nodes are not QDQ patterns.
  for (const auto& r : check_saturation(target, *graph, report))
    report.notes.push_back("target " + target.name + ": " + std::to_string(r.can_saturate) + " of " + std::to_string(r.pairs) +
                           " weight pairs of " + r.op_type + " node '" + r.node + "' can saturate int16");
  c.graph = std::move(graph);
  return c;
}

Status convert(Flags& f, const CLI::App& app) {
  if (f.list_targets) return list_targets();
  if (!f.check_target.empty()) {
    if (f.model.empty() || !f.output.empty() || !f.profile.empty())
      return Status::bad_input("--check-target T takes one MODEL, and no -o or --profile");
    return qtool::check_target(f.check_target, f.model, f.json);
  }
  if (f.json) return Status::bad_input("--json applies to --check-target only");
  if (f.model.empty() || f.output.empty()) return Status::bad_input("a MODEL and -o OUTPUT are required (or --list-targets)");
  // Flag values are checked before any file is read, so a typo fails fast
  // even for a model whose activations would never reach the calibration.
  QT_ASSIGN_OR_RETURN(auto target, quant::target::load_target(f.target));
  f.target = target.name;
  apply_target(target, app, f);
  f.gptq_damp_given = app.count("--gptq-damp") > 0;
  QT_RETURN_IF_ERROR(check_mode_flags(f));
  const bool gptq = f.weight_rounding == "gptq";
  const bool calibrating = f.equalize || f.bias_correction || gptq || !f.smooth_quant.empty();
  QT_RETURN_IF_ERROR(qtool::check_search_flags(f.search, app, f.dynamic, calibrating));
  if (gptq && f.search.data.dirs.empty())
    return Status::bad_input("--weight-rounding gptq needs --data DIR: calibration data to gather each MatMul/Gemm's "
                             "input Hessian on (hqq needs none)");
  if (calibrating && f.search.data.dirs.empty())
    return Status::bad_input(std::string(f.bias_correction ? "--bias-correction" : f.equalize ? "--equalize" : "--smooth-quant") +
                             " needs --data DIR: calibration data to measure " +
                             (f.bias_correction ? "the layers' mean inputs on" : "the rescaled activations on"));
  if (f.dynamic) return convert_dynamic(f, target);
  if (auto r = quant::calib::range_by_name(quant::profile::Histogram(16), f.calibration); !r)
    return Status::bad_input("--calibration: " + r.status().message());
  QT_ASSIGN_OR_RETURN(auto float_graph, quant::onnx_io::load_model(f.model));
  QT_ASSIGN_OR_RETURN(std::string profile_bytes, quant::read_file(f.profile));
  QT_ASSIGN_OR_RETURN(auto profile, quant::profile::load_profile(f.profile));
  if (profile.graph_signature != quant::ir::graph_signature(*float_graph) && !f.force) {
    return Status::bad_input(f.profile + " was made from another model (" + profile.model_path + ") than " + f.model +
                             "; pass --force to use it anyway");
  }
  std::optional<qtool::Calibration> calib;
  if (calibrating) {
    QT_ASSIGN_OR_RETURN(auto opt, quantize_options(f, target));
    QT_ASSIGN_OR_RETURN(calib, calibrate(f, opt, profile));
  }
  const qtool::Calibration* measured = calib ? &*calib : nullptr;
  QT_ASSIGN_OR_RETURN(Conversion c, convert_static(f, target, profile, {}, false, measured));
  // An accuracy target: search the fewest nodes to move to 16 bits or float (tune/search.h).
  Status gate = Status::ok();
  if (f.search.active()) {
    auto build = [&](const qtool::Moves& moved) -> Expected<std::unique_ptr<quant::ir::Graph>> {
      QT_ASSIGN_OR_RETURN(Conversion candidate, convert_static(f, target, profile, moved, true, measured));
      return std::move(candidate.graph);
    };
    QT_ASSIGN_OR_RETURN(auto outcome, qtool::run_search(f.search, *float_graph, target,
                                                        *quant::dtype_from_name(f.activations), build));
    if (!outcome.moves.nodes.empty()) {
      QT_ASSIGN_OR_RETURN(c, convert_static(f, target, profile, outcome.moves, false, measured));
    }
    c.search = outcome.json;
    gate = outcome.gate;
    // The decisions travel with the model (qrun --html shows them).
    if (!outcome.moves.nodes.empty()) {
      nlohmann::json record;
      for (const char* key : {"goal", "met", "before", "after", "moved_to", "moved", "moved_nodes"}) record[key] = outcome.json[key];
      c.graph->metadata.emplace_back("qtool.search", record.dump());
    }
  }
  auto& graph = c.graph;
  auto& report = c.report;

  // Provenance (DESIGN "Output models").
  graph->metadata.emplace_back("qtool.version", QTOOL_VERSION);
  add_target_metadata(f, *graph);
  graph->metadata.emplace_back("qtool.schema", f.schema);
  graph->metadata.emplace_back("qtool.activations", f.activations);
  graph->metadata.emplace_back("qtool.weights", f.weights);
  if (f.weights == "int4") graph->metadata.emplace_back("qtool.group_size", std::to_string(f.group_size));
  if (f.weight_rounding != "rtn") graph->metadata.emplace_back("qtool.weight_rounding", f.weight_rounding);
  graph->metadata.emplace_back("qtool.granularity", f.per_tensor ? "per-tensor" : "per-channel");
  graph->metadata.emplace_back("qtool.calibration", f.calibration);
  graph->metadata.emplace_back("qtool.format", f.format);
  if (f.equalize) graph->metadata.emplace_back("qtool.equalize", f.equalize_relu6 ? "relu6-to-relu" : "on");
  if (f.bias_correction) graph->metadata.emplace_back("qtool.bias_correction", "empirical");
  if (!f.smooth_quant.empty()) graph->metadata.emplace_back("qtool.smooth_quant", f.smooth_quant);
  graph->metadata.emplace_back("qtool.profile_digest", quant::sha256_hex(profile_bytes));
  graph->producer_name = "qtool";
  graph->producer_version = QTOOL_VERSION;

  warn_weight_coverage(f, report);
  // Write the report first: both files are atomic, and a failed report never
  // leaves a model behind that claims a report exists.
  if (!f.report.empty()) {
    const WeightBytes bytes{c.bytes_before, quant::passes::initializer_bytes(*graph)};
    QT_RETURN_IF_ERROR(quant::write_file_atomic(f.report, report_json(f, report, bytes, c.search)));
  }
  QT_RETURN_IF_ERROR(quant::onnx_io::save_model(*graph, f.output, save_options(f, nullptr)));
  return gate;  // exit 3 when the accuracy target could not be met (the best model is written)
}

}  // namespace

// The examples --help ends with; help2man sets the "$ " lines in constant width in
// the man page's EXAMPLES section.
constexpr const char* kExamples =
    "  Defaults (target ort-x86: uint8 activations, 8-bit per-channel weights, QDQ), every decision in report.json:\n"
    "    $ qconvert model.onnx --profile model.profile.json -o model.int8.onnx --report report.json\n"
    "  Full int8 for CPUs with VNNI (qconvert --list-targets shows every target):\n"
    "    $ qconvert model.onnx --profile model.profile.json -o model.int8.onnx --target ort-x86-vnni\n"
    "  No profile: 4-bit grouped weights, int8 activations quantized at run time:\n"
    "    $ qconvert model.onnx --dynamic --weights int4 -o model.int4.onnx\n"
    "  The same with GPTQ rounding, from the Hessians of each MatMul's inputs on calib/:\n"
    "    $ qconvert model.onnx --dynamic --weights int4 --weight-rounding gptq --data calib/ -o model.int4.onnx\n"
    "  Move the fewest nodes to 16-bit activations or float so that the SNR vs float on test/ is at least 30 dB\n"
    "  (exit 3 if impossible):\n"
    "    $ qconvert model.onnx --profile model.profile.json -o model.int8.onnx --data test/ --min-snr 30\n"
    "  Per-tensor weights with cross-layer equalization and bias correction, measured on the calibration data:\n"
    "    $ qconvert model.onnx --profile model.profile.json -o model.int8.onnx --per-tensor --equalize --bias-correction --data calib/\n"
    "  A transformer with activation outliers: SmoothQuant, alpha searched per layer on the calibration data:\n"
    "    $ qconvert model.onnx --profile model.profile.json -o model.int8.onnx --smooth-quant=auto --data calib/\n"
    "  Check a quantized model (from any tool) against a target's rules; exit 3 lists each violation:\n"
    "    $ qconvert --check-target ort-x86-vnni model.int8.onnx\n";

int main(int argc, char** argv) {
  return qtool::guarded_main([&] {
    CLI::App app{"qconvert: quantize a float ONNX model with a qprofile profile"};
    qtool::describe_tool(app, "qconvert", kExamples);
    Flags f;
    app.add_option("model", f.model, "float model (.onnx)")->check(CLI::ExistingFile);
    app.add_option("--profile", f.profile, "profile from qprofile (.json); not with --dynamic")->check(CLI::ExistingFile);
    app.add_option("-o,--output", f.output, "quantized model to write (.onnx)");
    app.add_option("--target", f.target,
                   "the runtime and CPU that will run the model: a built-in name (--list-targets) or a target .json "
                   "file; its rules fill every flag not given (default: ort-x86)");
    app.add_flag("--list-targets", f.list_targets, "print the built-in targets and exit");
    app.add_option("--check-target", f.check_target,
                   "check the quantized MODEL against this target's rules (a name or a .json file) and list every "
                   "violation; exit 0: none, 3: some");
    app.add_flag("--json", f.json, "with --check-target: print the result as JSON");
    app.add_option("--schema", f.schema, "asymmetric|symmetric|symmetric-uint8|power2-scale")
        ->check(CLI::IsMember({"asymmetric", "symmetric", "symmetric-uint8", "power2-scale"}));
    app.add_option("--activations", f.activations, "activation precision")->check(CLI::IsMember({"uint8", "int8", "uint16", "int16"}));
    app.add_option("--weights", f.weights, "weight precision (int4: MatMul/Gemm, groups along K)")
        ->check(CLI::IsMember({"int8", "uint8", "int4"}));
    app.add_option("--group-size", f.group_size, "int4 weights: values per group along K (32, 64, 128, 256; default 32)");
    app.add_flag("--dynamic", f.dynamic, "quantize activations at run time (no profile)");
    auto* pt = app.add_flag("--per-tensor", f.per_tensor, "one scale per weight tensor");
    app.add_flag("--per-channel", f.per_channel, "one scale per output channel (default)")->excludes(pt);
    app.add_option("--calibration", f.calibration, "minmax|percentile[:P]|kl|mse");
    app.add_option("--format", f.format, "output form")->check(CLI::IsMember({"qdq", "qoperator"}));
    app.add_option("--exclude-node", f.exclude_nodes, "keep this node float (repeatable)");
    app.add_option("--exclude-op", f.exclude_ops, "keep every node of this op type float (repeatable)");
    app.add_option("--include-op", f.include_ops, "quantize this op type too (repeatable)");
    app.add_option("--report", f.report, "write every decision as JSON");
    qtool::add_search_flags(app, f.search);
    app.add_flag("--equalize", f.equalize,
                 "cross-layer equalization of Conv/Gemm pairs (through Relu or nothing) before quantizing, for "
                 "per-tensor weights; needs --data (calibration data: the activations between the pairs are profiled again)");
    app.add_flag("--equalize-relu6", f.equalize_relu6,
                 "with --equalize: replace Clip(0, 6) between two layers by Relu so that they equalize too "
                 "(changes the float model where activations exceed 6)");
    app.add_flag("--bias-correction", f.bias_correction,
                 "fold each quantized Conv/Gemm's mean output error (W_q - W) E[x], measured on --data, into its bias");
    app.add_option("--smooth-quant", f.smooth_quant,
                 "SmoothQuant: move activation outliers of MatMul/Gemm inputs into the weights, per input channel "
                 "s = max|x|^alpha / max|w|^(1-alpha); =ALPHA in [0, 1] (default 0.5) or =auto (alpha per layer, "
                 "searched on --data); needs --data and a profile from this qprofile (version 2)")
        ->expected(0, 1)
        ->default_str("0.5")
        ->option_text("[=ALPHA|auto]");
    app.add_option("--external-data", f.external_data,
                   "store the output's weights in OUTPUT.data beside it: auto (when they exceed 1 GiB, or the "
                   "model's do), always, never (one file; fails above protobuf's 2 GiB)")
        ->check(CLI::IsMember({"auto", "always", "never"}));
    app.add_option("--external-data-threshold", f.external_threshold,
                   "with external data: initializers of at least this many bytes go to the data file (default 1024)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--weight-rounding", f.weight_rounding,
                   "how int4 weights (and --dynamic int8 MatMul/Gemm weights) are rounded: rtn (to nearest, default), "
                   "gptq (GPTQ, error compensation from the inputs' Hessians; needs --data), hqq (HQQ, data-free "
                   "optimised group scales)")
        ->check(CLI::IsMember({"rtn", "gptq", "hqq"}));
    app.add_option("--gptq-damp", f.gptq_damp, "gptq: damping as a fraction of the Hessian's mean diagonal (default 0.01)");
    app.add_flag("--gptq-act-order", f.gptq_act_order, "gptq: quantize the inputs with the largest Hessian diagonal first");
    app.add_flag("--force", f.force, "use a profile made from another model");
    app.add_flag("-v,--verbose", f.verbose, "debug logging");
    int code = 0;
    if (!qtool::parse_flags(app, argc, argv, code)) return code;
    qtool::init_logging(f.verbose);
    return qtool::report(convert(f, app));
  });
}
