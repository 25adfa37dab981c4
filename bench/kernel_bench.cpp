// Kernel throughput against the peak of the instructions the kernel is built
// from, measured in the same process (scripts/bench.sh kernels). Not a test:
// it times things, and the figures depend on the host and its load.
//
//   kernel_bench SECTION...    sections: int8-avx2 float-avx2 float-avx512 int8-amx
//
// Each section is one function of kSections at the bottom; another is a
// function and a row. Every kernel and layer is timed in rounds interleaved
// with the peak loop (measure_against_peak: warm-up, then 11 rounds of peak,
// >= 25 ms of calls of the layer, each timed alone, peak; a round counts its
// fastest call; medians over the rounds; the rounds of a table's layers
// interleaved, round r of every layer before round r + 1), in this thread's
// CPU time, so the efficiency is a ratio of two rates measured within the
// same few milliseconds. "ops"
// counts a multiply and an add as two operations. Bad arguments: one
// "error:" line, exit 2.
#include <algorithm>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bench/median.h"
#include "libquant/kernels/conv.h"
#include "libquant/kernels/conv_fast.h"
#include "libquant/kernels/cpu.h"
#include "libquant/kernels/gemm_ukernel.h"
#include "libquant/kernels/qconv_fast.h"
#include "libquant/kernels/qgemm_ukernel.h"
#include "libquant/kernels/requant.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>  // the AMX peak loop's tile intrinsics
#endif

namespace {

namespace qk = quant::kernels;
using qtool_bench::median;
using qk::detail::QGemmIsa;

// This thread's CPU time in seconds: time spent descheduled (another
// process's time slice) does not count. On a shared 2-core host with a load
// of 10, calls of 10 ms or more were never left alone for their whole length,
// and their best wall time still held several other processes' slices.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Seconds per call of f over one window: f repeated until the window holds
// at least `min_seconds` of this thread's CPU time.
template <class F>
double window_seconds(const F& f, double min_seconds) {
  int64_t n = 0;
  const double t0 = thread_seconds();
  double elapsed = 0;
  do {
    f();
    ++n;
    elapsed = thread_seconds() - t0;
  } while (elapsed < min_seconds);
  return elapsed / static_cast<double>(n);
}

// Seconds of f's fastest call in a window of at least `min_seconds` of this
// thread's CPU time, each call timed alone (clock_gettime costs well under
// 1% of the shortest layer). Interference on a shared host only ever slows
// a call (another process's cache lines evicting ours between time slices),
// so the fastest call is the least disturbed one.
template <class F>
double fastest_call_seconds(const F& f, double min_seconds) {
  double best = 1e30, total = 0;
  do {
    const double t0 = thread_seconds();
    f();
    const double t = thread_seconds() - t0;
    best = std::min(best, t);
    total += t;
  } while (total < min_seconds);
  return best;
}

// A kernel or layer timed against the peak loop in the same stretch of time.
// Why: on this shared 2-core VM the FMA peak itself moved from 82.7 to 90.3
// GFLOPS between back-to-back runs (clock, the other core's load), and
// layers timed once for 15 calls of a few ms gave resnet18's "all convs"
// 60.6%, 75.0% and 80.2% in three runs. Here every layer gets a warm-up
// window (caches, scratch allocation, clock), then kRounds rounds of [peak,
// >= kLayerWindow s of calls of the layer, peak]; a round's layer time is its
// fastest call, its efficiency that call's ops/s over the mean of the two
// peaks around it, and the figures reported are the medians over the rounds
// (a disturbed round moves the median little; a ratio taken within one round
// cancels clock changes between rounds). The mean call of a window instead
// of its fastest gave figures 10-20 points lower under a load of 4 (other
// builds evicting the layer's data between time slices) and no steadier.
constexpr int kRounds = 11;
constexpr double kLayerWindow = 0.025;
// One peak sample: the fastest call of the register-only loop in a window
// of 2 ms (about 60 calls), as a layer's round takes its fastest call.
constexpr double kPeakWindow = 0.002;

struct Measured {
  double seconds = 0;     // median over rounds of the fastest call's seconds
  double peak = 0;        // median peak ops/s around it
  double eff = 0;         // median over rounds of (ops/s) / peak, in [0, 1+]
  double eff_lo = 0, eff_hi = 0;  // the lowest and highest round
};

// One thing to time: a call, the ops it does, and the peak loop it is held
// against (one peak sample per call of `peak`).
struct Case {
  std::function<void()> call;
  double ops = 0;
  std::function<double()> peak;
};

// Every case measured as described above, the rounds interleaved across the
// cases (round r of every case, then round r + 1): a stretch of heavy load
// on the host then hits a few rounds of every case rather than every round
// of a few cases, which the medians absorb. Timed one case after the other,
// a 2-second stretch of other builds sank a whole model's small layers by
// 10 points in one of three runs.
std::vector<Measured> measure_against_peak(const std::vector<Case>& cases) {
  for (const Case& c : cases) window_seconds(c.call, kLayerWindow);  // warm-up
  std::vector<std::vector<double>> secs(cases.size()), peaks(cases.size()), effs(cases.size());
  for (int r = 0; r < kRounds; ++r) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const double p0 = cases[i].peak();
      const double t = fastest_call_seconds(cases[i].call, kLayerWindow);
      const double p1 = cases[i].peak();
      secs[i].push_back(t);
      peaks[i].push_back(0.5 * (p0 + p1));
      effs[i].push_back(cases[i].ops / t / peaks[i].back());
    }
  }
  std::vector<Measured> out(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    Measured& m = out[i];
    m.seconds = median(secs[i]), m.peak = median(peaks[i]), m.eff = median(effs[i]);
    m.eff_lo = *std::min_element(effs[i].begin(), effs[i].end());
    m.eff_hi = *std::max_element(effs[i].begin(), effs[i].end());
  }
  return out;
}

#if defined(__x86_64__) && defined(__GNUC__)
constexpr int64_t kAsmIters = 2000;
// Iterations per call of a peak loop: 20000 (30-40 us), so that the clock
// read after each call (a system call for thread CPU time, 190 ns on this
// VM) costs under 1% of it. Calls of 2000 iterations (3 us) read the FMA
// peak 6-10% low: the 6 x 16 micro-kernel measured 111% "of the peak" and
// 33.2 ops per 32-op cycle (2026-11-30; a harness timing the loop at 2000,
// 20000 and 200000 iterations per call: 109-115, 115-120, 117-123 GFLOPS).
constexpr int64_t kPeakIters = 20000;
// The window over which the figures printed once per section are taken.
constexpr double kOnceWindow = 0.1;

// The core clock: 100 dependent scalar adds per iteration, one cycle each
// (calls of 200 000 cycles; the fastest in kOnceWindow).
double cycles_per_second() {
  const double s = fastest_call_seconds([] {
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
  }, kOnceWindow);
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
// The rate of the fastest call (kPeakIters iterations) in `window` seconds.
__attribute__((target("avx2"))) double pairs_peak_ops_per_second(bool sequence, double window = kOnceWindow) {
  const double s = fastest_call_seconds([sequence] {
    int64_t n = kPeakIters;
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
  }, window);
  return 512.0 * kPeakIters / s;
}
#undef QT_PAIR_STEP

// The float micro-kernel's register pattern alone: per iteration 12
// independent VFMADD231PS into ymm0-11 from two "B" vectors (ymm12, ymm13)
// and a broadcast (ymm14), as the 6 x 16 tile has them; 12 x 8 multiply-adds
// = 192 ops. Twelve chains cover the FMA latency (4-5 cycles) on two ports.
__attribute__((target("avx2,fma"))) double fma_peak_ops_per_second(double window = kOnceWindow) {
  const double s = fastest_call_seconds([] {
    int64_t n = kPeakIters;
    asm volatile(
        "vxorps %%ymm0, %%ymm0, %%ymm0\n"
        "vmovaps %%ymm0, %%ymm12\n"
        "vmovaps %%ymm0, %%ymm13\n"
        "vmovaps %%ymm0, %%ymm14\n"
        "1:\n"
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm0\n"
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm1\n"
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm2\n"
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm3\n"
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm4\n"
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm5\n"
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm6\n"
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm7\n"
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm8\n"
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm9\n"
        "vfmadd231ps %%ymm12, %%ymm14, %%ymm10\n"
        "vfmadd231ps %%ymm13, %%ymm14, %%ymm11\n"
        "dec %0\n"
        "jnz 1b\n"
        "vzeroupper\n"
        : "+r"(n)
        :
        : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
          "xmm12", "xmm13", "xmm14");
  }, window);
  return 192.0 * kPeakIters / s;
}
// The AVX-512 lanes tile's register pattern alone (conv_lanes_avx512.cpp, 14
// pixels x 32 channels): per iteration 28 independent VFMADD231PS into
// zmm0-27 from two weight vectors (zmm28, zmm29) and a broadcast (zmm30);
// 28 x 16 multiply-adds = 896 ops. On a core with two 512-bit FMA ports the
// bound is 64 ops per cycle, with one (port 0 + 1 fused only) 32.
// The loop itself in a function of its own: a lambda does not take its
// enclosing function's target, and without AVX-512 zmm16-30 do not exist.
__attribute__((target("avx512f"))) void fma512_loop(int64_t n) {
  asm volatile(
      "vpxord %%zmm0, %%zmm0, %%zmm0\n"
      "vmovaps %%zmm0, %%zmm28\n"
      "vmovaps %%zmm0, %%zmm29\n"
      "vmovaps %%zmm0, %%zmm30\n"
      "1:\n"
#define QT_FMA512(a, b) "vfmadd231ps %%zmm28, %%zmm30, %%zmm" #a "\nvfmadd231ps %%zmm29, %%zmm30, %%zmm" #b "\n"
      QT_FMA512(0, 1) QT_FMA512(2, 3) QT_FMA512(4, 5) QT_FMA512(6, 7) QT_FMA512(8, 9) QT_FMA512(10, 11)
      QT_FMA512(12, 13) QT_FMA512(14, 15) QT_FMA512(16, 17) QT_FMA512(18, 19) QT_FMA512(20, 21)
      QT_FMA512(22, 23) QT_FMA512(24, 25) QT_FMA512(26, 27)
#undef QT_FMA512
      "dec %0\n"
      "jnz 1b\n"
      "vzeroupper\n"
      : "+r"(n)
      :
      : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",
        "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30");
}
double fma512_peak_ops_per_second(double window = kOnceWindow) {
  const double s = fastest_call_seconds([] { fma512_loop(kPeakIters); }, window);
  return 896.0 * kPeakIters / s;
}
// One peak sample of each loop, as measure_against_peak takes them.
double pairs_peak_sample() { return pairs_peak_ops_per_second(true, kPeakWindow); }
double fma_peak_sample() { return fma_peak_ops_per_second(kPeakWindow); }
double fma512_peak_sample() { return fma512_peak_ops_per_second(kPeakWindow); }
#endif

// Bytes drawn uniformly from [lo, hi] (as int), stored as uint8.
std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t count, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<uint8_t> v(count);
  for (auto& x : v) x = static_cast<uint8_t>(d(rng));
  return v;
}

// One micro-kernel on L1-resident panels (K = 256), against the pairs peak.
// widened_a: A as the a_signed_wide / a_unsigned_wide kernels read it
// (int16, widened when packed; sign-extended for a_signed).
enum class AWidth { Bytes, SignedWords, UnsignedWords };
Case kernel_case(qk::detail::QMicroKernel kernel, int mr, std::mt19937& rng, AWidth widened_a = AWidth::Bytes) {
  constexpr int64_t kGroups = 64;
  struct Data {
    std::vector<uint8_t> a, b;
    alignas(64) int32_t tile[qk::detail::kQMaxMr * qk::detail::kQNr];
  };
  auto d = std::make_shared<Data>();
  // Weights in [-64, 64]: every pair bounded, so the pairs kernels are exact.
  d->a = random_bytes(rng, static_cast<size_t>(kGroups * mr * 4), -64, 64);
  if (widened_a != AWidth::Bytes) {
    std::vector<uint8_t> wide(2 * d->a.size());
    qk::detail::widen_q_panels(d->a.data(), static_cast<int64_t>(d->a.size()), reinterpret_cast<int16_t*>(wide.data()),
                               widened_a == AWidth::SignedWords);
    d->a = std::move(wide);
  }
  d->b = random_bytes(rng, static_cast<size_t>(kGroups * 64), 0, 255);
  return {[d, kernel] {
            for (int i = 0; i < 100; ++i) kernel(kGroups, d->a.data(), d->b.data(), d->tile);
            asm volatile("" : : "r"(d->tile) : "memory");
          },
          2.0 * 100 * kGroups * 4 * mr * qk::detail::kQNr, pairs_peak_sample};
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

// A layer's ops per run (a multiply and an add are two).
double layer_ops(const ConvLayer& l) {
  const qk::ConvGeometry g = geometry_of(l);
  return 2.0 * static_cast<double>(g.out_channels * g.out_spatial[0] * g.out_spatial[1]) *
         static_cast<double>(l.c * l.k * l.k);
}

// One layer (uint8 activations and output, per-channel Float
// requantization as qrun's QLinearConv, 1 thread) with int8 weights drawn
// from [-wmax, wmax]: 64 keeps every pair bounded (the pairs kernel), 127
// does not (the widened kernel, on weights widened when packed). Measured
// against the pairs sequence's peak.
Case conv_case(const qk::ConvGeometry& g, int wmax, double ops, std::mt19937& rng,
               const QGemmIsa& isa = qk::detail::best_conv_qgemm_isa(), double (*peak)() = nullptr) {
  const int64_t depth = g.in_channels * g.kernel[0] * g.kernel[1];
  const int64_t plane = g.out_spatial[0] * g.out_spatial[1];
  const auto wb = random_bytes(rng, static_cast<size_t>(g.out_channels * depth), -wmax, wmax);
  std::vector<int8_t> w(wb.size());
  std::memcpy(w.data(), wb.data(), wb.size());
  const int8_t zero = 0;
  std::vector<float> scales(static_cast<size_t>(g.out_channels));
  std::uniform_real_distribution<float> sd(1e-4f, 1e-3f);
  for (auto& s : scales) s = sd(rng);
  struct Data {
    qk::ConvGeometry g;
    std::vector<uint8_t> x;
    qk::PackedQConvWeights packed;
    qk::Requantizer r;
    std::vector<int32_t> bias;
    std::vector<uint8_t> y;
  };
  auto d = std::make_shared<Data>(Data{
      g, random_bytes(rng, static_cast<size_t>(g.in_channels * g.in_spatial[0] * g.in_spatial[1]), 0, 255),
      qk::PackedQConvWeights(w.data(), g.out_channels, 1, depth, &zero, 1, isa),
      qk::make_requantizer(qk::RequantMode::Float, scales, 3), std::vector<int32_t>(static_cast<size_t>(g.out_channels), 1000),
      std::vector<uint8_t>(static_cast<size_t>(g.out_channels * plane))});
  if (d->packed.pairs_bounded() != (wmax <= 64)) {
    std::fprintf(stderr, "error: weights in [-%d, %d] packed with pairs_bounded %d\n", wmax, wmax, d->packed.pairs_bounded());
    std::exit(1);
  }
  return {[d] {
            qk::qconv_fast<uint8_t, uint8_t>(d->g, d->x.data(), uint8_t{7}, d->packed, d->bias.data(), &d->r, d->y.data(),
                                             1);
          },
          ops, peak ? peak : pairs_peak_sample};
}

// Whether the kernels in force are the AVX2 ones (`isa_name`, and `complete`
// for what else the section needs); else says so on stderr.
bool avx2_in_force(const char* section, const char* isa_name, bool complete) {
  if (std::string(isa_name) == "avx2" && complete) return true;
  std::fprintf(stderr, "error: %s needs the AVX2 kernels (ISA in force: %s): run on an AVX2 host with QTOOL_ISA=avx2\n",
               section, isa_name);
  return false;
}

int section_int8_avx2() {
  const QGemmIsa& isa = qk::detail::best_qgemm_isa();
  if (!avx2_in_force("int8-avx2", isa.name, isa.a_unsigned_pairs != nullptr)) return 2;
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
    AWidth widened_a = AWidth::Bytes;
  };
  const Row rows[] = {{"pairs a_unsigned 4x16 (GEMM)", isa.a_unsigned_pairs},
                      {"pairs a_signed 4x16 (conv)", isa.a_signed_pairs},
                      {"widening a_unsigned 4x16", isa.a_unsigned},
                      {"widening a_signed 4x16", isa.a_signed},
                      {"widened a_unsigned 4x16 (GEMM)", isa.a_unsigned_wide, AWidth::UnsignedWords},
                      {"widened a_signed 4x16 (conv)", isa.a_signed_wide, AWidth::SignedWords}};
  std::vector<Case> kernel_cases;
  for (const Row& row : rows) kernel_cases.push_back(kernel_case(row.kernel, isa.mr, rng, row.widened_a));
  const std::vector<Measured> kernels = measure_against_peak(kernel_cases);
  for (size_t k = 0; k < std::size(rows); ++k) {
    const Row& row = rows[k];
    const Measured& m = kernels[k];
    const double ops = m.eff * m.peak;
    std::printf("int8-avx2: kernel %-30s K=256, L1: %6.1f GOPS = %5.1f ops/cycle, %5.1f%% of peak\n", row.name,
                ops / 1e9, ops / hz, 100 * m.eff);
  }
  std::printf("int8-avx2: resnet18 int8 convs (uint8 x int8, requantized to uint8, 1 thread): "
              "bounded weights (pairs kernel) vs unbounded (widened kernel, weights widened when packed)\n");
  std::printf("int8-avx2: %-32s %5s %8s %9s %9s %7s %6s %13s\n", "layer", "count", "GMAC", "ms pairs", "ms widen",
              "speedup", "eff%", "rounds lo-hi");
  constexpr double kTarget = 70;  // issue #22
  double total_ops = 0, total_pairs = 0, total_widen = 0, peak_time = 0, lowest = 1e9;
  int reached = 0;
  std::vector<Case> cases;  // per layer: pairs, then widening
  for (const ConvLayer& l : kResnet18Convs) {
    const qk::ConvGeometry g = geometry_of(l);
    cases.push_back(conv_case(g, 64, layer_ops(l), rng));
    cases.push_back(conv_case(g, 127, layer_ops(l), rng));
  }
  const std::vector<Measured> measured = measure_against_peak(cases);
  for (size_t i = 0; i < std::size(kResnet18Convs); ++i) {
    const ConvLayer& l = kResnet18Convs[i];
    const double ops = layer_ops(l);
    const Measured &mp = measured[2 * i], &mw = measured[2 * i + 1];
    const double sp = mp.seconds, sw = mw.seconds;
    std::printf("int8-avx2: %-32s %5d %8.3f %9.3f %9.3f %6.2fx %5.1f%% %5.1f-%5.1f%%\n", l.name, l.count, ops / 2e9,
                sp * 1e3, sw * 1e3, sw / sp, 100 * mp.eff, 100 * mp.eff_lo, 100 * mp.eff_hi);
    total_ops += l.count * ops, total_pairs += l.count * sp, total_widen += l.count * sw;
    peak_time += l.count * ops / mp.eff;  // the layer's time in peak-loop units
    lowest = std::min(lowest, 100 * mp.eff);
    if (100 * mp.eff >= kTarget) reached += l.count;
  }
  std::printf("int8-avx2: %-32s %5d %8.3f %9.3f %9.3f %6.2fx %5.1f%%\n", "all 20 convs", 20, total_ops / 2e9,
              total_pairs * 1e3, total_widen * 1e3, total_widen / total_pairs, 100 * total_ops / peak_time);
  std::printf("int8-avx2: summary resnet18 pairs kernel: %d of 20 convs at >= %.0f%% of the peak, lowest layer %.1f%%, "
              "all convs %.1f%%\n",
              reached, kTarget, lowest, 100 * total_ops / peak_time);
  return 0;
#else
  std::fprintf(stderr, "error: int8-avx2 needs an x86-64 build\n");
  return 2;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
// TDPBSUD alone on tiles already loaded: per iteration four into tmm0-3
// from tmm4-7, as the convolution kernel's 32 x 32 block issues them, each
// 16 x 16 x 64 multiply-adds = 32768 ops. (Intel documents one TDPBSUD per
// 16 cycles for a core: 2048 ops per cycle.)
constexpr int64_t kAmxIters = 2000;
__attribute__((target("amx-tile,amx-int8"))) void amx_peak_call() {
  alignas(64) static const uint8_t operand[1024] = {};
  qk::detail::amx_configure_thread();
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t i = 0; i < kAmxIters; ++i) {
    _tile_dpbsud(0, 4, 6);
    _tile_dpbsud(1, 4, 7);
    _tile_dpbsud(2, 5, 6);
    _tile_dpbsud(3, 5, 7);
  }
}
double amx_peak_ops_per_second(double window = kOnceWindow) {
  return 4.0 * 32768.0 * kAmxIters / fastest_call_seconds(amx_peak_call, window);
}
double amx_peak_sample() { return amx_peak_ops_per_second(kPeakWindow); }
#endif

// resnet18's int8 convolutions on the AMX kernels against the TDPBSUD peak,
// and against the same convolutions on the AVX-512 VNNI kernels (weights
// packed for each; the same bits).
int section_int8_amx() {
  const QGemmIsa& isa = qk::detail::best_conv_qgemm_isa();
  if (!isa.amx_tiles || !qk::detail::kQGemmIsaAvx512Vnni) {
    std::fprintf(stderr, "error: int8-amx needs AMX-INT8 and AVX-512 VNNI (conv ISA in force: %s): run on a CPU with "
                 "AMX, QTOOL_ISA unset or amx\n", isa.name);
    return 2;
  }
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
  std::mt19937 rng(7);
  const double hz = cycles_per_second(), peak = amx_peak_ops_per_second();
  std::printf("int8-amx: core clock %.2f GHz (dependent adds); 1 thread\n", hz / 1e9);
  std::printf("int8-amx: peak TDPBSUD (tiles only, 4 accumulators) %.1f GOPS = %.1f int8 ops/cycle (one per 16 "
              "cycles: 2048)\n", peak / 1e9, peak / hz);
  std::printf("int8-amx: resnet18 int8 convs (uint8 x int8, requantized to uint8, 1 thread): AMX vs AVX-512 VNNI\n");
  std::printf("int8-amx: %-32s %5s %8s %9s %9s %7s %6s %13s\n", "layer", "count", "GMAC", "ms amx", "ms vnni",
              "speedup", "eff%", "rounds lo-hi");
  std::vector<Case> cases;  // per layer: AMX, then VNNI
  for (const ConvLayer& l : kResnet18Convs) {
    const qk::ConvGeometry g = geometry_of(l);
    cases.push_back(conv_case(g, 127, layer_ops(l), rng, isa, amx_peak_sample));
    cases.push_back(conv_case(g, 127, layer_ops(l), rng, *qk::detail::kQGemmIsaAvx512Vnni, amx_peak_sample));
  }
  const std::vector<Measured> measured = measure_against_peak(cases);
  double total_ops = 0, total_amx = 0, total_vnni = 0, peak_time = 0;
  for (size_t i = 0; i < std::size(kResnet18Convs); ++i) {
    const ConvLayer& l = kResnet18Convs[i];
    const double ops = layer_ops(l);
    const Measured &ma = measured[2 * i], &mv = measured[2 * i + 1];
    std::printf("int8-amx: %-32s %5d %8.3f %9.3f %9.3f %6.2fx %5.1f%% %5.1f-%5.1f%%\n", l.name, l.count, ops / 2e9,
                ma.seconds * 1e3, mv.seconds * 1e3, mv.seconds / ma.seconds, 100 * ma.eff, 100 * ma.eff_lo,
                100 * ma.eff_hi);
    total_ops += l.count * ops, total_amx += l.count * ma.seconds, total_vnni += l.count * mv.seconds;
    peak_time += l.count * ops / ma.eff;
  }
  std::printf("int8-amx: %-32s %5d %8.3f %9.3f %9.3f %6.2fx %5.1f%%\n", "all 20 convs", 20, total_ops / 2e9,
              total_amx * 1e3, total_vnni * 1e3, total_vnni / total_amx, 100 * total_ops / peak_time);
  std::printf("int8-amx: summary resnet18: all convs %.1f%% of the TDPBSUD peak, %.2fx the AVX-512 VNNI kernels\n",
              100 * total_ops / peak_time, total_vnni / total_amx);
  return 0;
#else
  std::fprintf(stderr, "error: int8-amx needs an x86-64 Linux build\n");
  return 2;
#endif
}

// torchvision's mobilenet_v2 at 224 x 224: its pointwise (1x1) convolutions,
// the expansions, projections and the last conv (34 of its 52 convolutions;
// the others are depthwise, and the stem).
constexpr ConvLayer kMobilenetV2Pointwise[] = {
    {"1x1 32->16 @112", 1, 32, 16, 112, 1, 1},   {"1x1 16->96 @112", 1, 16, 96, 112, 1, 1},
    {"1x1 96->24 @56", 1, 96, 24, 56, 1, 1},     {"1x1 24->144 @56", 2, 24, 144, 56, 1, 1},
    {"1x1 144->24 @56", 1, 144, 24, 56, 1, 1},   {"1x1 144->32 @28", 1, 144, 32, 28, 1, 1},
    {"1x1 32->192 @28", 3, 32, 192, 28, 1, 1},   {"1x1 192->32 @28", 2, 192, 32, 28, 1, 1},
    {"1x1 192->64 @14", 1, 192, 64, 14, 1, 1},   {"1x1 64->384 @14", 4, 64, 384, 14, 1, 1},
    {"1x1 384->64 @14", 3, 384, 64, 14, 1, 1},   {"1x1 384->96 @14", 1, 384, 96, 14, 1, 1},
    {"1x1 96->576 @14", 3, 96, 576, 14, 1, 1},   {"1x1 576->96 @14", 2, 576, 96, 14, 1, 1},
    {"1x1 576->160 @7", 1, 576, 160, 7, 1, 1},   {"1x1 160->960 @7", 3, 160, 960, 7, 1, 1},
    {"1x1 960->160 @7", 2, 960, 160, 7, 1, 1},   {"1x1 960->320 @7", 1, 960, 320, 7, 1, 1},
    {"1x1 320->1280 @7", 1, 320, 1280, 7, 1, 1},
};

std::vector<float> random_floats(std::mt19937& rng, size_t count) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (auto& x : v) x = d(rng);
  return v;
}

// One float layer as qrun runs it (weights packed at prepare time, bias and
// Relu fused, 1 thread), measured against the FMA peak.
Case float_conv_case(const qk::ConvGeometry& g, double ops, std::mt19937& rng, double (*peak)()) {
  const int64_t depth = g.in_channels * g.kernel[0] * g.kernel[1];
  const int64_t plane = g.out_spatial[0] * g.out_spatial[1];
  struct Data {
    qk::ConvGeometry g;
    std::vector<float> x, w, bias;
    qk::PackedConvWeights packed;
    std::vector<float> y;
  };
  auto d = std::make_shared<Data>();
  d->g = g;
  d->x = random_floats(rng, static_cast<size_t>(g.in_channels * g.in_spatial[0] * g.in_spatial[1]));
  d->w = random_floats(rng, static_cast<size_t>(g.out_channels * depth));
  d->bias = random_floats(rng, static_cast<size_t>(g.out_channels));
  // As qrun packs them (a pointwise conv knowing its map: ops_nn.cpp, ConvPacking).
  d->packed = qk::PackedConvWeights(d->w.data(), g.out_channels, 1, depth, g.kernel, qk::pointwise_pixels(g));
  d->y.resize(static_cast<size_t>(g.out_channels * plane));
  return {[d] {
            qk::ConvActivation relu;
            relu.clamp = true, relu.lo = 0.0f, relu.hi = std::numeric_limits<float>::infinity();
            qk::conv_f32_fast(d->g, d->x.data(), d->w.data(), &d->packed, d->bias.data(), d->y.data(), 1, relu);
          },
          ops, peak};
}

// Prints one row per layer and a summary; returns the layers at or above
// `target` percent of `peak`.
int float_layer_table(const char* section, const char* model, const ConvLayer* layers, size_t n_layers,
                      double target, std::mt19937& rng, double (*peak)()) {
  std::printf("%s: %s float convs (bias + Relu fused, weights prepacked, 1 thread)\n", section, model);
  std::printf("%s: %-32s %5s %8s %9s %8s %6s %13s\n", section, "layer", "count", "GMAC", "ms", "GFLOPS", "eff%",
              "rounds lo-hi");
  double total_ops = 0, total_s = 0, peak_time = 0, lowest = 1e9;
  int count = 0, reached = 0;
  std::vector<Case> cases;
  for (size_t i = 0; i < n_layers; ++i) cases.push_back(float_conv_case(geometry_of(layers[i]), layer_ops(layers[i]), rng, peak));
  const std::vector<Measured> measured = measure_against_peak(cases);
  for (size_t i = 0; i < n_layers; ++i) {
    const ConvLayer& l = layers[i];
    const double ops = layer_ops(l);
    const Measured& m = measured[i];
    const double s = m.seconds, eff = 100 * m.eff;
    std::printf("%s: %-32s %5d %8.3f %9.3f %8.1f %5.1f%% %5.1f-%5.1f%%\n", section, l.name, l.count, ops / 2e9, s * 1e3,
                ops / s / 1e9, eff, 100 * m.eff_lo, 100 * m.eff_hi);
    total_ops += l.count * ops, total_s += l.count * s, count += l.count;
    peak_time += l.count * ops / m.eff;  // the layer's time in peak-loop units
    lowest = std::min(lowest, eff);
    if (eff >= target) reached += l.count;
  }
  std::printf("%s: %-32s %5d %8.3f %9.3f %8.1f %5.1f%%\n", section, (std::string("all, ") + model).c_str(), count,
              total_ops / 2e9, total_s * 1e3, total_ops / total_s / 1e9, 100 * total_ops / peak_time);
  std::printf("%s: summary %s: %d of %d convs at >= %.0f%% of the FMA peak, lowest layer %.1f%%, "
              "all convs %.1f%%\n",
              section, model, reached, count, target, lowest, 100 * total_ops / peak_time);
  return reached;
}

#if defined(__x86_64__) && defined(__GNUC__)
// One float section: the micro-kernel and the layer tables of the GEMM ISA
// named `isa_name` against `peak` (a register-only loop of that ISA's
// vectors), `vector_ops` float ops per cycle at most (two FMA ports).
int float_section(const char* section, const char* isa_name, const char* peak_loop, double (*peak_ops)(double),
                  double (*peak)(), int vector_ops) {
  const qk::detail::GemmIsa& isa = qk::detail::best_gemm_isa();
  if (std::string(isa.name) != isa_name) {
    std::fprintf(stderr, "error: %s needs the %s kernels (ISA in force: %s): run on a host with them, QTOOL_ISA=%s\n",
                 section, isa_name, isa.name, isa_name);
    return 2;
  }
  std::mt19937 rng(7);
  const double hz = cycles_per_second();
  const double peak_now = peak_ops(kOnceWindow);
  std::printf("%s: core clock %.2f GHz (dependent adds); 1 thread\n", section, hz / 1e9);
  std::printf("%s: peak %s (registers only) %.1f GFLOPS = %.1f ops/cycle (port bound %d)\n", section, peak_loop,
              peak_now / 1e9, peak_now / hz, vector_ops);
  {
    // The micro-kernel on L1-resident panels, whole tiles.
    constexpr int64_t kc = 256;
    const auto a = random_floats(rng, static_cast<size_t>(kc * isa.mr));
    const auto b = random_floats(rng, static_cast<size_t>(kc * isa.nr));
    std::vector<float> c(static_cast<size_t>(isa.mr * isa.nr));
    const qk::detail::MicroEpilogue ep;
    const Measured m = measure_against_peak({Case{[&] {
                                                     for (int i = 0; i < 100; ++i)
                                                       isa.kernel(kc, a.data(), b.data(), isa.nr, c.data(), isa.nr,
                                                                  isa.mr, isa.nr, ep);
                                                     asm volatile("" : : "r"(c.data()) : "memory");
                                                   },
                                                   2.0 * 100 * kc * isa.mr * isa.nr, peak}})[0];
    const double ops = m.eff * m.peak;
    std::printf("%s: kernel %dx%d K=256, L1: %6.1f GFLOPS = %5.1f ops/cycle, %5.1f%% of peak\n", section, isa.mr,
                isa.nr, ops / 1e9, ops / hz, 100 * m.eff);
  }
  constexpr double kTarget = 75;  // issue #22
  float_layer_table(section, "resnet18", kResnet18Convs, std::size(kResnet18Convs), kTarget, rng, peak);
  float_layer_table(section, "mobilenet_v2 pointwise", kMobilenetV2Pointwise, std::size(kMobilenetV2Pointwise),
                    kTarget, rng, peak);
  return 0;
}
#endif

int section_float_avx2() {
#if defined(__x86_64__) && defined(__GNUC__)
  // Two FMA ports of 8 lanes: 32 float ops per cycle at the most.
  return float_section("float-avx2", "avx2", "VFMADD231PS ymm, 12 chains", fma_peak_ops_per_second,
                       fma_peak_sample, 32);
#else
  std::fprintf(stderr, "error: float-avx2 needs an x86-64 build\n");
  return 2;
#endif
}

// The AVX-512 float kernels, as qrun runs them on an AVX-512 host; held
// against the zmm loop, so the figures say how close the lanes and GEMM
// tiles come to that core's 512-bit FMA throughput.
int section_float_avx512() {
#if defined(__x86_64__) && defined(__GNUC__)
  return float_section("float-avx512", "avx512", "VFMADD231PS zmm, 28 chains", fma512_peak_ops_per_second,
                       fma512_peak_sample, 64);
#else
  std::fprintf(stderr, "error: float-avx512 needs an x86-64 build\n");
  return 2;
#endif
}

struct Section {
  const char* name;
  int (*run)();
};
constexpr Section kSections[] = {
    {"int8-avx2", section_int8_avx2}, {"float-avx2", section_float_avx2},
    {"float-avx512", section_float_avx512}, {"int8-amx", section_int8_amx}};

}  // namespace

int main(int argc, char** argv) {
  if (!quant::kernels::kernel_env_error().empty()) {
    std::fprintf(stderr, "error: %s\n", quant::kernels::kernel_env_error().c_str());
    return 2;
  }
  if (argc < 2) {
    std::fprintf(stderr, "error: name a section (int8-avx2, float-avx2, float-avx512, int8-amx)\n");
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    const Section* s = nullptr;
    for (const Section& c : kSections)
      if (std::string(argv[i]) == c.name) s = &c;
    if (!s) {
      std::fprintf(stderr, "error: unknown section '%s' (known: int8-avx2, float-avx2, float-avx512, int8-amx)\n", argv[i]);
      return 2;
    }
  }
  for (int i = 1; i < argc; ++i)
    for (const Section& c : kSections)
      if (std::string(argv[i]) == c.name)
        if (int rc = c.run(); rc != 0) return rc;
  return 0;
}
