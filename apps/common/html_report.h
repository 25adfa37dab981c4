// The one-page HTML reports of `qrun --per-layer --html`, `qrun --sensitivity
// --html` and `qprofile show --html`: a self-contained page (inline CSS and
// SVG charts, no script, nothing fetched), written atomically. Every text from
// a model or profile (tensor and node names hold <, & or quotes) goes through
// escape(); the page builder escapes what it is given, so callers pass plain
// text and only the chart functions produce markup.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "libquant/core/status.h"

namespace qtool::html {

// Text for an element or a quoted attribute: & < > " ' as entities.
std::string escape(std::string_view text);

// A number for a table cell or a label: "%.*g", and "inf", "-inf", "NaN".
std::string number(double v, int digits = 4);

// One bar chart over categories in a fixed order (layers in execution order):
// one bar per series and category, grouped. A value that is not finite is not
// drawn as a bar: +inf (identical tensors) shows as an arrow at the top with
// "inf", NaN as a red "NaN" mark, so that neither hides.
struct BarSeries {
  std::string label;
  std::string color;            // a CSS colour, e.g. "#3b6fb6"
  std::vector<double> values;   // one per category
  std::vector<bool> absent;     // optional: true where a category has no value (drawn as nothing)
};
struct BarChart {
  std::string title;
  std::string y_label;                  // e.g. "SNR (dB)"
  std::vector<std::string> categories;  // x labels, drawn rotated
  std::vector<BarSeries> series;
};
std::string bar_chart_svg(const BarChart& chart);

// Histograms of one tensor over [lo, hi] (lo < hi), every series on the same
// equal-width bins, counts on a log scale; vertical markers at given values
// (clip ranges), each label once in the legend (give a range's min and max
// the same label and colour).
struct HistogramSeries {
  std::string label;
  std::string color;
  std::vector<double> counts;  // equal bins over [lo, hi]
};
struct Marker {
  std::string label;
  std::string color;
  double value = 0;
  bool dashed = false;
};
struct HistogramChart {
  std::string title;
  double lo = 0, hi = 1;
  std::vector<HistogramSeries> series;
  std::vector<Marker> markers;
};
std::string histogram_svg(const HistogramChart& chart);

// A table of plain-text cells; numeric columns (numeric[i]) align right.
struct Table {
  std::vector<std::string> header;
  std::vector<bool> numeric;
  std::vector<std::vector<std::string>> rows;
  std::string caption;
};

class Page {
 public:
  explicit Page(std::string title);
  void heading(std::string_view text, int level = 2);
  void paragraph(std::string_view text);
  // A definition list of (term, value) pairs: a run's summary.
  void facts(const std::vector<std::pair<std::string, std::string>>& items);
  void table(const Table& table);
  // Markup made by bar_chart_svg / histogram_svg.
  void chart(std::string svg);
  std::string html() const;
  // Whether `path` can take the page: its folder exists and it is not a
  // folder itself. Checked before a long run so that a typo fails at once.
  static quant::Status check_path(const std::string& path);
  // The page to `path` through write_file_atomic: exit 2 naming the file when
  // it cannot be written, and never a partial file.
  quant::Status write(const std::string& path) const;

 private:
  std::string title_;
  std::string body_;
};

}  // namespace qtool::html
