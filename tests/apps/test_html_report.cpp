#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "apps/common/html_report.h"
#include "libquant/core/file_util.h"

namespace html = qtool::html;

namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// Every '<' opens a tag, a comment or the doctype: text from the model never
// puts a raw '<' or '&' into the page.
void check_no_raw_markup(const std::string& page, const std::string& hostile) {
  CHECK(page.find(hostile) == std::string::npos);
  for (size_t i = page.find('&'); i != std::string::npos; i = page.find('&', i + 1)) {
    const size_t semi = page.find(';', i);
    REQUIRE(semi != std::string::npos);
    const std::string entity = page.substr(i, semi - i + 1);
    CHECK((entity == "&amp;" || entity == "&lt;" || entity == "&gt;" || entity == "&quot;" || entity == "&#39;"));
  }
}

const std::string kHostile = "conv<1>&\"x\"'<script>alert(1)</script>";

}  // namespace

TEST_CASE("escape turns markup characters into entities", "[apps][html]") {
  CHECK(html::escape("a<b>&\"c\"'d") == "a&lt;b&gt;&amp;&quot;c&quot;&#39;d");
  CHECK(html::escape("plain/name_1.2") == "plain/name_1.2");
  CHECK(html::escape("") == "");
}

TEST_CASE("numbers read inf, -inf and NaN", "[apps][html]") {
  CHECK(html::number(12.345678) == "12.35");
  CHECK(html::number(12.345678, 6) == "12.3457");
  CHECK(html::number(std::numeric_limits<double>::infinity()) == "inf");
  CHECK(html::number(-std::numeric_limits<double>::infinity()) == "-inf");
  CHECK(html::number(std::numeric_limits<double>::quiet_NaN()) == "NaN");
}

TEST_CASE("a page escapes every text it is given, in tables, facts, headings and charts", "[apps][html]") {
  html::Page page("report for " + kHostile);
  page.facts({{"model", kHostile}});
  page.heading(kHostile);
  page.paragraph(kHostile);
  page.table({{"tensor", "SNR"}, {false, true}, {{kHostile, "1.5"}}, kHostile});
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  page.chart(html::bar_chart_svg({kHostile, "SNR (dB)", {kHostile, "b", "c", "d"}, {{kHostile, "#123456", {30, inf, nan, -5}, {}}}}));
  page.chart(html::histogram_svg({kHostile, -1, 1, {{kHostile, "#654321", {1, 10, 100, 0}}}, {{kHostile, "red", 0.5, true}}}));
  const std::string s = page.html();
  check_no_raw_markup(s, kHostile);
  CHECK(count(s, "<script") == 0);
  CHECK(count(s, "conv&lt;1&gt;&amp;&quot;x&quot;&#39;&lt;script&gt;") >= 8);
  CHECK(s.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(s.find("</html>") != std::string::npos);
  // No reference to anything outside the page.
  CHECK(s.find("src=") == std::string::npos);
  CHECK(s.find("href=") == std::string::npos);
  CHECK(s.find("http://") == s.find("http://www.w3.org/2000/svg"));
}

TEST_CASE("bar charts draw finite values as bars and mark inf and NaN", "[apps][html]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  html::BarChart c{"t", "dB", {"a", "b", "c", "d", "e"}, {{"s", "#000", {10, -3, inf, nan, 7}, {false, false, false, false, true}}}};
  const std::string svg = html::bar_chart_svg(c);
  CHECK(count(svg, "<svg") == 1);
  CHECK(count(svg, "</svg>") == 1);
  CHECK(count(svg, "<rect") == 2 + 1);  // two bars plus the legend swatch; "e" is absent
  CHECK(count(svg, "<polygon") == 1);   // the +inf arrow
  CHECK(svg.find(">NaN<title>") != std::string::npos);
  CHECK(svg.find("e: s") == std::string::npos);
  CHECK(svg.find("nan") == std::string::npos);  // no NaN coordinate
}

TEST_CASE("histograms draw one outline per series and markers inside the range only", "[apps][html]") {
  html::HistogramChart c{"h", 0, 4, {{"float", "#111", {1, 2, 3, 4}}, {"quant", "#222", {4, 3, 2, 1}}},
                         {{"in", "#f00", 1.5, false}, {"out", "#0f0", 9, true}}};
  const std::string svg = html::histogram_svg(c);
  CHECK(count(svg, "<polygon") == 2);
  CHECK(count(svg, "stroke-dasharray") == 0);  // the dashed marker lies outside [0, 4]
  CHECK(svg.find("in 1.5") != std::string::npos);
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
}

TEST_CASE("a page is written atomically and a bad path names the file", "[apps][html]") {
  const auto dir = std::filesystem::temp_directory_path() / "qtool_html_report_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  html::Page page("t");
  page.paragraph("hello");
  const std::string path = (dir / "r.html").string();
  REQUIRE(html::Page::check_path(path).is_ok());
  REQUIRE(page.write(path).is_ok());
  auto bytes = quant::read_file(path);
  REQUIRE(bytes);
  CHECK(*bytes == page.html());
  const std::string missing = (dir / "no" / "r.html").string();
  for (const quant::Status& st : {html::Page::check_path(missing), page.write(missing)}) {
    CHECK(st.code() == quant::StatusCode::kBadInput);
    CHECK(st.message().find(missing) != std::string::npos);
  }
  const quant::Status st = html::Page::check_path(dir.string());
  CHECK(st.code() == quant::StatusCode::kBadInput);
  CHECK(st.message().find("is a directory") != std::string::npos);
  CHECK_FALSE(page.write(dir.string()).is_ok());
  CHECK(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()) == 1);  // r.html only
  std::filesystem::remove_all(dir);
}
