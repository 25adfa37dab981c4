#include "apps/qconvert/accuracy_search.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "apps/common/cli.h"
#include "apps/common/progress.h"
#include "libquant/passes/quant_points.h"
#include "libquant/tune/evaluate.h"
#include "libquant/tune/layer_alone.h"

namespace qtool {
namespace {

using quant::Expected;
using quant::Status;

// The goal as a metric where higher is better, and its name for people.
struct Goal {
  std::string flag;
  double threshold = 0;
  std::function<double(const quant::tune::Score&)> metric;
  std::string unit;
};

Goal goal_of(const SearchFlags& f) {
  if (f.has_min_snr) return {"--min-snr", f.min_snr, [](const auto& s) { return s.error.snr_db(); }, " dB"};
  if (f.has_min_agreement) return {"--min-agreement", f.min_agreement, [](const auto& s) { return s.agreement(); }, ""};
  // Drop in points: higher drop is worse, so the metric is its negation.
  return {"--max-drop", -f.max_drop, [](const auto& s) { return -s.accuracy_drop_pp(); }, " pp (negated drop)"};
}

nlohmann::json number(double v) {
  if (std::isnan(v)) return "nan";
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(v > 0 ? "inf" : "-inf");
}


}  // namespace

void add_search_flags(CLI::App& app, SearchFlags& f) {
  app.add_option("--data", f.data.dirs, "accuracy target: evaluation data (a directory as qrun reads it; repeatable); --equalize, --bias-correction: calibration data");
  app.add_option("--limit", f.data.limit, "use the first N samples of --data");
  app.add_option("--labels", f.labels, "accuracy target: int64 .npy of class labels, one per row of output 0 (--max-drop)")
      ->check(CLI::ExistingFile);
  app.add_option("--min-snr", f.min_snr, "accuracy target: move the fewest nodes to 16 bits or float until SNR vs float >= DB on --data");
  app.add_option("--max-drop", f.max_drop, "accuracy target: ... until top-1 accuracy drops by <= PP points (needs --labels)");
  app.add_option("--min-agreement", f.min_agreement, "accuracy target: ... until top-1 agreement with float >= F (0..1)");
  app.add_option("--move-to", f.move_to,
                 "accuracy target: where moved layers go: auto (16-bit activations where the target mixes them, then "
                 "float), 16-bit, or float")
      ->check(CLI::IsMember({"auto", "16-bit", "float"}));
}

Status check_search_flags(SearchFlags& f, const CLI::App& app, bool dynamic, bool calibrating) {
  f.has_min_snr = app.count("--min-snr") > 0;
  f.has_max_drop = app.count("--max-drop") > 0;
  f.has_min_agreement = app.count("--min-agreement") > 0;
  const int goals = f.has_min_snr + f.has_max_drop + f.has_min_agreement;
  if (goals > 1) return Status::bad_input("give one accuracy target: --min-snr, --max-drop or --min-agreement");
  if (goals == 0) {
    if (app.count("--move-to")) return Status::bad_input("--move-to goes with an accuracy target (--min-snr, --max-drop or --min-agreement)");
    if (!f.labels.empty() || (!calibrating && (!f.data.dirs.empty() || f.data.limit)))
      return Status::bad_input(calibrating ? "--labels goes with an accuracy target (--min-snr, --max-drop or --min-agreement)"
                                           : "--data, --limit and --labels go with an accuracy target (--min-snr, --max-drop "
                                             "or --min-agreement), or --equalize / --bias-correction / --smooth-quant / --weight-rounding gptq");
    return Status::ok();
  }
  if (dynamic) return Status::bad_input("accuracy targets apply to static quantization, not --dynamic");
  if (f.data.dirs.empty()) return Status::bad_input("an accuracy target needs --data DIR to evaluate on");
  if (f.has_max_drop && f.labels.empty()) return Status::bad_input("--max-drop needs --labels");
  if (f.has_min_agreement && !(f.min_agreement >= 0 && f.min_agreement <= 1))
    return Status::bad_input("--min-agreement is a fraction in [0, 1]");
  if (!std::isfinite(f.min_snr) || !std::isfinite(f.max_drop)) return Status::bad_input("accuracy targets must be finite numbers");
  return Status::ok();
}

Expected<SearchOutcome> run_search(const SearchFlags& f, const quant::ir::Graph& float_graph,
                                   const quant::target::TargetSpec& target, quant::DType activations,
                                   const BuildQuantized& build) {
  const auto start = std::chrono::steady_clock::now();
  const Goal goal = goal_of(f);
  // The levels: 16-bit activations of the conversion's signedness, where the
  // target runs them beside 8-bit ones, then float.
  quant::DType wide = quant::DType::Undefined;
  if (target.mixed_activations != quant::DType::Undefined && quant::dtype_size(activations) == 1)
    wide = activations == quant::DType::UInt8 ? quant::DType::UInt16 : quant::DType::Int16;
  if (f.move_to == "16-bit" && wide == quant::DType::Undefined)
    return Status::bad_input("--move-to 16-bit: target " + target.name +
                             (quant::dtype_size(activations) == 1 ? " runs no 16-bit activations beside 8-bit ones (activations.mixed_type)"
                                                                  : " already has 16-bit activations"));
  std::vector<quant::DType> level_types;
  if (wide != quant::DType::Undefined && f.move_to != "float") level_types.push_back(wide);
  if (f.move_to != "16-bit") level_types.push_back(quant::DType::Undefined);
  std::vector<std::string> levels;
  for (quant::DType t : level_types) levels.push_back(t == quant::DType::Undefined ? "float" : std::string(quant::dtype_name(t)));
  QT_ASSIGN_OR_RETURN(auto sources, collect_samples(f.data));
  std::vector<std::string> input_names;
  for (const auto* v : float_graph.inputs) input_names.push_back(v->name());
  std::vector<std::vector<quant::Tensor>> samples;
  for (const auto& s : sources) {
    QT_ASSIGN_OR_RETURN(auto x, quant::io::load_sample(s, input_names));
    samples.push_back(std::move(x));
  }
  std::vector<int64_t> labels;
  if (!f.labels.empty()) {
    QT_ASSIGN_OR_RETURN(labels, qtool::read_labels(f.labels));
  }
  const quant::tune::RunSetup setup = quant::tune::run_setup(&target, std::nullopt, default_threads());
  // The ranking: each layer alone, measured during the float pass.
  QT_ASSIGN_OR_RETURN(auto converted, build(Moves{}));
  // The nodes the conversion touched: they read a dequantized tensor or feed a Q.
  std::vector<std::string> converted_nodes;
  for (const auto& n : converted->nodes()) {
    if (quant::passes::is_quantize(n.get()) || quant::passes::is_dequantize(n.get()) || n->name.empty()) continue;
    bool touched = false;
    for (const auto* v : n->inputs)
      touched |= v && quant::passes::is_dequantize(v->producer);
    for (const auto* v : n->outputs)
      for (const auto* c : v ? converted->consumers(v) : std::vector<quant::ir::Node*>{}) touched |= quant::passes::is_quantize(c);
    if (touched) converted_nodes.push_back(n->name);
  }
  QT_ASSIGN_OR_RETURN(auto alone, quant::tune::LayerAlone::create(*converted, float_graph, setup));
  auto evaluator = quant::tune::Evaluator::create(float_graph, std::move(samples), std::move(labels), setup,
                                                  alone->reference_observer(), [&] { return alone->end_sample(); });
  if (!evaluator) return evaluator.status().with_context("evaluating on --data");
  std::set<std::string> names;
  for (const auto& n : float_graph.nodes()) names.insert(n->name);
  std::vector<const quant::tune::LayerAlone::Layer*> order;
  for (const auto& l : alone->layers())
    if (names.count(l.node)) order.push_back(&l);  // only named nodes of the model can be kept float
  auto key = [](const quant::tune::LayerAlone::Layer* l) {
    const double snr = l->stats.snr_db();
    if (!l->skipped.empty()) return std::numeric_limits<double>::infinity();  // unmeasured: last
    return std::isnan(snr) ? -std::numeric_limits<double>::infinity() : snr;
  };
  std::stable_sort(order.begin(), order.end(), [&](auto* a, auto* b) { return key(a) < key(b); });
  // A candidate is a layer with the Relu/Clip fused after it: both are kept
  // float together. Quantized nodes no layer covers (an activation whose
  // producer stays float, ...) follow, unranked.
  std::vector<std::string> ranked;
  std::map<std::string, std::vector<std::string>> members;
  std::set<std::string> covered;
  nlohmann::json ranking = nlohmann::json::array();
  for (const auto* l : order) {
    ranked.push_back(l->node);
    for (const auto& m : l->members)
      if (names.count(m)) members[l->node].push_back(m), covered.insert(m);
    ranking.push_back(l->skipped.empty() ? nlohmann::json{{"node", l->node}, {"alone_snr_db", number(l->stats.snr_db())}}
                                         : nlohmann::json{{"node", l->node}, {"skipped", l->skipped}});
    ranking.back()["nodes"] = members[l->node];
  }
  for (const auto& n : converted_nodes)
    if (names.count(n) && !covered.count(n) && !members.count(n)) {
      ranked.push_back(n);
      members[n] = {n};
      ranking.push_back({{"node", n}, {"skipped", "not a layer of its own: reads no dequantized tensor"}, {"nodes", nlohmann::json::array({n})}});
    }
  // The search moves candidates; the conversion moves their member nodes.
  auto expand = [&](const std::vector<std::string>& moved, size_t level) {
    Moves m;
    for (const auto& c : moved) m.nodes.insert(m.nodes.end(), members[c].begin(), members[c].end());
    m.wide = level_types[level];
    return m;
  };
  Progress progress("qconvert search", static_cast<size_t>(f.budget), f.quiet);
  auto evaluate = [&](const std::vector<std::string>& moved, size_t level) -> Expected<double> {
    QT_ASSIGN_OR_RETURN(auto g, build(expand(moved, level)));
    QT_ASSIGN_OR_RETURN(auto score, (*evaluator)->evaluate(std::move(g)));
    progress.tick();
    return goal.metric(score);
  };
  const double threshold = goal.threshold;
  QT_ASSIGN_OR_RETURN(auto result, quant::tune::search_fewest(ranked, {[threshold](double m) { return m >= threshold; }, f.budget, levels},
                                                               evaluate));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  SearchOutcome out;
  out.result = result;
  out.moves = expand(result.moved, result.level);
  const std::string moved_to = levels[result.level];
  const bool drop = goal.flag == "--max-drop";
  auto shown = [&](double m) { return drop ? -m : m; };  // drops are shown as drops
  const double target_value = drop ? f.max_drop : threshold;
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : result.steps)
    steps.push_back({{"step", s.what}, {"moved", s.moved}, {"moved_to", s.moved.empty() ? nlohmann::json() : nlohmann::json(levels[s.level])}, {"metric", number(shown(s.metric))},
                     {"meets", s.meets}});
  out.json = {{"goal", {{"flag", goal.flag}, {"value", target_value}}}, {"samples", (*evaluator)->samples()},
              {"met", result.met}, {"before", number(shown(result.before))}, {"after", number(shown(result.after))},
              {"levels", levels}, {"moved_to", moved_to}, {"moved", result.moved}, {"moved_nodes", out.moves.nodes},
              {"evaluations", result.steps.size()}, {"seconds", seconds},
              {"ranking", ranking}, {"steps", steps}};
  std::string list;
  for (const auto& m : result.moved) list += (list.empty() ? "" : ", ") + m;
  std::printf("accuracy target %s %g: %.4g as converted, %.4g with %zu node(s) moved to %s (%zu evaluations on %zu samples, %.1f s)%s%s\n",
              goal.flag.c_str(), target_value, shown(result.before), shown(result.after), result.moved.size(), moved_to.c_str(),
              result.steps.size(), (*evaluator)->samples(), seconds, list.empty() ? "" : ": ", list.c_str());
  if (!result.met) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "gate failed: accuracy target %s %g not met even with all %zu candidate nodes moved to %s (%.4g); that "
                  "model was written",
                  goal.flag.c_str(), target_value, result.moved.size(), moved_to.c_str(), shown(result.after));
    out.gate = Status::gate_failed(buf);
  }
  return out;
}

}  // namespace qtool
