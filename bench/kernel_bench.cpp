// Kernel throughput against the peak of the instructions the kernel is built
// from, measured in the same process (scripts/bench.sh kernels). Not a test:
// it times things, and the figures depend on the host and its load.
//
//   kernel_bench SECTION...    sections: int8-avx2
//
// Each section is one function of kSections at the bottom; another (float
// AVX2, say) is a function and a row. Times are the best of several
// repetitions (the least disturbed by other jobs on a shared host); the peak
// and the kernels are measured alike, so their ratio is the efficiency. "ops"
// counts a multiply and an add as two operations. Bad arguments: one
// "error:" line, exit 2.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "libquant/kernels/conv.h"
#include "libquant/kernels/cpu.h"
#include "libquant/kernels/qconv_fast.h"
#include "libquant/kernels/qgemm_ukernel.h"
#include "libquant/kernels/requant.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace qk = quant::kernels;
using qk::detail::QGemmIsa;

// Seconds per call of f: the fastest of `reps` runs, each repeating f until
// it has taken at least `min_seconds`. Short runs, many of them: on a shared
// core the best ones fall between other processes' time slices.
template <class F>
double best_seconds(F f, int reps = 60, double min_seconds = 0.002) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    int64_t n = 0;
    const auto t0 = Clock::now();
    double elapsed = 0;
    do {
      f();
      ++n;
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (elapsed < min_seconds);
    best = std::min(best, elapsed / static_cast<double>(n));
  }
  return best;
}

#if defined(__x86_64__) && defined(__GNUC__)
constexpr int64_t kAsmIters = 2000;

// The core clock: 100 dependent scalar adds per iteration, one cycle each.
double cycles_per_second() {
  const double s = best_seconds([] {
    int64_t n = kAsmIters, x = 1;
    asm volatile(
        "1:\n"
        ".rept 100\n"
        "add %1, %1\n"
        ".endr\n"
        "dec %0\n"
        "jnz 1b\n"
        : "+r"(n), "+r"(x)
        :
        : "cc");
  });
  return 100.0 * kAsmIters / s;
}

// One product step of the pairs kernel on registers: VPMADDUBSW into temp t,
// VPMADDWD by ones (ymm13) in place, VPADDD into accumulator acc.
#define QT_PAIR_STEP(t, acc)                       \
  "vpmaddubsw %%ymm14, %%ymm15, %%ymm" #t "\n"     \
  "vpmaddwd %%ymm13, %%ymm" #t ", %%ymm" #t "\n"   \
  "vpaddd %%ymm" #t ", %%ymm" #acc ", %%ymm" #acc "\n"

// The pairs kernel's instruction sequence alone, registers only: per
// iteration 8 x (VPMADDUBSW, VPMADDWD, VPADDD) into 8 accumulators, 8 x 32
// u8 x s8 products = 512 ops. With `sequence` false, 8 independent
// VPMADDUBSW only (the instruction's own rate, which exact int32 results
// cannot reach: each needs a VPMADDWD on the same ports).
__attribute__((target("avx2"))) double pairs_peak_ops_per_second(bool sequence) {
  const double s = best_seconds([sequence] {
    int64_t n = kAsmIters;
    if (sequence) {
      asm volatile(
          "vpcmpeqb %%ymm15, %%ymm15, %%ymm15\n"
          "vpabsb %%ymm15, %%ymm14\n"
          "vpabsw %%ymm15, %%ymm13\n"
          "1:\n" QT_PAIR_STEP(0, 4) QT_PAIR_STEP(1, 5) QT_PAIR_STEP(2, 6) QT_PAIR_STEP(3, 7) QT_PAIR_STEP(0, 8)
              QT_PAIR_STEP(1, 9) QT_PAIR_STEP(2, 10) QT_PAIR_STEP(3, 11)
          "dec %0\n"
          "jnz 1b\n"
          "vzeroupper\n"
          : "+r"(n)
          :
          : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
            "xmm13", "xmm14", "xmm15");
    } else {
      asm volatile(
          "vpcmpeqb %%ymm15, %%ymm15, %%ymm15\n"
          "vpabsb %%ymm15, %%ymm14\n"
          "1:\n"
          "vpmaddubsw %%ymm14, %%ymm15, %%ymm0\n"
          "vpmaddubsw %%ymm14, %%ymm15, %%ymm1\n"
          "vpmaddubsw %%ymm14, %%ymm15, %%ymm2\n"
          "vpmaddubsw %%ymm14, %%ymm15, %%ymm3\n"
          "vpmaddubsw %%ymm14, %%ymm15, %%ymm4\n"
          "vpmaddubsw %%ymm14, %%ymm15, %%ymm5\n"
          "vpmaddubsw %%ymm14, %%ymm15, %%ymm6\n"
          "vpmaddubsw %%ymm14, %%ymm15, %%ymm7\n"
          "dec %0\n"
          "jnz 1b\n"
          "vzeroupper\n"
          : "+r"(n)
          :
          : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm14", "xmm15");
    }
  });
  return 512.0 * kAsmIters / s;
}
#undef QT_PAIR_STEP
#endif

// Bytes drawn uniformly from [lo, hi] (as int), stored as uint8.
std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t count, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<uint8_t> v(count);
  for (auto& x : v) x = static_cast<uint8_t>(d(rng));
  return v;
}

// ops per second of one micro-kernel on L1-resident panels (K = 256).
double kernel_ops_per_second(qk::detail::QMicroKernel kernel, int mr, std::mt19937& rng) {
  constexpr int64_t kGroups = 64;
  // Weights in [-64, 64]: every pair bounded, so the pairs kernels are exact.
  const auto a = random_bytes(rng, static_cast<size_t>(kGroups * mr * 4), -64, 64);
  const auto b = random_bytes(rng, static_cast<size_t>(kGroups * 64), 0, 255);
  alignas(64) int32_t tile[qk::detail::kQMaxMr * qk::detail::kQNr];
  const double s = best_seconds([&] {
    for (int i = 0; i < 100; ++i) kernel(kGroups, a.data(), b.data(), tile);
    asm volatile("" : : "r"(tile) : "memory");
  });
  return 2.0 * 100 * kGroups * 4 * mr * qk::detail::kQNr / s;
}

// A convolution of torchvision's resnet18 at 224 x 224 (batch 1), and how
// many of the model's 20 convolutions have its shape.
struct ConvLayer {
  const char* name;
  int count;
  int64_t c, m, in, k, stride;
};
constexpr ConvLayer kResnet18Convs[] = {
    {"conv1 7x7/2 3->64 @224", 1, 3, 64, 224, 7, 2},
    {"layer1 3x3 64->64 @56", 4, 64, 64, 56, 3, 1},
    {"layer2.0.conv1 3x3/2 64->128", 1, 64, 128, 56, 3, 2},
    {"layer2 3x3 128->128 @28", 3, 128, 128, 28, 3, 1},
    {"layer2.0.downsample 1x1/2", 1, 64, 128, 56, 1, 2},
    {"layer3.0.conv1 3x3/2 128->256", 1, 128, 256, 28, 3, 2},
    {"layer3 3x3 256->256 @14", 3, 256, 256, 14, 3, 1},
    {"layer3.0.downsample 1x1/2", 1, 128, 256, 28, 1, 2},
    {"layer4.0.conv1 3x3/2 256->512", 1, 256, 512, 14, 3, 2},
    {"layer4 3x3 512->512 @7", 3, 512, 512, 7, 3, 1},
    {"layer4.0.downsample 1x1/2", 1, 256, 512, 14, 1, 2},
};

qk::ConvGeometry geometry_of(const ConvLayer& l) {
  qk::ConvGeometry g;
  g.batch = 1, g.in_channels = l.c, g.out_channels = l.m, g.group = 1;
  g.in_spatial = {l.in, l.in}, g.kernel = {l.k, l.k}, g.strides = {l.stride, l.stride}, g.dilations = {1, 1};
  g.pads_begin = g.pads_end = {l.k / 2, l.k / 2};
  qk::resolve_conv_pads(qk::AutoPad::NotSet, g.in_spatial, g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end,
                        g.out_spatial);
  return g;
}

// Seconds per run of one layer (uint8 activations and output, per-channel
// Float requantization as qrun's QLinearConv, 1 thread) with int8 weights
// drawn from [-wmax, wmax]: 64 keeps every pair bounded (the pairs kernel),
// 127 does not (the widening kernel).
double conv_seconds(const qk::ConvGeometry& g, int wmax, std::mt19937& rng) {
  const int64_t depth = g.in_channels * g.kernel[0] * g.kernel[1];
  const int64_t plane = g.out_spatial[0] * g.out_spatial[1];
  const auto x = random_bytes(rng, static_cast<size_t>(g.in_channels * g.in_spatial[0] * g.in_spatial[1]), 0, 255);
  const auto wb = random_bytes(rng, static_cast<size_t>(g.out_channels * depth), -wmax, wmax);
  std::vector<int8_t> w(wb.size());
  std::memcpy(w.data(), wb.data(), wb.size());
  const int8_t zero = 0;
  const qk::PackedQConvWeights packed(w.data(), g.out_channels, 1, depth, &zero, 1);
  if (packed.pairs_bounded() != (wmax <= 64)) {
    std::fprintf(stderr, "error: weights in [-%d, %d] packed with pairs_bounded %d\n", wmax, wmax, packed.pairs_bounded());
    std::exit(1);
  }
  std::vector<float> scales(static_cast<size_t>(g.out_channels));
  std::uniform_real_distribution<float> sd(1e-4f, 1e-3f);
  for (auto& s : scales) s = sd(rng);
  const qk::Requantizer r = qk::make_requantizer(qk::RequantMode::Float, scales, 3);
  std::vector<int32_t> bias(static_cast<size_t>(g.out_channels), 1000);
  std::vector<uint8_t> y(static_cast<size_t>(g.out_channels * plane));
  return best_seconds(
      [&] { qk::qconv_fast<uint8_t, uint8_t>(g, x.data(), uint8_t{7}, packed, bias.data(), &r, y.data(), 1); }, 15, 0);
}

int section_int8_avx2() {
  const QGemmIsa& isa = qk::detail::best_qgemm_isa();
  if (std::string(isa.name) != "avx2" || !isa.a_unsigned_pairs) {
    std::fprintf(stderr, "error: int8-avx2 needs the AVX2 kernels (ISA in force: %s): run on an AVX2 host with QTOOL_ISA=avx2\n",
                 isa.name);
    return 2;
  }
#if defined(__x86_64__) && defined(__GNUC__)
  std::mt19937 rng(5);
  const double hz = cycles_per_second();
  const double peak = pairs_peak_ops_per_second(true), raw = pairs_peak_ops_per_second(false);
  std::printf("int8-avx2: core clock %.2f GHz (dependent adds); 1 thread\n", hz / 1e9);
  // Two multiplies per 32 products (VPMADDUBSW, VPMADDWD), two multiply
  // ports on Intel cores since Haswell: 64 ops per cycle at the most.
  std::printf("int8-avx2: peak VPMADDUBSW+VPMADDWD+VPADDD (registers only) %.1f GOPS = %.1f int8 ops/cycle "
              "(port bound 64; VPMADDUBSW alone %.1f ops/cycle, not reachable with int32 results)\n",
              peak / 1e9, peak / hz, raw / hz);
  struct Row {
    const char* name;
    qk::detail::QMicroKernel kernel;
  };
  const Row rows[] = {{"pairs a_unsigned 4x16 (GEMM)", isa.a_unsigned_pairs},
                      {"pairs a_signed 4x16 (conv)", isa.a_signed_pairs},
                      {"widening a_unsigned 4x16", isa.a_unsigned},
                      {"widening a_signed 4x16", isa.a_signed}};
  for (const Row& row : rows) {
    const double ops = kernel_ops_per_second(row.kernel, isa.mr, rng);
    std::printf("int8-avx2: kernel %-30s K=256, L1: %6.1f GOPS = %5.1f ops/cycle, %5.1f%% of peak\n", row.name,
                ops / 1e9, ops / hz, 100 * ops / peak);
  }
  std::printf("int8-avx2: resnet18 int8 convs (uint8 x int8, requantized to uint8, 1 thread): "
              "bounded weights (pairs kernel) vs unbounded (widening kernel)\n");
  std::printf("int8-avx2: %-32s %5s %8s %9s %9s %7s %6s\n", "layer", "count", "GMAC", "ms pairs", "ms widen", "speedup",
              "eff%");
  double total_ops = 0, total_pairs = 0, total_widen = 0;
  for (const ConvLayer& l : kResnet18Convs) {
    const qk::ConvGeometry g = geometry_of(l);
    const double ops = 2.0 * static_cast<double>(g.out_channels * g.out_spatial[0] * g.out_spatial[1]) *
                       static_cast<double>(l.c * l.k * l.k);
    const double sp = conv_seconds(g, 64, rng), sw = conv_seconds(g, 127, rng);
    std::printf("int8-avx2: %-32s %5d %8.3f %9.3f %9.3f %6.2fx %5.1f%%\n", l.name, l.count, ops / 2e9, sp * 1e3, sw * 1e3,
                sw / sp, 100 * ops / sp / peak);
    total_ops += l.count * ops, total_pairs += l.count * sp, total_widen += l.count * sw;
  }
  std::printf("int8-avx2: %-32s %5d %8.3f %9.3f %9.3f %6.2fx %5.1f%%\n", "all 20 convs", 20, total_ops / 2e9,
              total_pairs * 1e3, total_widen * 1e3, total_widen / total_pairs, 100 * total_ops / total_pairs / peak);
  return 0;
#else
  std::fprintf(stderr, "error: int8-avx2 needs an x86-64 build\n");
  return 2;
#endif
}

struct Section {
  const char* name;
  int (*run)();
};
constexpr Section kSections[] = {{"int8-avx2", section_int8_avx2}};

}  // namespace

int main(int argc, char** argv) {
  if (!quant::kernels::isa_env_error().empty()) {
    std::fprintf(stderr, "error: %s\n", quant::kernels::isa_env_error().c_str());
    return 2;
  }
  if (argc < 2) {
    std::fprintf(stderr, "error: name a section (int8-avx2)\n");
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    const Section* s = nullptr;
    for (const Section& c : kSections)
      if (std::string(argv[i]) == c.name) s = &c;
    if (!s) {
      std::fprintf(stderr, "error: unknown section '%s' (known: int8-avx2)\n", argv[i]);
      return 2;
    }
  }
  for (int i = 1; i < argc; ++i)
    for (const Section& c : kSections)
      if (std::string(argv[i]) == c.name)
        if (int rc = c.run(); rc != 0) return rc;
  return 0;
}
