#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "libquant/core/file_util.h"
#include "libquant/io/dataset.h"
#include "libquant/io/image.h"
#include "libquant/io/npy.h"

using namespace quant;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() / ("qtool_image_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& rel) const { return (path / rel).string(); }
};

// A 2x3 RGB image whose pixel (y, x) is (10 * (3y + x), 100, 255 - 10 * (3y + x)).
std::vector<uint8_t> test_pixels() {
  std::vector<uint8_t> px;
  for (int i = 0; i < 6; ++i) {
    px.push_back(static_cast<uint8_t>(10 * i));
    px.push_back(100);
    px.push_back(static_cast<uint8_t>(255 - 10 * i));
  }
  return px;
}

io::ImageOptions options(const std::string& size = "", const std::string& mean = "", const std::string& std = "",
                         const std::string& layout = "nchw", const std::string& channels = "rgb") {
  auto o = io::parse_image_options(size, mean, std, layout, channels);
  REQUIRE(o.has_value());
  return *o;
}

}  // namespace

TEST_CASE("image: PNG round trip, NCHW and NHWC, pixel / 255", "[io][image]") {
  TempDir dir;
  REQUIRE(io::write_png(dir / "a.png", 3, 2, 3, test_pixels()).is_ok());

  auto nchw = io::read_image(dir / "a.png", options());
  REQUIRE(nchw.has_value());
  CHECK(nchw->shape() == Dims{1, 3, 2, 3});
  const float* v = nchw->data<float>();
  CHECK(v[0] == 0.0f);                          // R of pixel (0, 0)
  CHECK(v[5] == Approx(50 / 255.0f));           // R of pixel (1, 2)
  CHECK(v[6] == Approx(100 / 255.0f));          // G plane starts at 6
  CHECK(v[12 + 1] == Approx(245 / 255.0f));     // B of pixel (0, 1)

  auto nhwc = io::read_image(dir / "a.png", options("", "", "", "nhwc"));
  REQUIRE(nhwc.has_value());
  CHECK(nhwc->shape() == Dims{1, 2, 3, 3});
  CHECK(nhwc->data<float>()[3 * 5] == Approx(50 / 255.0f));  // R of the last pixel
}

TEST_CASE("image: mean, std, BGR and grey", "[io][image]") {
  TempDir dir;
  REQUIRE(io::write_png(dir / "a.png", 3, 2, 3, test_pixels()).is_ok());
  auto norm = io::read_image(dir / "a.png", options("", "0.5,0.25,0", "0.5,0.5,2"));
  REQUIRE(norm.has_value());
  CHECK(norm->data<float>()[0] == Approx((0 - 0.5f) / 0.5f));
  CHECK(norm->data<float>()[6] == Approx((100 / 255.0f - 0.25f) / 0.5f));
  CHECK(norm->data<float>()[12] == Approx(1.0f / 2));

  auto bgr = io::read_image(dir / "a.png", options("", "", "", "nchw", "bgr"));
  REQUIRE(bgr.has_value());
  CHECK(bgr->data<float>()[0] == Approx(1.0f));  // channel 0 is the file's blue (255)
  CHECK(bgr->data<float>()[12] == 0.0f);         // channel 2 is the file's red (0)

  auto grey = io::read_image(dir / "a.png", options("", "0.1", "", "nchw", "gray"));
  REQUIRE(grey.has_value());
  CHECK(grey->shape() == Dims{1, 1, 2, 3});
}

TEST_CASE("image: resizing to --image-size", "[io][image]") {
  TempDir dir;
  std::vector<uint8_t> flat(16 * 10 * 3, 200);
  REQUIRE(io::write_png(dir / "big.png", 16, 10, 3, flat).is_ok());
  auto t = io::read_image(dir / "big.png", options("4x8"));
  REQUIRE(t.has_value());
  CHECK(t->shape() == Dims{1, 3, 4, 8});
  for (float x : t->values<float>()) CHECK(x == Approx(200 / 255.0f).margin(1.5 / 255));
}

TEST_CASE("image: bad files and bad flags are refused by name", "[io][image]") {
  TempDir dir;
  REQUIRE(write_file_atomic(dir / "broken.png", "\x89PNG\r\n\x1a\nnope").is_ok());
  auto r = io::read_image(dir / "broken.png", options());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().message().find("broken.png: cannot decode image") != std::string::npos);

  auto refuse = [](Expected<io::ImageOptions> o, const std::string& needle) {
    REQUIRE_FALSE(o.has_value());
    INFO(o.status().message());
    CHECK(o.status().message().find(needle) != std::string::npos);
  };
  refuse(io::parse_image_options("224", "", "", "nchw", "rgb"), "--image-size '224'");
  refuse(io::parse_image_options("0x4", "", "", "nchw", "rgb"), "--image-size");
  refuse(io::parse_image_options("", "1,2", "", "nchw", "rgb"), "--mean '1,2'");
  refuse(io::parse_image_options("", "", "1,0,1", "nchw", "rgb"), "--std");
  refuse(io::parse_image_options("", "", "", "chw", "rgb"), "--layout 'chw'");
  refuse(io::parse_image_options("", "", "", "nchw", "rgba"), "--channels 'rgba'");
  CHECK(io::is_image_file("a.JPG"));
  CHECK(io::is_image_file("b.ppm"));
  CHECK_FALSE(io::is_image_file("c.npy"));
}

TEST_CASE("dataset: a directory of images is one sample per image; mixing forms is refused", "[io][dataset][image]") {
  TempDir dir;
  fs::create_directories(dir / "imgs");
  REQUIRE(io::write_png(dir / "imgs/b.png", 3, 2, 3, test_pixels()).is_ok());
  REQUIRE(io::write_png(dir / "imgs/a.png", 3, 2, 3, test_pixels()).is_ok());
  auto samples = io::list_samples(dir / "imgs", {});
  REQUIRE(samples.has_value());
  REQUIRE(samples->size() == 2);
  CHECK((*samples)[0].stem == "a");
  auto loaded = io::load_sample((*samples)[0], {"x"}, options("2x2"));
  REQUIRE(loaded.has_value());
  CHECK((*loaded)[0].shape() == Dims{1, 3, 2, 2});

  REQUIRE(io::write_npy(dir / "imgs/c.npy", Tensor::from_vector<float>({1}, {1})).is_ok());
  auto mixed = io::list_samples(dir / "imgs", {});
  REQUIRE_FALSE(mixed.has_value());
  CHECK(mixed.status().message().find("mixes .npy files (c.npy) with images (a.png)") != std::string::npos);
}

TEST_CASE("image: a PNG whose first IDAT chunk is empty is refused before stb reads it", "[io][image]") {
  auto seed = read_file(std::string(QTOOL_SOURCE_DIR) + "/tests/fuzz/corpus/image/regress_png_empty_first_idat.png");
  REQUIRE(seed.has_value());
  auto r = io::decode_image(std::string_view(*seed).substr(1), "idat.png", options());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().message() == "idat.png: cannot decode image (PNG's first IDAT chunk is empty)");
}

TEST_CASE("image: a PNG chunk longer than the file is refused before stb allocates for it", "[io][image]") {
  // fuzz_image: a 177-byte PNG whose second IDAT declares 0x5f5f0056 bytes made
  // stb_image 2.27 realloc 2 GiB before reading them.
  auto seed = read_file(std::string(QTOOL_SOURCE_DIR) + "/tests/fuzz/corpus/image/regress_png_chunk_longer_than_file.png");
  REQUIRE(seed.has_value());
  auto r = io::decode_image(std::string_view(*seed).substr(1), "long.png", options());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().message().find("long.png: cannot decode image (PNG chunk 'IDAT' declares") == 0);
  CHECK(r.status().message().find("more than the file holds") != std::string::npos);
}

TEST_CASE("image: 16-bit PNM is refused (stb 2.27 reads past its buffer converting it)", "[io][image]") {
  auto seed = read_file(std::string(QTOOL_SOURCE_DIR) + "/tests/fuzz/corpus/image/regress_pnm_16bit_gray_as_rgb.pgm");
  REQUIRE(seed.has_value());
  auto r = io::decode_image(std::string_view(*seed).substr(1), "16.pgm", options());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().message() == "16.pgm: cannot decode image (16-bit PNM (maximum value 256) is not supported)");
}

TEST_CASE("image: a JPEG Huffman table of more than 256 codes is refused before stb reads it", "[io][image]") {
  // fuzz_image's findings: stb_image 2.27 writes past its 256-entry tables
  // (the second file starts with fill bytes before SOI, which stb accepts). A
  // seed's first byte is the fuzz target's option byte.
  const std::string name = GENERATE(as<std::string>{}, "regress_jpeg_dht_257_codes.jpg", "regress_jpeg_dht_after_fill.jpg");
  auto seed = read_file(std::string(QTOOL_SOURCE_DIR) + "/tests/fuzz/corpus/image/" + name);
  REQUIRE(seed.has_value());
  auto r = io::decode_image(std::string_view(*seed).substr(1), "dht.jpg", options());
  REQUIRE_FALSE(r.has_value());
  INFO(r.status().message());
  CHECK(r.status().code() == StatusCode::kBadInput);
  CHECK(r.status().message().find("dht.jpg: cannot decode image (JPEG Huffman table has") != std::string::npos);
}

namespace {

std::string image_seed(const std::string& name) {
  auto seed = read_file(std::string(QTOOL_SOURCE_DIR) + "/tests/fuzz/corpus/image/" + name);
  REQUIRE(seed.has_value());
  return seed->substr(1);  // the first byte is the fuzz target's option byte
}

// The file without its first marker segment of type `marker` (FF marker,
// length, body), or the first whose body starts with `body` when that is >= 0.
std::string without_segment(const std::string& jpeg, unsigned char marker, int body = -1) {
  size_t at = jpeg.find(std::string{'\xFF', static_cast<char>(marker)});
  while (body >= 0 && at != std::string::npos && static_cast<unsigned char>(jpeg[at + 4]) != body)
    at = jpeg.find(std::string{'\xFF', static_cast<char>(marker)}, at + 1);
  REQUIRE(at != std::string::npos);
  const size_t length = static_cast<unsigned char>(jpeg[at + 2]) << 8 | static_cast<unsigned char>(jpeg[at + 3]);
  return jpeg.substr(0, at) + jpeg.substr(at + 2 + length);
}

}  // namespace

TEST_CASE("image: the valid JPEG seeds decode, the same on every run", "[io][image]") {
  // Baseline 4:2:0, progressive and grey, as Pillow writes them (tests/fuzz/make_corpus.py).
  const std::string name = GENERATE(as<std::string>{}, "baseline.jpg", "progressive_resized.jpg", "gray.jpg");
  INFO(name);
  const std::string jpeg = image_seed(name);
  auto first = io::decode_image(jpeg, name, options());
  REQUIRE(first.has_value());
  CHECK(first->shape() == Dims{1, 3, 5, 7});
  auto second = io::decode_image(jpeg, name, options());
  REQUIRE(second.has_value());
  CHECK(std::memcmp(first->raw(), second->raw(), first->byte_size()) == 0);
}

TEST_CASE("image: a JPEG scan that uses a table no segment defined is refused before stb reads it", "[io][image]") {
  // fuzz_image's finding: a progressive file whose AC scan comes before its
  // AC Huffman table, and whose second component's quantization table lies
  // inside the first DQT segment's declared length; stb 2.27 decoded it with
  // stale memory (index -31 into a 257-entry array under UBSan).
  auto r = io::decode_image(image_seed("regress_jpeg_undefined_ac_table.jpg"), "scan.jpg", options());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().code() == StatusCode::kBadInput);
  CHECK(r.status().message() ==
        "scan.jpg: cannot decode image (JPEG scan of component 2 uses quantization table 1, which no segment before it defines)");

  // A progressive file without the AC table of its first AC scan (DHT class 1, id 0).
  r = io::decode_image(without_segment(image_seed("progressive_resized.jpg"), 0xC4, 0x10), "ac.jpg", options());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().message() ==
        "ac.jpg: cannot decode image (JPEG scan of component 1 uses AC Huffman table 0, which no segment before it defines)");

  // A baseline file without its Huffman tables, or without its quantization tables.
  const std::string baseline = image_seed("baseline.jpg");
  std::string no_tables = baseline;
  while (no_tables.find("\xFF\xC4") != std::string::npos) no_tables = without_segment(no_tables, 0xC4);
  r = io::decode_image(no_tables, "dht.jpg", options());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().message().find("dht.jpg: cannot decode image (JPEG scan of component 1 uses DC Huffman table 0, which no") == 0);
  std::string no_quant = baseline;
  while (no_quant.find("\xFF\xDB") != std::string::npos) no_quant = without_segment(no_quant, 0xDB);
  r = io::decode_image(no_quant, "dqt.jpg", options());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().message().find("dqt.jpg: cannot decode image (JPEG scan of component 1 uses quantization table 0, which no") == 0);
}

TEST_CASE("image: a BMP shorter than its headers is refused, not padded", "[io][image]") {
  // fuzz_image's finding: 29 bytes declaring 589831x1 pixels; stb read the rest as zeros.
  auto r = io::decode_image(image_seed("regress_bmp_29_bytes.bmp"), "short.bmp", options());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().code() == StatusCode::kBadInput);
  CHECK(r.status().message() == "short.bmp: cannot decode image (BMP header is truncated (29 bytes))");
}

// ---- resizing, against a reference written from stb_image_resize's rule ----
//
// The rule (ImageOptions; stb_image_resize 0.97, stbir_resize_uint8), per axis
// with scale = out / in, separably (the order of the axes does not matter in
// exact arithmetic): pixel i covers [i, i + 1), its value p / 255;
//  - scale > 1 (up): output pixel j samples at c = (j + 0.5) / scale in input
//    coordinates; input pixel i weighs catmull_rom(c - (i + 0.5));
//  - scale <= 1 (down, and an axis that keeps its size while the other one
//    changes): input pixel i weighs mitchell((j + 0.5) - (i + 0.5) * scale),
//    the filter stretched over the input;
//  - the taps are every i with a non-zero weight, i outside the image reading
//    the nearest edge pixel (edge clamp), the weights normalized to sum 1;
//  - the result, clamped to [0, 1], becomes (int)(v * 255 + 0.5).
// stb computes in float32, the reference in double: the two may differ by one
// step only where v * 255 lies within 2e-3 of a rounding boundary (on ramps
// that happens mostly at exact halves, such as the mean of two pixel values).
namespace {

double catmull_rom(double x) {
  x = std::abs(x);
  if (x < 1) return 1 - x * x * (2.5 - 1.5 * x);
  if (x < 2) return 2 - x * (4 + x * (0.5 * x - 2.5));
  return 0;
}

double mitchell(double x) {  // B = C = 1/3
  x = std::abs(x);
  if (x < 1) return (16 + x * x * (21 * x - 36)) / 18;
  if (x < 2) return (32 + x * (-60 + x * (36 - 7 * x))) / 18;
  return 0;
}

// The (input pixel, weight) taps of output pixel j along an axis of `in` -> `out` pixels.
std::vector<std::pair<int, double>> resize_taps(int in, int out, int j) {
  const double scale = static_cast<double>(out) / in;
  std::vector<std::pair<int, double>> taps;
  double total = 0;
  const double c = (j + 0.5) / scale;                 // output pixel j's centre in input coordinates
  const int reach = static_cast<int>(std::ceil(2 / std::min(scale, 1.0))) + 2;
  for (int i = static_cast<int>(std::floor(c)) - reach; i <= static_cast<int>(std::floor(c)) + reach; ++i) {
    const double w = scale > 1 ? catmull_rom(c - (i + 0.5)) : mitchell((j + 0.5) - (i + 0.5) * scale);
    if (w == 0) continue;
    taps.emplace_back(std::clamp(i, 0, in - 1), w);
    total += w;
  }
  for (auto& t : taps) t.second /= total;
  return taps;
}

// Reference resize of `channels`-interleaved pixels, before the final rounding (v * 255).
std::vector<double> resize_reference(const std::vector<uint8_t>& px, int w, int h, int channels, int out_w, int out_h) {
  std::vector<double> rows(static_cast<size_t>(h) * out_w * channels, 0.0);  // horizontal pass
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < out_w; ++x)
      for (const auto& [i, wt] : resize_taps(w, out_w, x))
        for (int c = 0; c < channels; ++c)
          rows[(static_cast<size_t>(y) * out_w + x) * channels + c] += wt * px[(static_cast<size_t>(y) * w + i) * channels + c] / 255.0;
  std::vector<double> out(static_cast<size_t>(out_h) * out_w * channels, 0.0);
  for (int y = 0; y < out_h; ++y)
    for (const auto& [i, wt] : resize_taps(h, out_h, y))
      for (int x = 0; x < out_w; ++x)
        for (int c = 0; c < channels; ++c)
          out[(static_cast<size_t>(y) * out_w + x) * channels + c] += wt * rows[(static_cast<size_t>(i) * out_w + x) * channels + c];
  for (double& v : out) v = std::clamp(v, 0.0, 1.0) * 255;
  return out;
}

// A binary PPM (P6, RGB) or PGM (P5, grey) file's bytes.
std::string pnm_bytes(const std::vector<uint8_t>& px, int w, int h, int channels) {
  std::string s = (channels == 3 ? "P6\n" : "P5\n") + std::to_string(w) + " " + std::to_string(h) + "\n255\n";
  s.append(px.begin(), px.end());
  return s;
}

// Gradients: red a horizontal ramp over the whole width, green a vertical one,
// blue a steep diagonal ramp clamped to [0, 255] (its corners are where
// interpolation filters differ most: on a straight ramp every one of them
// reproduces the ramp away from the edges).
std::vector<uint8_t> gradient_pixels(int w, int h) {
  std::vector<uint8_t> px;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      px.push_back(static_cast<uint8_t>(std::lround(255.0 * x / (w - 1))));
      px.push_back(static_cast<uint8_t>(std::lround(255.0 * y / (h - 1))));
      const double d = (static_cast<double>(x) / (w - 1) + static_cast<double>(y) / (h - 1)) / 2;
      px.push_back(static_cast<uint8_t>(std::lround(std::clamp(3 * 255.0 * (d - 1.0 / 3), 0.0, 255.0))));
    }
  return px;
}

}  // namespace

TEST_CASE("image: resizing gradients follows stb_image_resize's rule pixel by pixel", "[io][image]") {
  struct Case {
    const char* what;
    int w, h, out_w, out_h;
  };
  for (const Case& c : {Case{"up, non-square", 7, 5, 17, 13}, Case{"down, non-square", 40, 30, 16, 9},
                        Case{"width up, height down", 12, 20, 30, 8}, Case{"width down, height up", 33, 6, 10, 15},
                        Case{"height kept, width down", 16, 16, 10, 16}, Case{"down by an integer factor", 24, 24, 8, 12}}) {
    DYNAMIC_SECTION(c.what << ": " << c.w << "x" << c.h << " -> " << c.out_w << "x" << c.out_h) {
      const std::vector<uint8_t> px = gradient_pixels(c.w, c.h);
      const std::string size = std::to_string(c.out_h) + "x" + std::to_string(c.out_w);
      for (const char* layout : {"nhwc", "nchw"}) {
        INFO(layout);
        const bool nchw = std::string(layout) == "nchw";
        auto t = io::decode_image(pnm_bytes(px, c.w, c.h, 3), "gradient.ppm", options(size, "", "", layout));
        REQUIRE(t.has_value());
        CHECK(t->shape() == (nchw ? Dims{1, 3, c.out_h, c.out_w} : Dims{1, c.out_h, c.out_w, 3}));
        const std::vector<double> ref = resize_reference(px, c.w, c.h, 3, c.out_w, c.out_h);
        const size_t plane = static_cast<size_t>(c.out_h) * static_cast<size_t>(c.out_w);
        int near_boundary = 0;
        for (size_t p = 0; p < plane; ++p)
          for (size_t ch = 0; ch < 3; ++ch) {
            const float v = t->data<float>()[nchw ? ch * plane + p : p * 3 + ch];
            const long got = std::lround(v * 255.0);
            REQUIRE(v == static_cast<float>(got) / 255.0f);  // pixel / 255, nothing else
            const double want = ref[p * 3 + ch];
            const double to_boundary = std::abs(want - std::floor(want) - 0.5);
            INFO("pixel (" << p / static_cast<size_t>(c.out_w) << ", " << p % static_cast<size_t>(c.out_w) << ") channel "
                           << ch << ": reference " << want);
            if (to_boundary < 2e-3) {
              ++near_boundary;
              CHECK(std::abs(static_cast<double>(got) - want) < 0.51);
            } else {
              CHECK(got == static_cast<long>(want + 0.5));
            }
          }
        // Ramps filtered by symmetric weights land on exact halves now and then;
        // most values must still take the exact check.
        CHECK(near_boundary * 5 < static_cast<int>(plane * 3));
      }
    }
  }
}

TEST_CASE("image: resizing a grey gradient follows the same rule", "[io][image]") {
  const int w = 9, h = 14, out_w = 20, out_h = 6;
  std::vector<uint8_t> grey;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) grey.push_back(static_cast<uint8_t>(std::lround(255.0 * (x + 2 * y) / (w - 1 + 2 * (h - 1)))));
  auto t = io::decode_image(pnm_bytes(grey, w, h, 1), "grey.pgm",
                            options(std::to_string(out_h) + "x" + std::to_string(out_w), "", "", "nchw", "gray"));
  REQUIRE(t.has_value());
  REQUIRE(t->shape() == Dims{1, 1, out_h, out_w});
  const std::vector<double> ref = resize_reference(grey, w, h, 1, out_w, out_h);
  for (size_t i = 0; i < ref.size(); ++i) {
    INFO("pixel " << i << ": reference " << ref[i]);
    const long got = std::lround(t->data<float>()[i] * 255.0);
    if (std::abs(ref[i] - std::floor(ref[i]) - 0.5) >= 2e-3) CHECK(got == static_cast<long>(ref[i] + 0.5));
  }
}
