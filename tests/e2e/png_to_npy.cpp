// png_to_npy IMAGE OUT.npy: an image decoded by qtool's own reader (stb_image,
// libquant/io/image.h) as a float32 [1, H, W, 3] array of pixel / 255, so that
// the e2e tests can inspect screenshots with numpy alone (no PIL needed).
#include <cstdio>

#include "libquant/io/image.h"
#include "libquant/io/npy.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: png_to_npy IMAGE OUT.npy\n");
    return 2;
  }
  quant::io::ImageOptions options;
  options.layout = quant::io::ImageLayout::NHWC;
  auto image = quant::io::read_image(argv[1], options);
  quant::Status st = image ? quant::io::write_npy(argv[2], *image) : image.status();
  if (!st.is_ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 2;
  }
  return 0;
}
