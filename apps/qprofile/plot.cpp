#include "apps/qprofile/plot.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "apps/common/html_report.h"
#include "libquant/core/file_util.h"

namespace qtool {
namespace {

using quant::profile::Histogram;

constexpr int kWidth = 960, kHeight = 480;
constexpr int kLeft = 80, kRight = 24, kTop = 74, kBottom = 56;
constexpr Rgb kWhite{255, 255, 255}, kAxis{60, 60, 60}, kGrid{228, 228, 228}, kBar{110, 140, 190}, kText{20, 20, 20};

// One colour and dash pattern per method, in assess_methods() order, so that
// coinciding lines stay distinguishable.
struct Style {
  const char* label;
  Rgb color;
  int thickness, dash;
};
constexpr Style kStyles[] = {{"minmax", {0, 0, 0}, 3, 0},
                             {"percentile", {31, 119, 180}, 2, 8},
                             {"kl", {214, 39, 40}, 2, 5},
                             {"mse", {44, 160, 44}, 2, 3}};

std::string short_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

std::string plot_file_name(size_t rank, const std::string& tensor) {
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%03zu_", rank);
  std::string name = tensor.substr(0, 80);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  return prefix + name + ".png";
}

Canvas plot_tensor(const TensorAnalysis& a) {
  Canvas canvas(kWidth, kHeight, kWhite);
  const Histogram& h = a.tensor->hist;
  std::string title = a.name + "  " + quant::dims_to_string(a.tensor->shape) + "  count " + std::to_string(h.count());
  if (h.nan_count() || h.inf_count())
    title += "  nan " + std::to_string(h.nan_count()) + "  inf " + std::to_string(h.inf_count());
  while (title.size() > 4 && Canvas::text_width(title, 2) > kWidth - 20) title.resize(title.size() - 4);
  canvas.text(10, 8, title, kText, 2);
  // Legend: one swatch per method.
  int lx = 10;
  for (const Style& s : kStyles) {
    canvas.fill(lx, 42, lx + 22, 42 + s.thickness + 2, s.color);
    canvas.text(lx + 28, 38, s.label, kText, 2);
    lx += 40 + Canvas::text_width(s.label, 2) + 20;
  }
  const int x0 = kLeft, x1 = kWidth - kRight, y0 = kTop, y1 = kHeight - kBottom;
  canvas.hline(x0, x1, y1, kAxis);
  canvas.vline(x0, y0, y1 + 1, kAxis);
  canvas.text(x0 + (x1 - x0) / 2 - 20, kHeight - 22, "value", kText, 2);
  canvas.text(6, y0 - 14, "count (log)", kText, 1);
  if (h.empty()) {
    canvas.text(x0 + 20, y0 + 40, "no finite values", kText, 2);
    return canvas;
  }

  // x domain: the data range plus a margin, so that lines at min and max stay visible.
  double lo = h.min(), hi = h.max();
  double pad = lo < hi ? (hi - lo) * 0.03 : std::max(std::abs(lo) * 0.1, 1e-6);
  const double dlo = lo - pad, dhi = hi + pad;
  auto px = [&](double v) { return x0 + static_cast<int>(std::lround((v - dlo) / (dhi - dlo) * (x1 - x0))); };

  const int bars = lo < hi ? (x1 - x0) / 3 : 1;
  std::vector<uint64_t> counts = lo < hi ? quant::profile::rebin_counts(h, lo, hi, bars) : std::vector<uint64_t>{h.count()};
  const double peak = static_cast<double>(*std::max_element(counts.begin(), counts.end()));
  const double top = std::log10(1 + peak);
  auto py = [&](double count) { return y1 - static_cast<int>(std::lround(std::log10(1 + count) / top * (y1 - y0 - 8))); };

  // Grid and labels at powers of ten.
  for (double c = 1; c <= peak; c *= 10) {
    int y = py(c);
    canvas.hline(x0 + 1, x1, y, kGrid);
    std::string label = c < 1e4 ? short_num(c) : "1e" + std::to_string(static_cast<int>(std::lround(std::log10(c))));
    canvas.text(x0 - 8 - Canvas::text_width(label, 2), y - 6, label, kText, 2);
  }
  // The four ranges; each method's name sits at its own height next to its lines.
  for (size_t m = 0; m < a.methods.size() && m < std::size(kStyles); ++m) {
    const Style& s = kStyles[m];
    const auto& r = a.methods[m].cost.range;
    for (double v : {static_cast<double>(r.min), static_cast<double>(r.max)}) {
      int x = px(v);
      canvas.vline(x, y0, y1, s.color, s.thickness, s.dash);
      // Labels go right of the line, or left of it near the right edge.
      int tx = x + 4 + Canvas::text_width(s.label) < kWidth ? x + 4 : x - 4 - Canvas::text_width(s.label);
      canvas.text(tx, y0 + 4 + static_cast<int>(m) * 14, s.label, s.color, 1);
    }
  }
  // Bars go over the lines, translucent: a spike at a clip point (the zeros of a
  // Relu at min) stays visible, and so do the lines behind it.
  for (int b = 0; b < bars; ++b) {
    if (counts[static_cast<size_t>(b)] == 0) continue;
    double b0 = lo < hi ? lo + (hi - lo) * b / bars : lo - pad / 4, b1 = lo < hi ? lo + (hi - lo) * (b + 1) / bars : lo + pad / 4;
    int left = px(b0), right = std::max(px(b1), left + 1);
    canvas.blend(left, py(static_cast<double>(counts[static_cast<size_t>(b)])), right, y1, kBar, 0.75);
  }
  // x ticks: min, max and 0 when inside.
  std::vector<double> ticks{lo, hi};
  if (lo < 0 && hi > 0) ticks.push_back(0);
  for (double t : ticks) {
    int x = px(t);
    canvas.vline(x, y1, y1 + 6, kAxis);
    std::string label = short_num(t);
    canvas.text(x - Canvas::text_width(label, 2) / 2, y1 + 10, label, kText, 2);
  }
  return canvas;
}

quant::Status write_plots(const quant::profile::Profile& profile, const std::vector<TensorAnalysis>& tensors,
                          const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return quant::Status::bad_input(dir + ": cannot create the plot directory (" + ec.message() + ")");
  std::string html = "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>qprofile: " +
                     html::escape(profile.model_path) +
                     "</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
                     "td,th{padding:2px 10px;text-align:right}th{background:#eee}img{max-width:100%}</style>"
                     "</head><body>\n<h1>" + html::escape(profile.model_path) + "</h1>\n<p>" +
                     std::to_string(profile.samples) + " samples, " + std::to_string(profile.bins) +
                     " bins per histogram. Tensors ordered hardest first (lowest estimated 8-bit SQNR of the "
                     "chosen range). Counts on a log scale; vertical lines: the range each calibration method "
                     "chooses.</p>\n";
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorAnalysis& a = tensors[i];
    const std::string file = plot_file_name(i, a.name);
    QT_RETURN_IF_ERROR(plot_tensor(a).save_png((std::filesystem::path(dir) / file).string()));
    html += "<h2>" + html::escape(a.name) + " <small>" + quant::dims_to_string(a.tensor->shape) + "</small></h2>\n";
    html += "<table><tr><th>method</th><th>min</th><th>max</th><th>clipped</th><th>SQNR (dB)</th></tr>\n";
    for (const auto& m : a.methods) {
      char row[256];
      std::snprintf(row, sizeof row, "<tr><td>%s%s</td><td>%.6g</td><td>%.6g</td><td>%.4f%%</td><td>%s</td></tr>\n",
                    m.method.c_str(), m.method == a.chosen.method ? " (chosen)" : "", m.cost.range.min,
                    m.cost.range.max, 100 * m.cost.clipped_share,
                    std::isinf(m.cost.sqnr_db) ? "inf" : short_num(m.cost.sqnr_db).c_str());
      html += row;
    }
    html += "</table>\n<img src=\"" + file + "\" alt=\"histogram of " + html::escape(a.name) + "\">\n";
  }
  html += "</body></html>\n";
  return quant::write_file_atomic((std::filesystem::path(dir) / "index.html").string(), html);
}

}  // namespace qtool
