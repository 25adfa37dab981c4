#include "apps/common/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "libquant/core/file_util.h"

namespace qtool::html {
namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Coordinates with one decimal: the SVG stays small and exact enough.
std::string px(double v) { return fmt("%.1f", v); }

// A step of 1, 2 or 5 times a power of ten giving about `ticks` intervals over `span`.
double nice_step(double span, int ticks) {
  const double raw = span / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

// Ticks at multiples of a nice step inside [lo, hi].
std::vector<double> ticks_in(double lo, double hi, int count) {
  std::vector<double> out;
  if (!(hi > lo)) return {lo};
  const double step = nice_step(hi - lo, count);
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return out;
}

std::string text_el(double x, double y, std::string_view s, const char* extra = "") {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"" + extra + ">" + escape(s) + "</text>\n";
}

std::string svg_open(double width, double height, std::string_view title) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" + px(width) + "\" height=\"" + px(height) +
         "\" viewBox=\"0 0 " + px(width) + " " + px(height) + "\" role=\"img\" aria-label=\"" + escape(title) +
         "\" font-family=\"sans-serif\" font-size=\"11\">\n<title>" + escape(title) + "</title>\n";
}

// A legend entry's advance: swatch, gap and text (11px sans-serif, about 6.2px per character).
double legend_advance(const std::string& label) { return 28 + 6.2 * static_cast<double>(label.size()); }

double legend_width(const std::vector<std::pair<std::string, std::string>>& entries) {
  double w = 0;
  for (const auto& e : entries) w += legend_advance(e.first);
  return w;
}

// A legend row of colour swatches from (x, y).
std::string legend(double x, double y, const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out;
  for (const auto& [label, color] : entries) {
    out += "<rect x=\"" + px(x) + "\" y=\"" + px(y - 9) + "\" width=\"12\" height=\"10\" fill=\"" + escape(color) + "\"/>\n";
    out += text_el(x + 16, y, label);
    x += legend_advance(label);
  }
  return out;
}

constexpr std::size_t kMaxLabel = 48;  // longer category labels are cut, the full name is in the bar's tooltip

std::string short_label(const std::string& s) {
  return s.size() <= kMaxLabel ? s : s.substr(0, kMaxLabel - 3) + "...";
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string number(double v, int digits) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string bar_chart_svg(const BarChart& c) {
  const size_t n = c.categories.size(), k = std::max<size_t>(1, c.series.size());
  const double bar_w = n * k > 120 ? 4 : 9, left = 64, right = 16, top = 44, plot_h = 240;
  size_t longest = 0;
  for (const auto& cat : c.categories) longest = std::max(longest, short_label(cat).size());
  // Labels run down and right at 45 degrees from under their group.
  const double label_run = 5.8 * static_cast<double>(longest) * 0.71;
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& s : c.series) entries.emplace_back(s.label, s.color);
  const double plot_w = std::max({480.0, (bar_w * static_cast<double>(k) + 6) * static_cast<double>(n), legend_width(entries)});
  // Groups spread over the plot, bars centred in each; a few layers do not crowd one corner.
  const double group_w = n ? plot_w / static_cast<double>(n) : plot_w;
  const double bars_w = bar_w * static_cast<double>(k);
  const double width = left + plot_w + right + label_run, height = top + plot_h + 16 + label_run;

  double lo = 0, hi = 0;
  for (const auto& s : c.series)
    for (double v : s.values)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (hi == lo) hi = lo + 1;
  const double pad = (hi - lo) * 0.08;
  hi += pad;
  if (lo < 0) lo -= pad;
  auto y = [&](double v) { return top + plot_h - (v - lo) / (hi - lo) * plot_h; };

  std::string out = svg_open(width, height, c.title);
  out += text_el(left, 16, c.title, " font-size=\"14\" font-weight=\"bold\"");
  out += legend(left, 34, entries);
  for (double t : ticks_in(lo, hi, 6)) {
    out += "<line x1=\"" + px(left) + "\" x2=\"" + px(left + plot_w) + "\" y1=\"" + px(y(t)) + "\" y2=\"" + px(y(t)) +
           "\" stroke=\"#e2e2e2\"/>\n";
    out += text_el(left - 6, y(t) + 4, number(t, 3), " text-anchor=\"end\"");
  }
  out += text_el(14, top + plot_h / 2, c.y_label,
                 (" text-anchor=\"middle\" transform=\"rotate(-90 14 " + px(top + plot_h / 2) + ")\"").c_str());
  for (size_t i = 0; i < n; ++i) {
    const double gx = left + group_w * static_cast<double>(i) + (group_w - bars_w) / 2;
    for (size_t j = 0; j < c.series.size(); ++j) {
      const BarSeries& s = c.series[j];
      if (i >= s.values.size()) continue;
      if (i < s.absent.size() && s.absent[i]) continue;
      const double v = s.values[i], x = gx + bar_w * static_cast<double>(j);
      const std::string tip = "<title>" + escape(c.categories[i] + ": " + s.label + " " + number(v)) + "</title>";
      if (std::isfinite(v)) {
        const double y0 = y(std::max(v, 0.0)), y1 = y(std::min(v, 0.0));
        out += "<rect x=\"" + px(x) + "\" y=\"" + px(y0) + "\" width=\"" + px(bar_w - 1) + "\" height=\"" +
               px(std::max(1.0, y1 - y0)) + "\" fill=\"" + escape(s.color) + "\">" + tip + "</rect>\n";
      } else if (std::isinf(v)) {
        // An arrow at the edge of the plot: "no error" (+inf dB) or "all error".
        const double tip_y = v > 0 ? top : top + plot_h, base = v > 0 ? top + 8 : top + plot_h - 8;
        out += "<polygon points=\"" + px(x) + "," + px(base) + " " + px(x + bar_w - 1) + "," + px(base) + " " +
               px(x + (bar_w - 1) / 2) + "," + px(tip_y) + "\" fill=\"" + escape(s.color) + "\">" + tip + "</polygon>\n";
        out += text_el(x + bar_w / 2, v > 0 ? top - 2 : top + plot_h + 10, number(v),
                       " font-size=\"9\" text-anchor=\"middle\"");
      } else {
        out += "<text x=\"" + px(x + bar_w / 2) + "\" y=\"" + px(y(0) - 3) +
               "\" font-size=\"9\" fill=\"#c00000\" text-anchor=\"middle\">NaN" + tip + "</text>\n";
      }
    }
    const double lx = gx + bars_w / 2 - 3, ly = top + plot_h + 10;
    out += "<text x=\"" + px(lx) + "\" y=\"" + px(ly) + "\" font-size=\"10\" transform=\"rotate(45 " +
           px(lx) + " " + px(ly) + ")\">" + escape(short_label(c.categories[i])) + "<title>" + escape(c.categories[i]) +
           "</title></text>\n";
  }
  out += "<line x1=\"" + px(left) + "\" x2=\"" + px(left + plot_w) + "\" y1=\"" + px(y(0)) + "\" y2=\"" + px(y(0)) +
         "\" stroke=\"#444\"/>\n";
  out += "<line x1=\"" + px(left) + "\" x2=\"" + px(left) + "\" y1=\"" + px(top) + "\" y2=\"" + px(top + plot_h) +
         "\" stroke=\"#444\"/>\n</svg>\n";
  return out;
}

std::string histogram_svg(const HistogramChart& c) {
  const double width = 900, left = 64, right = 20, top = 58, plot_h = 200, height = top + plot_h + 40;
  const double plot_w = width - left - right;
  const double lo = c.lo, hi = c.hi > c.lo ? c.hi : c.lo + 1;
  auto x = [&](double v) { return left + (v - lo) / (hi - lo) * plot_w; };
  double peak = 0;
  for (const auto& s : c.series)
    for (double v : s.counts) peak = std::max(peak, v);
  const double top_log = std::log10(1 + std::max(peak, 1.0));
  auto y = [&](double count) { return top + plot_h - std::log10(1 + count) / top_log * (plot_h - 6); };

  std::string out = svg_open(width, height, c.title);
  out += text_el(left, 16, c.title, " font-size=\"13\" font-weight=\"bold\"");
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& s : c.series) entries.emplace_back(s.label, s.color);
  // A marker's label once in the legend, however many lines carry it (a range's min and max).
  for (const auto& m : c.markers)
    if (std::none_of(entries.begin(), entries.end(), [&](const auto& e) { return e.first == m.label && e.second == m.color; }))
      entries.emplace_back(m.label, m.color);
  out += legend(left, 34, entries);
  for (double p = 1; p <= peak; p *= 10) {
    out += "<line x1=\"" + px(left) + "\" x2=\"" + px(left + plot_w) + "\" y1=\"" + px(y(p)) + "\" y2=\"" + px(y(p)) +
           "\" stroke=\"#e2e2e2\"/>\n";
    out += text_el(left - 6, y(p) + 4, number(p, 3), " text-anchor=\"end\"");
  }
  out += text_el(14, top + plot_h / 2, "count (log)",
                 (" text-anchor=\"middle\" transform=\"rotate(-90 14 " + px(top + plot_h / 2) + ")\"").c_str());
  // Each series as a filled step outline, translucent so that overlaps show.
  for (const auto& s : c.series) {
    if (s.counts.empty()) continue;
    const double bw = (hi - lo) / static_cast<double>(s.counts.size());
    std::string pts = px(x(lo)) + "," + px(y(0));
    for (size_t i = 0; i < s.counts.size(); ++i) {
      const double h = y(s.counts[i]);
      pts += " " + px(x(lo + bw * static_cast<double>(i))) + "," + px(h) + " " + px(x(lo + bw * static_cast<double>(i + 1))) +
             "," + px(h);
    }
    pts += " " + px(x(hi)) + "," + px(y(0));
    out += "<polygon points=\"" + pts + "\" fill=\"" + escape(s.color) + "\" fill-opacity=\"0.35\" stroke=\"" +
           escape(s.color) + "\" stroke-width=\"1\"><title>" + escape(s.label) + "</title></polygon>\n";
  }
  for (size_t i = 0; i < c.markers.size(); ++i) {
    const Marker& m = c.markers[i];
    if (!(m.value >= lo && m.value <= hi)) continue;  // outside the drawn range (or NaN): listed in the legend only
    const double mx = x(m.value);
    out += "<line x1=\"" + px(mx) + "\" x2=\"" + px(mx) + "\" y1=\"" + px(top) + "\" y2=\"" + px(top + plot_h) +
           "\" stroke=\"" + escape(m.color) + "\" stroke-width=\"2\"" + (m.dashed ? " stroke-dasharray=\"5,3\"" : "") +
           "><title>" + escape(m.label + " " + number(m.value, 6)) + "</title></line>\n";
    const bool right_side = mx + 70 < left + plot_w;
    out += text_el(right_side ? mx + 3 : mx - 3, top + 10 + 11 * static_cast<double>(i % 4), number(m.value),
                   right_side ? " font-size=\"9\"" : " font-size=\"9\" text-anchor=\"end\"");
  }
  for (double t : ticks_in(lo, hi, 8)) {
    out += "<line x1=\"" + px(x(t)) + "\" x2=\"" + px(x(t)) + "\" y1=\"" + px(top + plot_h) + "\" y2=\"" +
           px(top + plot_h + 5) + "\" stroke=\"#444\"/>\n";
    out += text_el(x(t), top + plot_h + 17, number(t, 3), " text-anchor=\"middle\"");
  }
  out += "<line x1=\"" + px(left) + "\" x2=\"" + px(left + plot_w) + "\" y1=\"" + px(top + plot_h) + "\" y2=\"" +
         px(top + plot_h) + "\" stroke=\"#444\"/>\n</svg>\n";
  return out;
}

Page::Page(std::string title) : title_(std::move(title)) {}

void Page::heading(std::string_view text, int level) {
  const std::string tag = "h" + std::to_string(std::clamp(level, 1, 6));
  body_ += "<" + tag + ">" + escape(text) + "</" + tag + ">\n";
}

void Page::paragraph(std::string_view text) { body_ += "<p>" + escape(text) + "</p>\n"; }

void Page::facts(const std::vector<std::pair<std::string, std::string>>& items) {
  body_ += "<dl>\n";
  for (const auto& [term, value] : items) body_ += "<dt>" + escape(term) + "</dt><dd>" + escape(value) + "</dd>\n";
  body_ += "</dl>\n";
}

void Page::table(const Table& t) {
  body_ += "<table>\n";
  if (!t.caption.empty()) body_ += "<caption>" + escape(t.caption) + "</caption>\n";
  auto cls = [&](size_t i) { return i < t.numeric.size() && t.numeric[i] ? " class=\"num\"" : ""; };
  body_ += "<thead><tr>";
  for (size_t i = 0; i < t.header.size(); ++i) body_ += std::string("<th") + cls(i) + ">" + escape(t.header[i]) + "</th>";
  body_ += "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    body_ += "<tr>";
    for (size_t i = 0; i < row.size(); ++i) body_ += std::string("<td") + cls(i) + ">" + escape(row[i]) + "</td>";
    body_ += "</tr>\n";
  }
  body_ += "</tbody></table>\n";
}

void Page::chart(std::string svg) { body_ += "<figure>\n" + svg + "</figure>\n"; }

std::string Page::html() const {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\n<title>" + escape(title_) +
         "</title>\n<style>\n"
         "body{font-family:sans-serif;margin:1.5em 2em;color:#222;background:#fff}\n"
         "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}h3{font-size:1em}\n"
         "table{border-collapse:collapse;margin:.6em 0;font-size:.9em}caption{text-align:left;font-weight:bold}\n"
         // Long tensor names wrap anywhere, but no cell is squeezed below a short word.
         "th,td{padding:2px 9px;border-bottom:1px solid #eee;text-align:left;overflow-wrap:anywhere;min-width:4.5em}\n"
         "th{background:#f0f0f0}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}td.num{white-space:nowrap}td:not(.num){min-width:10em}\n"
         "dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px}dt{font-weight:bold}dd{margin:0}\n"
         "figure{margin:.8em 0;overflow-x:auto}svg.chart{max-width:none;background:#fff}\n"
         "</style></head><body>\n<h1>" +
         escape(title_) + "</h1>\n" + body_ + "</body></html>\n";
}

quant::Status Page::check_path(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return quant::Status::bad_input(path + ": directory " + dir.string() + " does not exist");
  if (fs::is_directory(target, ec)) return quant::Status::bad_input(path + ": is a directory, expected an .html file");
  return quant::Status::ok();
}

quant::Status Page::write(const std::string& path) const { return quant::write_file_atomic(path, html()); }

}  // namespace qtool::html
