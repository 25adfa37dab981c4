#include "apps/qprofile/show.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/qprofile/plot.h"
#include "apps/qprofile/show_report.h"

namespace qtool {
namespace {

using quant::Status;
using quant::calib::MethodCost;
using quant::profile::Histogram;

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string sqnr_text(double db) { return std::isinf(db) ? "inf" : fmt("%.1f dB", db); }

void print_block(const TensorAnalysis& a, const std::string& calibration) {
  const Histogram& h = a.tensor->hist;
  std::printf("%s  %s %s  count %llu  mean %s  nan %llu  inf %llu\n", a.name.c_str(), a.tensor->dtype.c_str(),
              quant::dims_to_string(a.tensor->shape).c_str(), static_cast<unsigned long long>(h.count()),
              h.empty() ? "-" : fmt("%.6g", h.mean()).c_str(), static_cast<unsigned long long>(h.nan_count()),
              static_cast<unsigned long long>(h.inf_count()));
  std::printf("  %-16s %13s %13s %10s %10s\n", "method", "min", "max", "clipped", "SQNR");
  auto row = [&](const MethodCost& m, bool chosen) {
    std::printf("  %-16s %13.6g %13.6g %9.4f%% %10s%s\n", m.method.c_str(), m.cost.range.min, m.cost.range.max,
                100 * m.cost.clipped_share, sqnr_text(m.cost.sqnr_db).c_str(), chosen ? "  <- chosen" : "");
  };
  bool listed = false;
  for (const auto& m : a.methods) {
    row(m, m.method == calibration);
    listed |= m.method == calibration;
  }
  if (!listed) row(a.chosen, true);
}

// One line per row of values over [min, max]; bar length is log-scaled so that
// sparse tails stay visible next to the bulk.
void print_ascii_histogram(const TensorAnalysis& a) {
  const Histogram& h = a.tensor->hist;
  if (h.empty()) {
    std::printf("  (no finite values)\n");
    return;
  }
  const double lo = h.min(), hi = h.max();
  const int rows = lo < hi ? 40 : 1;
  std::vector<uint64_t> counts = lo < hi ? quant::profile::rebin_counts(h, lo, hi, rows) : std::vector<uint64_t>{h.count()};
  const uint64_t peak = *std::max_element(counts.begin(), counts.end());
  const double clip_lo = a.chosen.cost.range.min, clip_hi = a.chosen.cost.range.max;
  std::printf("\n  histogram over [min, max], log-scaled bars; '#' kept, '-' clipped by %s [%.6g, %.6g]\n",
              a.chosen.method.c_str(), clip_lo, clip_hi);
  constexpr int kWidth = 50;
  for (int r = 0; r < rows; ++r) {
    const double r0 = lo + (hi - lo) * r / rows, r1 = r + 1 == rows ? hi : lo + (hi - lo) * (r + 1) / rows;
    const uint64_t c = counts[static_cast<size_t>(r)];
    const int len = c == 0 ? 0 : std::max(1, static_cast<int>(std::lround(kWidth * std::log1p(static_cast<double>(c)) /
                                                                          std::log1p(static_cast<double>(peak)))));
    // A row is clipped when it lies outside the range; a row holding a clip point is marked.
    const bool clipped = r1 < clip_lo || r0 > clip_hi;
    std::string bar(static_cast<size_t>(len), clipped ? '-' : '#');
    bar.resize(kWidth, ' ');
    std::string mark;
    if (clip_lo > lo && clip_lo >= r0 && clip_lo < r1) mark += "  <- clip min " + fmt("%.6g", clip_lo);
    if (clip_hi < hi && clip_hi >= r0 && (clip_hi < r1 || r + 1 == rows)) mark += "  <- clip max " + fmt("%.6g", clip_hi);
    std::printf("  [%12.5g, %12.5g%c %10llu |%s|%s\n", r0, r1, r + 1 == rows ? ']' : ')', static_cast<unsigned long long>(c),
                bar.c_str(), mark.c_str());
  }
}

nlohmann::ordered_json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json cost_json(const MethodCost& m) {
  return {{"min", m.cost.range.min},
          {"max", m.cost.range.max},
          {"clipped", m.cost.clipped_share},
          {"sqnr_db", number_or_null(m.cost.sqnr_db)}};
}

nlohmann::ordered_json analysis_json(const quant::profile::Profile& p, const std::vector<TensorAnalysis>& all,
                                     const ShowOptions& o) {
  nlohmann::ordered_json j;
  j["profile"] = o.profile;
  j["model"] = {{"path", p.model_path}, {"digest", p.model_digest}, {"signature", p.graph_signature}};
  j["samples"] = p.samples;
  j["bins"] = p.bins;
  j["calibration"] = o.calibration;
  j["tensors"] = nlohmann::ordered_json::array();
  for (const auto& a : all) {
    const Histogram& h = a.tensor->hist;
    nlohmann::ordered_json t;
    t["name"] = a.name;
    t["dtype"] = a.tensor->dtype;
    t["shape"] = a.tensor->shape;
    t["count"] = h.count();
    t["min"] = number_or_null(h.min());
    t["max"] = number_or_null(h.max());
    t["mean"] = number_or_null(h.mean());
    t["nan"] = h.nan_count();
    t["inf"] = h.inf_count();
    t["chosen"] = cost_json(a.chosen);
    for (const auto& m : a.methods) t["methods"][m.method] = cost_json(m);
    j["tensors"].push_back(std::move(t));
  }
  return j;
}

}  // namespace

quant::Expected<std::vector<TensorAnalysis>> analyse_profile(const quant::profile::Profile& profile,
                                                            const std::string& calibration) {
  std::vector<TensorAnalysis> out;
  for (const auto& [name, tp] : profile.tensors) {
    TensorAnalysis a;
    a.name = name;
    a.tensor = &tp;
    a.methods = quant::calib::assess_methods(tp.hist);
    auto it = std::find_if(a.methods.begin(), a.methods.end(), [&](const MethodCost& m) { return m.method == calibration; });
    if (it != a.methods.end()) {
      a.chosen = *it;
    } else {
      QT_ASSIGN_OR_RETURN(quant::calib::Range r, quant::calib::range_by_name(tp.hist, calibration));
      a.chosen = {calibration, quant::calib::assess_range(tp.hist, r)};
    }
    out.push_back(std::move(a));
  }
  std::stable_sort(out.begin(), out.end(), [](const TensorAnalysis& x, const TensorAnalysis& y) {
    if (x.chosen.cost.sqnr_db != y.chosen.cost.sqnr_db) return x.chosen.cost.sqnr_db < y.chosen.cost.sqnr_db;
    if (x.chosen.cost.clipped_share != y.chosen.cost.clipped_share)
      return x.chosen.cost.clipped_share > y.chosen.cost.clipped_share;
    return x.name < y.name;
  });
  return out;
}

Status show_profile(const ShowOptions& o) {
  if (!o.html.empty()) QT_RETURN_IF_ERROR(html::Page::check_path(o.html));
  QT_ASSIGN_OR_RETURN(auto profile, quant::profile::load_profile(o.profile));
  QT_ASSIGN_OR_RETURN(auto all, analyse_profile(profile, o.calibration));
  if (!o.tensor.empty()) {
    auto it = std::find_if(all.begin(), all.end(), [&](const TensorAnalysis& a) { return a.name == o.tensor; });
    if (it == all.end()) {
      std::string names;
      for (size_t i = 0; i < all.size() && i < 8; ++i) names += (i ? ", " : "") + all[i].name;
      return Status::bad_input(o.profile + ": no tensor named '" + o.tensor + "' (" + std::to_string(all.size()) +
                               " tensors, hardest first: " + names + (all.size() > 8 ? ", ..." : "") + ")");
    }
    all = {*it};
  }
  if (!o.plot_dir.empty()) QT_RETURN_IF_ERROR(write_plots(profile, all, o.plot_dir));
  if (!o.html.empty()) QT_RETURN_IF_ERROR(profile_page(profile, all, o).write(o.html));

  if (o.json) {
    std::printf("%s\n", analysis_json(profile, all, o).dump(2).c_str());
    return Status::ok();
  }
  if (o.tensor.empty()) {
    std::printf("%s: model %s, %lld samples, %d bins, %zu tensors\n", o.profile.c_str(), profile.model_path.c_str(),
                static_cast<long long>(profile.samples), profile.bins, all.size());
    std::printf("chosen range: %s; hardest tensors first (lowest estimated 8-bit SQNR)\n\n", o.calibration.c_str());
  }
  for (const auto& a : all) {
    print_block(a, o.calibration);
    if (!o.tensor.empty()) print_ascii_histogram(a);
    std::printf("\n");
  }
  if (!o.plot_dir.empty()) std::printf("plots: %s/index.html\n", o.plot_dir.c_str());
  if (!o.html.empty()) std::printf("report: %s\n", o.html.c_str());
  return Status::ok();
}

}  // namespace qtool
