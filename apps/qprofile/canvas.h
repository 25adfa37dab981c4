// A tiny RGB raster for the plots of `qprofile show --plot`: rectangles, lines
// and text from stb_easy_font's built-in bitmap font (Debian's libstb-dev).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libquant/core/status.h"

namespace qtool {

struct Rgb {
  uint8_t r, g, b;
};

class Canvas {
 public:
  Canvas(int width, int height, Rgb background);
  int width() const { return width_; }
  int height() const { return height_; }
  Rgb at(int x, int y) const;

  // Fills [x0, x1) x [y0, y1), clipped to the canvas.
  void fill(int x0, int y0, int x1, int y1, Rgb color);
  // Paints `color` over [x0, x1) x [y0, y1) with opacity alpha in [0, 1].
  void blend(int x0, int y0, int x1, int y1, Rgb color, double alpha);
  // A vertical line `thickness` pixels wide at x, from y0 to y1; dashed when dash > 0.
  void vline(int x, int y0, int y1, Rgb color, int thickness = 1, int dash = 0);
  void hline(int x0, int x1, int y, Rgb color);
  // Text with its top-left corner at (x, y), each font pixel drawn scale x scale.
  void text(int x, int y, const std::string& s, Rgb color, int scale = 1);
  static int text_width(const std::string& s, int scale = 1);

  quant::Status save_png(const std::string& path) const;

 private:
  int width_, height_;
  std::vector<uint8_t> pixels_;
};

}  // namespace qtool
