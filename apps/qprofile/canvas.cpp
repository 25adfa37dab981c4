#include "apps/qprofile/canvas.h"

#include <algorithm>
#include <cmath>

#include "libquant/io/image.h"

// stb_easy_font is header-only with static functions; -Wall flags its unused ones.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb/stb_easy_font.h>
#pragma GCC diagnostic pop

namespace qtool {

Canvas::Canvas(int width, int height, Rgb background)
    : width_(width), height_(height), pixels_(static_cast<size_t>(width) * static_cast<size_t>(height) * 3) {
  fill(0, 0, width, height, background);
}

Rgb Canvas::at(int x, int y) const {
  size_t i = (static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)) * 3;
  return {pixels_[i], pixels_[i + 1], pixels_[i + 2]};
}

void Canvas::fill(int x0, int y0, int x1, int y1, Rgb color) {
  x0 = std::clamp(x0, 0, width_);
  x1 = std::clamp(x1, 0, width_);
  y0 = std::clamp(y0, 0, height_);
  y1 = std::clamp(y1, 0, height_);
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      size_t i = (static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)) * 3;
      pixels_[i] = color.r;
      pixels_[i + 1] = color.g;
      pixels_[i + 2] = color.b;
    }
  }
}

void Canvas::blend(int x0, int y0, int x1, int y1, Rgb color, double alpha) {
  x0 = std::clamp(x0, 0, width_);
  x1 = std::clamp(x1, 0, width_);
  y0 = std::clamp(y0, 0, height_);
  y1 = std::clamp(y1, 0, height_);
  auto mix = [&](uint8_t under, uint8_t over) {
    return static_cast<uint8_t>(std::lround(under * (1 - alpha) + over * alpha));
  };
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      size_t i = (static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)) * 3;
      pixels_[i] = mix(pixels_[i], color.r);
      pixels_[i + 1] = mix(pixels_[i + 1], color.g);
      pixels_[i + 2] = mix(pixels_[i + 2], color.b);
    }
  }
}

void Canvas::vline(int x, int y0, int y1, Rgb color, int thickness, int dash) {
  const int left = x - thickness / 2;
  for (int y = std::min(y0, y1); y < std::max(y0, y1); ++y) {
    if (dash > 0 && (y / dash) % 2 == 1) continue;
    fill(left, y, left + thickness, y + 1, color);
  }
}

void Canvas::hline(int x0, int x1, int y, Rgb color) { fill(std::min(x0, x1), y, std::max(x0, x1), y + 1, color); }

void Canvas::text(int x, int y, const std::string& s, Rgb color, int scale) {
  // stb_easy_font emits quads (4 vertices of x, y, z floats + 4 colour bytes) in font pixels.
  std::string buf_text = s;
  // Up to 1 KiB per glyph: a short buffer would silently drop the last glyphs' quads.
  std::vector<char> vertices(s.size() * 1024 + 64);
  int quads = stb_easy_font_print(0, 0, buf_text.data(), nullptr, vertices.data(), static_cast<int>(vertices.size()));
  struct Vertex {
    float x, y, z;
    unsigned char c[4];
  };
  const auto* v = reinterpret_cast<const Vertex*>(vertices.data());
  for (int q = 0; q < quads; ++q) {
    const Vertex* quad = v + 4 * q;
    int qx0 = static_cast<int>(std::lround(quad[0].x)), qy0 = static_cast<int>(std::lround(quad[0].y));
    int qx1 = static_cast<int>(std::lround(quad[2].x)), qy1 = static_cast<int>(std::lround(quad[2].y));
    fill(x + qx0 * scale, y + qy0 * scale, x + qx1 * scale, y + qy1 * scale, color);
  }
}

int Canvas::text_width(const std::string& s, int scale) {
  std::string copy = s;
  return stb_easy_font_width(copy.data()) * scale;
}

quant::Status Canvas::save_png(const std::string& path) const { return quant::io::write_png(path, width_, height_, 3, pixels_); }

}  // namespace qtool
