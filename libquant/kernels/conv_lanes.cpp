// The lanes path's driver (conv_lanes.h): tiles, depth blocks and the split
// over threads, the same for every ISA; the kernels are in
// conv_lanes_<isa>.cpp.
#include "libquant/kernels/conv_lanes.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "libquant/kernels/cpu.h"
#include "libquant/kernels/threadpool.h"

namespace quant::kernels::detail {
namespace {

// Tiles of any pixels (AVX2, at most 6): sixes, and a remainder of 7 to 9 as
// two tiles of 4 or 5, 13 as 5 + 4 + 4 (a tile of P pixels runs 2P
// multiply-add chains, and below 8 chains the FMA latency, 4 cycles on two
// ports, idles the ports: 9 = 5 + 4 costs 9 pixels' time, 6 + 3 ten). Only
// maps of 7 (4 + 3) or fewer than four pixels keep a short tile.
void split_pixels(int64_t n, int max_pixels, std::vector<int>& sizes) {
  for (int64_t r = n; r > 0;) {
    if (r <= max_pixels) {
      sizes.push_back(static_cast<int>(r));
      break;
    }
    if (r <= 9) {
      sizes.push_back(static_cast<int>(r) - 4);
      sizes.push_back(4);
      break;
    }
    if (r == 13) {  // 6 + 4 + 3 otherwise (a 7 x 7 map: 49 = 6 x 6 + 13)
      sizes.insert(sizes.end(), {5, 4, 4});
      break;
    }
    sizes.push_back(max_pixels);
    r -= max_pixels;
  }
}

// Tiles within rows (AVX-512, at most 14): each row in as few tiles as
// max_pixels allows, as even as they go (56 = 4 x 14, 30 = 3 x 10, 7 = 7).
void split_rows(int64_t pixels, int64_t row, int max_pixels, std::vector<int>& sizes) {
  const int64_t per_row = (row + max_pixels - 1) / max_pixels;
  for (int64_t r = 0; r < pixels / row; ++r)
    for (int64_t i = 0; i < per_row; ++i)
      sizes.push_back(static_cast<int>((i + 1) * row / per_row - i * row / per_row));
}

}  // namespace

const LanesIsa* lanes_isa(const GemmIsa& isa) {
  if (&isa == kGemmIsaAvx2) return kLanesAvx2;
  if (&isa == kGemmIsaAvx512) return kLanesAvx512;
  return nullptr;
}

PackedMatrix pack_conv_lanes(const float* w, int64_t m, int64_t depth, const GemmIsa& gemm) {
  // W^T as a GEMM B operand [depth, m]: element (k, j) = w[j * depth + k],
  // in the GEMM ISA's nr-wide panels.
  return PackedMatrix::pack_b(MatrixView{w, 1, depth}, depth, m, gemm);
}

bool lanes_by_pixels(const LanesConv& c, int threads) {
  // Threads take runs of pixels where the weights are the smaller operand
  // (m x taps < input pixels: early layers, large maps), each reading all
  // of them and its own band of the input, padded by itself (pad_planes'
  // bands: the tasks run run by run, each thread's share starting with its
  // own); else runs of panels of channels, each thread its own share of
  // the weights and all of the input, and runs of pixels as well where
  // there are fewer than two panels per thread. The input counts as it is
  // read, before the strides: resnet18's 3x3/2 64 -> 128 conv (1152 x 576
  // weights, 64 planes of 58 x 58) went by panels when its 784 output
  // pixels were the measure, and took 1.85x less time on 2 threads than on
  // 1 where the stride-1 convs took 2x (QTOOL_ISA=avx2).
  return threads > 1 && c.m * c.taps_per_channel < c.in_pixels;
}

void conv_lanes_f32(const LanesConv& c, const LanesIsa& isa, int threads) {
  thread_local std::vector<int> sizes;
  thread_local std::vector<int64_t> starts;
  sizes.clear();
  if (isa.row_tiles)
    split_rows(c.pixels, c.row, isa.max_pixels, sizes);
  else
    split_pixels(c.pixels, isa.max_pixels, sizes);
  starts.assign(1, 0);
  for (int s : sizes) starts.push_back(starts.back() + s);
  const int64_t width = isa.width, tiles = static_cast<int64_t>(sizes.size()), panels = c.m / width;
  const int* const tile_sizes = sizes.data();
  const int64_t* const tile_starts = starts.data();
  // The kernels by tile size, first or later depth block, last or not:
  // looked up once per call rather than per tile (5000 tiles and more per
  // layer: resnet18 ran 1% slower so).
  LanesTileFn kernels[kMaxTilePixels + 1][2][2] = {};
  for (int p = 1; p <= isa.max_pixels; ++p)
    for (int a = 0; a < 2; ++a)
      for (int l = 0; l < 2; ++l) kernels[p][a][l] = isa.tile(p, c.stride, a == 1, l == 1);
  // Where K spans several depth blocks, each tile's sums wait between blocks
  // in a buffer of `width` floats per pixel and panel. The pixels go in
  // chunks of tiles whose buffer stays within half the L2 (all of resnet18's
  // maps in one chunk on a 2 MiB L2), so that a large map (64 channels at
  // 1024 x 1024: 256 MiB) needs no second copy of y's size.
  const int64_t chunk_tiles =
      std::max<int64_t>(1, l2_cache_bytes() / 2 / (c.m * isa.max_pixels * static_cast<int64_t>(sizeof(float))));
  const bool by_pixels = lanes_by_pixels(c, threads);
  // By panels: two runs of them per thread, so that a thread done early
  // takes over part of a late one's share, or one run where the weights
  // exceed the L2 and stream from memory on every call (resnet18's layer4:
  // 9 MiB a conv), each thread's share then read as one stream rather than
  // two runs of 128 KiB a depth block apart. resnet18 float, 2 threads,
  // QTOOL_ISA=avx2, the two alternating run by run in one process: medians
  // 0.5-0.7% lower in six sets of 100 runs (its layer4 convs 4-5% lower).
  const bool streamed = c.m * c.depth * static_cast<int64_t>(sizeof(float)) > l2_cache_bytes();
  const int64_t groups = threads > 1 && !by_pixels ? std::min<int64_t>(panels, (streamed ? 1 : 2) * threads) : 1;
  const int64_t parts = std::clamp<int64_t>(by_pixels ? threads : (2 * threads + panels - 1) / panels, 1,
                                            std::max<int64_t>(tiles, 1));
  parallel_for(threads, groups * parts, [&](int64_t task) {
    thread_local AlignedFloats partial_buf;  // this thread's
    const int64_t group = task / parts, part = task % parts;
    const int64_t q0 = group * panels / groups, q1 = (group + 1) * panels / groups;
    const int64_t t_first = part * tiles / parts, t_last = (part + 1) * tiles / parts;
    LanesTile t{};
    t.x = c.x;
    t.ldy = c.pixels;
    t.clamp = c.clamp;
    t.lo = c.lo;
    t.hi = c.hi;
    for (int64_t t0 = t_first; t0 < t_last; t0 += chunk_tiles) {
      const int64_t t1 = std::min(t_last, t0 + chunk_tiles);
      const int64_t chunk_p0 = tile_starts[t0], chunk_pixels = tile_starts[t1] - chunk_p0;
      float* partial = nullptr;
      if (c.depth > kGemmKc) {
        const int64_t need = (q1 - q0) * chunk_pixels * width;
        if (partial_buf.size() < need) partial_buf = AlignedFloats(need);
        partial = partial_buf.data();
      }
      // Depth blocks outermost, panels within: the weights are read in the
      // order they lie (a depth block's panels one after the other), and a
      // depth block's input channels serve every panel while in cache.
      for (int64_t k0 = 0; k0 < c.depth; k0 += kGemmKc) {
        const int64_t kc = std::min(kGemmKc, c.depth - k0);
        const bool accumulate = k0 > 0, last = k0 + kc == c.depth;
        t.taps = c.taps + k0;
        for (int64_t q = q0; q < q1; ++q) {
          t.w = c.w->panel(k0, q);
          t.bias = c.bias ? c.bias + q * width : nullptr;
          // The weights come from memory in a whole model (resnet18's are 45
          // MB): the block's first tile fetches the next panel into L2.
          const float* next = q + 1 < q1 ? c.w->panel(k0, q + 1) : !last ? c.w->panel(k0 + kc, q0) : nullptr;
          for (int64_t ti = t0; ti < t1; ++ti) {
            t.prefetch = ti == t0 ? reinterpret_cast<uintptr_t>(next) : 0;
            const int64_t p0 = tile_starts[ti];
            t.pixel = c.pixel + p0;
            t.partial = partial ? partial + ((q - q0) * chunk_pixels + p0 - chunk_p0) * width : nullptr;
            t.y = c.y + q * width * c.pixels + p0;
            t.residual = c.residual ? c.residual + q * width * c.pixels + p0 : nullptr;
            kernels[tile_sizes[ti]][accumulate][last](kc, t);
          }
        }
      }
    }
  });
}

}  // namespace quant::kernels::detail
