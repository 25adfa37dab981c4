#include "libquant/kernels/qconv_fast.h"

#include <algorithm>
#include <cassert>
#include <type_traits>
#include <vector>

#include "libquant/kernels/cpu.h"
#include "libquant/kernels/qconv_input.h"
#include "libquant/kernels/threadpool.h"

namespace quant::kernels {

using detail::copy_wide;
using detail::kQKGroup;
using detail::kQNr;
using detail::line_stores;
using detail::pack_block;
using detail::pad_planes;
using detail::pad_quads;
using detail::q_padded_k;
using detail::QFastShape;
using detail::qfast_shape;
using detail::quad_pixels;
using detail::stored_value;
using detail::wide_tap_offset;

namespace {

// Output pixels per packed block: the block's panels (K x pixels bytes) stay
// within this many bytes, so they sit in L2 while every weight panel sweeps
// them: 192 KiB where the L2 holds 512 KiB or more, 3/8 of a smaller one
// (96 KiB of a 256 KiB L2). On this project's 2 MiB-L2 hosts blocks of 96 KiB
// ran resnet18 and mobilenet_v2 int8 at 0.99-1.01x the time of 192 KiB ones
// (QTOOL_ISA=avx2, 1 thread, per-step minima alternating in one process).
int64_t block_bytes() { return std::min<int64_t>(int64_t{192} << 10, l2_cache_bytes() * 3 / 8); }
// Tasks per thread where a conv has the work for them (qconv_fast): at most
// kTasksPerThread, each at least kMinTaskMacs multiply-adds (about 15 us
// with VNNI).
constexpr int64_t kTasksPerThread = 4;
constexpr int64_t kMinTaskMacs = int64_t{4} << 20;

// Whether the pairs kernel's pairs (k, k + 1 for even k, within each of the
// `rows` rows of `depth` weights, as packed: uint8 weights flipped to int8)
// all pass s8_pairs_fit_int16: what PackedQConvWeights::pairs_bounded()
// reports once these rows are packed in this order (padding pairs are zeros).
template <class TW>
bool rows_pairs_fit(const TW* w, int64_t rows, int64_t depth, bool flip) {
  std::vector<uint8_t> row(static_cast<size_t>((depth + 1) / 2 * 2), 0);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t t = 0; t < depth; ++t) row[static_cast<size_t>(t)] = static_cast<uint8_t>(w[m * depth + t]) ^ (flip ? 0x80 : 0);
    if (!detail::s8_pairs_fit_int16(row.data(), static_cast<int64_t>(row.size()))) return false;
  }
  return true;
}

}  // namespace

template <class TW>
PackedQConvWeights::PackedQConvWeights(const TW* w, int64_t out_channels, int64_t group, int64_t depth_per_group,
                                       const TW* zero_points, int64_t zero_point_count,
                                       const detail::QGemmIsa& isa_asked, int64_t taps)
    : out_channels_(out_channels), depth_(depth_per_group) {
  const bool flip = std::is_unsigned_v<TW>;  // the kernels take the weights as int8
  // Only the depthwise path (one output channel per group) reads centered weights.
  const bool depthwise = group == out_channels;
  // The depthwise path has no AMX kernels: its weights go to the best other ISA.
  const detail::QGemmIsa& isa = isa_asked.amx_tiles && depthwise ? detail::best_qgemm_isa() : isa_asked;
  isa_ = &isa;
  const int mr = isa.mr;
  const int64_t group_out = out_channels / group, panels = (group_out + mr - 1) / mr, kp = q_padded_k(depth_per_group);
  group_bytes_ = panels * mr * kp;
  // Room to widen the bytes in place (below); where they are not widened the
  // second half is never touched, so it takes no memory. AMX tiles are
  // rewritten from the usual layout, packed first into a buffer of its own.
  const int64_t room = isa.a_signed_wide && !depthwise ? 2 : 1;
  AlignedBytes usual;
  uint8_t* d = (isa.amx_tiles ? usual : data_).reserve(static_cast<size_t>(std::max<int64_t>(room * group_bytes_ * group, 1)));
  row_sum_.assign(static_cast<size_t>(out_channels), 0);
  row_zp_.assign(static_cast<size_t>(out_channels), 0);
  if (depthwise) centered_.resize(static_cast<size_t>(out_channels * depth_per_group));
  auto pack = [&](const TW* src, uint8_t* dst) {
    for (int64_t g = 0; g < group; ++g)
      for (int64_t p = 0; p < panels; ++p) {
        const int64_t m0 = g * group_out + p * mr;
        detail::pack_q_rows(src + m0 * depth_per_group, depth_per_group, std::min<int64_t>(mr, group_out - p * mr),
                            depth_per_group, mr, flip, dst + g * group_bytes_ + p * mr * kp, row_sum_.data() + m0);
      }
  };
  // K tap major (row (tap, channel)) instead of the weights' channel major
  // order, for two reasons:
  //  - with channels a multiple of 4, each group of four k is four channels
  //    of one tap, which is how qconv_fast's direct path reads the input
  //    (channel-interleaved planes, no packing): an ISA without a pairs
  //    kernel packs them so;
  //  - weights bounded for ONNX Runtime's AVX2 kernels (a target's
  //    pair_bound) pair neighbouring channels of one tap
  //    (kernels/qdot_sat16.h): an ISA with a pairs kernel packs them in that
  //    order when its own does not bound every pair and this one does, or
  //    bounds neither but channels come in fours (the direct path again).
  const int64_t channels = taps > 0 ? depth_per_group / taps : 0;
  const bool reorderable = !depthwise && taps > 1 && channels > 1 && channels * taps == depth_per_group;
  const bool quads = reorderable && channels % 4 == 0;
  std::vector<TW> reordered;
  if (reorderable && (quads || isa.a_signed_pairs)) {
    reordered.resize(static_cast<size_t>(out_channels * depth_per_group));
    for (int64_t m = 0; m < out_channels; ++m)
      for (int64_t ch = 0; ch < channels; ++ch)
        for (int64_t t = 0; t < taps; ++t)
          reordered[static_cast<size_t>(m * depth_per_group + t * channels + ch)] = w[m * depth_per_group + ch * taps + t];
  }
  // The order is chosen before packing, so that the weights are packed once:
  // packing both orders to compare them left the unused one's buffer in
  // malloc's heap (its mmap threshold rises as large blocks are freed), 9 MiB
  // of resnet18 int8's peak RSS under QTOOL_ISA=avx2.
  if (isa.a_signed_pairs && reorderable) {
    const bool natural = rows_pairs_fit(w, out_channels, depth_per_group, flip);
    tap_major_ = !natural && (quads || rows_pairs_fit(reordered.data(), out_channels, depth_per_group, flip));
  } else {
    tap_major_ = quads;
  }
  pack(tap_major_ ? reordered.data() : w, d);
  // Zero points move no packed byte (they act through the row sums): the
  // kernel pairs exactly these bytes, padding rows and K padding included.
  const int64_t bytes = group_bytes_ * group;
  pairs_bounded_ = detail::s8_pairs_fit_int16(d, bytes);
  if (!pairs_bounded_ && isa.a_signed_wide && !depthwise) {  // d is data_'s, with room for twice the bytes
    // Widened weights larger than the L2 are read from L3 or memory by every
    // pixel block: kept as int8 they stream half the bytes, widened again
    // per panel (VPMOVSXBW; with the next panel prefetched, 3% of resnet18's
    // layer4 conv's time with its weights in cache). resnet18 int8's layer3
    // and layer4 convs on a 1 MiB L2 (AMD Zen 5, QTOOL_ISA=avx2, per-step
    // minima): see docs/performance.md, stop 64.
    widened_ = true;
    widen_on_use_ = isa.widen_panel && 2 * bytes > l2_cache_bytes();
    if (!widen_on_use_) {
      detail::widen_q_panels(d, bytes, reinterpret_cast<int16_t*>(d));
      group_bytes_ *= 2;
    }
  }
  panel_bytes_ = mr * kp * (widened_ && !widen_on_use_ ? 2 : 1);
  if (isa.amx_tiles) {
    const int64_t groups = kp / kQKGroup, chunks = (groups + detail::kQAmxGroups - 1) / detail::kQAmxGroups;
    panel_bytes_ = mr * chunks * detail::kQAmxGroups * kQKGroup;
    const int64_t usual_bytes = group_bytes_;
    group_bytes_ = panels * panel_bytes_;
    uint8_t* tiles = data_.reserve(static_cast<size_t>(std::max<int64_t>(group_bytes_ * group, 1)));
    for (int64_t g = 0; g < group; ++g) detail::pack_q_tiles(d + g * usual_bytes, panels, groups, tiles + g * group_bytes_);
  }
  for (int64_t m = 0; m < out_channels; ++m) {
    const TW z = zero_point_count == 0 ? TW{0} : zero_points[zero_point_count == 1 ? 0 : m];
    row_zp_[static_cast<size_t>(m)] = stored_value(z, flip);
    has_zp_ = has_zp_ || row_zp_[static_cast<size_t>(m)] != 0;
    for (int64_t t = 0; depthwise && t < depth_per_group; ++t)
      centered_[static_cast<size_t>(m * depth_per_group + t)] =
          static_cast<int32_t>(w[m * depth_per_group + t]) - static_cast<int32_t>(z);
  }
}

template <class TX, class TY>
void qconv_fast(const ConvGeometry& g, const TX* x, TX x_zero_point, const PackedQConvWeights& packed,
                const int32_t* bias, const Requantizer* requant, TY* y, int threads) {
  const QFastShape c = qfast_shape(g);
  assert(packed.out_channels() == g.out_channels && packed.depth() == c.reduction);
  if (c.group_in == 1 && c.group_out == 1 && !c.pointwise) {
    detail::qconv_depthwise(g, x, x_zero_point, packed, bias, requant, y, threads);
    return;
  }
  if (c.out_plane == 0 || g.batch == 0 || g.out_channels == 0) return;
  const detail::QGemmIsa& isa = packed.isa();
  const bool flip = std::is_signed_v<TX>;
  const uint32_t zx = static_cast<uint32_t>(stored_value(x_zero_point, flip));
  const int64_t kp = q_padded_k(c.reduction), groups = kp / kQKGroup;
  // The row terms of the product, - zx' rowsum(w') + K zw' zx', plus the bias.
  thread_local std::vector<int32_t> row_add;
  row_add.resize(static_cast<size_t>(g.out_channels));
  for (int64_t m = 0; m < g.out_channels; ++m) {
    uint32_t v = static_cast<uint32_t>(c.reduction) * static_cast<uint32_t>(packed.row_zp()[m]) * zx -
                 zx * static_cast<uint32_t>(packed.row_sum()[m]);
    if (bias) v += static_cast<uint32_t>(bias[m]);
    row_add[static_cast<size_t>(m)] = static_cast<int32_t>(v);
  }
  detail::QOutput o;
  o.row_add = row_add.data();
  o.row_zp = packed.has_zero_points() ? packed.row_zp() : nullptr;
  o.requant = requant;
  o.channel_is_row = true;
  o.vector_ok = detail::requant_vector_ok(requant);
  o.type = std::is_same_v<TY, int32_t> ? detail::QOutType::S32
           : std::is_same_v<TY, uint8_t> ? detail::QOutType::U8
                                         : detail::QOutType::S8;
  o.ldy = c.out_plane;
  // The output stage fused into the micro-kernel where the ISA has one (uint8
  // / int8 outputs, Float requantization): per-call constants computed here
  // once. Inside the task only `rt` may be used: the thread_local vectors
  // name the running thread's instances there.
  thread_local std::vector<float> row_scale;
  detail::QRequantTile rt;
  // Weights whose pairs fit int16 take the ISA's pairs kernel (one panel at
  // a time), others the exact kernels: the same bits.
  // Others take the kernel on A widened at packing time where the ISA has
  // one (same bits again), else the byte kernels.
  const bool pairs = packed.pairs_bounded() && isa.a_signed_pairs;
  const bool wide_a = packed.widened();  // never with pairs_bounded()
  detail::QMicroKernelRequant requant_kernel = pairs && isa.a_signed_pairs_requant ? isa.a_signed_pairs_requant
                                               : wide_a ? isa.a_signed_wide_requant
                                                        : isa.a_signed_requant;
  const bool fused = requant_kernel && !std::is_same_v<TY, int32_t> && o.vector_ok;
  // The pairs kernel's whole tiles of a row panel in one call where the ISA
  // has a run form (AVX2): resnet18's 64 -> 128 downsample (K = 64) took
  // 0.91-0.92 of its time so (int8 harness, medians of 400 calls).
  const detail::QMicroKernelRequantRun requant_run =
      pairs && requant_kernel == isa.a_signed_pairs_requant ? isa.a_signed_pairs_requant_run : nullptr;
  // Weights widened when packed, and the ISA can take B widened as well:
  // the activation panels are packed as int16 (twice the bytes, half the
  // pixels per block), and the kernel widens nothing.
  const bool wide_b = fused && wide_a && isa.a_signed_wide_wb_requant;
  if (wide_b) requant_kernel = isa.a_signed_wide_wb_requant;
  const int64_t b_bytes = wide_b ? 2 : 1;  // per packed activation
  const detail::QMicroKernel one_panel = pairs ? isa.a_signed_pairs : wide_a ? isa.a_signed_wide : isa.a_signed;
  const detail::QMicroKernel2 two_panels = pairs || wide_a ? nullptr : isa.a_signed_x2;
  if (fused) {
    const detail::QFinishParams fp = detail::finish_params(o);
    row_scale.resize(static_cast<size_t>(g.out_channels));
    for (int64_t m = 0; m < g.out_channels; ++m)
      row_scale[static_cast<size_t>(m)] = requant->scale[fp.per_channel ? static_cast<size_t>(m) : 0];
    rt.row_add = o.row_add, rt.row_scale = row_scale.data(), rt.row_zp = o.row_zp;
    rt.lo = static_cast<float>(fp.lo), rt.hi = static_cast<float>(fp.hi), rt.zero_point = fp.zero_point;
  }
  // The wide path's padded planes, for every image (only this call's task
  // lambda reads them, through `padded`).
  thread_local AlignedBytes padded_buf;
  const TX* padded = nullptr;
  // The direct path: fused output stage, tap-major weights (or one tap) whose
  // groups of four k are four channels of one tap, no weight zero points (no column
  // sums to add): the kernels read B from channel-interleaved planes
  // (pad_quads) at each tap's offset, and nothing is packed per block.
  // Columns past a block's end read on into the planes' slack (or the next
  // quad), computed and never stored, as the wide rows are.
  // AMX reads 16 groups of a tap as one tile: a tap's quads in whole chunks,
  // or one tap (its last chunk reading on past the quads, below).
  const bool direct = fused && c.wide && (packed.k_tap_major() || c.taps == 1) && c.group_in % 4 == 0 && !o.row_zp &&
                      (!isa.amx_tiles || c.taps == 1 || (c.group_in / 4) % detail::kQAmxGroups == 0);
  const int64_t quad_bytes = direct ? quad_pixels(c) * 4 * b_bytes : 0;  // per channel quad
  thread_local std::vector<int64_t> tap_off;
  if (direct) {
    // AMX's last chunk of a tap of fewer than 16 quads reads up to 16 quads
    // from its first (the weights past K are zeros): slack for that.
    const int64_t slack = isa.amx_tiles ? (detail::kQAmxGroups + 1) * quad_bytes : 0;
    uint8_t* d = padded_buf.reserve(static_cast<size_t>(g.batch * g.in_channels / 4 * quad_bytes + slack));
    for (int64_t n = 0; n < g.batch; ++n) {
      const TX* xn = x + n * g.in_channels * c.in_plane;
      uint8_t* dn = d + n * g.in_channels / 4 * quad_bytes;
      if (wide_b) pad_quads<TX, true>(c, xn, x_zero_point, g.in_channels, dn, threads);
      else pad_quads<TX, false>(c, xn, x_zero_point, g.in_channels, dn, threads);
    }
    padded = reinterpret_cast<const TX*>(d);
    tap_off.resize(static_cast<size_t>(c.taps));
    for (int64_t tap = 0; tap < c.taps; ++tap) tap_off[static_cast<size_t>(tap)] = wide_tap_offset(c, tap) * 4 * b_bytes;
    rt.direct = detail::QDirectB{tap_off.data(), c.taps, c.group_in / 4, quad_bytes};
  } else if (c.wide) {
    TX* d = reinterpret_cast<TX*>(padded_buf.reserve(static_cast<size_t>(g.batch * g.in_channels * c.pitch) * sizeof(TX)));
    for (int64_t n = 0; n < g.batch; ++n)
      pad_planes(c, x + n * g.in_channels * c.in_plane, x_zero_point, g.in_channels, d + n * g.in_channels * c.pitch,
                 threads);
    padded = d;
  }

  const int mr = isa.mr;
  // Weights of more than half the L2 do not stay there from one pixel block
  // to the next: every block streams them again from L3 or memory, so such
  // convs take blocks of up to 5/8 of the L2, as few as that allows (below).
  // resnet18 int8's layer4 3x3 convs (7 x 9 wide pixels, K = 4608, 4.5 MiB
  // of widened weights) made two blocks (32 + 31 pixels) in a 1 MiB L2 and
  // took 1.4x the time they take with their weights in cache.
  const int64_t weight_bytes = (c.group_out + mr - 1) / mr * packed.panel_bytes();
  const bool streamed = weight_bytes > l2_cache_bytes() / 2;
  const int64_t budget = streamed ? std::max(block_bytes(), l2_cache_bytes() * 5 / 8) : block_bytes();
  const int64_t fit = std::max<int64_t>(1, budget / (kp * b_bytes));  // pixels whose panels fit the budget
  int64_t nc = std::clamp<int64_t>(fit / kQNr * kQNr, kQNr, (c.plane + kQNr - 1) / kQNr * kQNr);
  // Direct blocks of streamed weights keep these blocks on any number of
  // threads, which split each block's output channels instead (below).
  const bool streamed_blocks = direct && streamed;
  // Tasks per thread: up to kTasksPerThread when each still has
  // kMinTaskMacs of work. With one task per thread, a thread on a slower
  // core (or one the OS interrupts) holds the others up, where with several
  // the thread pool hands its last tasks to the one that is done; on small
  // convs (mobilenet_v2's, 5-50 us) the extra tasks cost more than that.
  const int64_t macs = g.batch * g.group * c.plane * c.reduction * c.group_out;
  const int64_t per_thread = std::clamp<int64_t>(macs / (kMinTaskMacs * std::max(threads, 1)), 1, kTasksPerThread);
  if (threads > 1 && g.batch * g.group == 1 && !streamed_blocks) {
    // Pixel blocks of equal size, as many as a multiple of the threads and
    // `per_thread` per thread while a block keeps two panels: the L2-sized
    // blocks could leave one thread 12288 pixels and the other 256
    // (mobilenet_v2's 112x112 expand conv, K = 16). A map too small for two
    // blocks per thread (7x7: 49 pixels made blocks of 32 and 17, one
    // thread doing two thirds) is one block, and its output channels are
    // split instead (below), even with one task per thread: mobilenet_v2
    // int8's 7 x 7 project convs left the worker thread idle for 20-35% of
    // their time so (2 threads, QTOOL_ISA=avx2, the thread pool's own
    // per-job timing, 2026-11-30).
    const int64_t most = c.plane / (2 * kQNr);
    if (most < 2 * threads) {
      nc = (c.plane + kQNr - 1) / kQNr * kQNr;
    } else {
      const int64_t want = (std::min(std::max<int64_t>(most, 1), std::max((c.plane + nc - 1) / nc, per_thread * threads)) +
                            threads - 1) /
                           threads * threads;
      nc = std::max<int64_t>(kQNr, (c.plane + want * kQNr - 1) / (want * kQNr) * kQNr);
    }
  }
  // The wide columns to drop: dropped by the kernel's line stores where the
  // ISA's can (lines of at least 6 pixels: a tile's panel then spans at most
  // kQLineStores lines), else computed into a scratch block copied to y.
  // Not for a short K (mobilenet_v2's stem: 27, 7 groups), where the
  // kernel's stores weigh more than its multiply-adds: that stem ran 5%
  // slower with line stores than with the scratch copy (VNNI, best and
  // median of 300 calls); resnet18's (37 groups) the same either way.
  const bool own_lines = fused && c.scratch && isa.requant_lines && c.pw >= 6 && groups >= 16;
  const bool scratch = c.scratch && !own_lines;
  // Direct blocks pack nothing: whole 32-pixel tiles, none split into a
  // tile and a lone (slower) 16-pixel panel at every block's end. Rounded
  // down: blocks sized for the threads (48 pixels of a 14 x 14 map's 210)
  // rounded up had made fewer, uneven ones (64, 64, 64, 18).
  // Streamed weights (above): the fewest blocks the budget allows, rounded
  // up to whole tiles (the last block the shorter).
  if (streamed_blocks) {
    const int64_t n = (c.plane + fit - 1) / fit;
    nc = ((c.plane + n - 1) / n + 2 * kQNr - 1) / (2 * kQNr) * (2 * kQNr);
  } else if (direct) {
    nc = std::max<int64_t>(2 * kQNr, nc / (2 * kQNr) * (2 * kQNr));
  }
  const int64_t blocks = (c.plane + nc - 1) / nc, row_panels = (c.group_out + mr - 1) / mr;
  // Where block b starts: whole panels, the blocks as even as that allows
  // (a 14 x 14 map's 196 pixels in two blocks: 96 + 100, where blocks of nc
  // made 112 + 84 and left one thread idle a sixth of the time). Direct
  // blocks keep nc's (whole 32-pixel tiles, above). nc becomes the largest
  // block, which sizes the buffers below.
  const auto block_start = [&, blocks](int64_t i) {
    return direct ? std::min(c.plane, i * nc) : i >= blocks ? c.plane : i * c.plane / blocks / kQNr * kQNr;
  };
  if (!direct)
    for (int64_t i = 0; i < blocks; ++i) nc = std::max(nc, block_start(i + 1) - block_start(i));
  const int64_t outer = g.batch * g.group * blocks;
  // Fewer pixel blocks than threads (late, small layers): split the output
  // channels too, `per_thread` chunks per thread, with each pixel block
  // packed once beforehand and shared: packing it again per chunk took 5x
  // its single-thread time with twice as many chunks as threads, and made
  // mobilenet_v2's project convs slower on 2 threads than on 1.
  int64_t chunks = 1;
  const bool shared = threads > 1 && outer < threads;
  if (shared) chunks = std::min<int64_t>(row_panels, (per_thread * threads + outer - 1) / outer);
  // A 1x1 conv that widens its input (mobilenet_v2's expand convs) splits
  // its output channels instead, channel-major, so that with the thread
  // pool's per-thread shares each thread writes the channels it will read
  // in the depthwise conv that follows (which splits by channel too); only
  // the narrow input crosses between cores, and packing it twice is cheap.
  // 2 threads: depthwise convs 540-550 us in all instead of 639-659, the
  // whole model 1571-1600 instead of 1711-1774 (sum of per-op minima).
  // So do streamed weights in several blocks: each thread then streams its
  // share of the weights once per block, where blocks split among the
  // threads (7 of 32 pixels on a 14 x 14 map, each block's channels cut in
  // two) streamed half the weights per block, seven times.
  const bool by_channel =
      threads > 1 && ((c.pointwise && g.group == 1 && c.group_in < c.group_out) || (streamed_blocks && outer > 1));
  if (by_channel) chunks = std::min<int64_t>(row_panels, threads);
  // Direct blocks (nothing packed per task) that do not divide among the
  // threads split their output channels too: resnet18's 14 x 14 layers made
  // 7 blocks, 4 for one thread and 3 for the other, and ran 1.63-1.68x
  // faster on 2 threads than on 1 where the 7 x 7 ones ran 2.1x (after:
  // 1.88-1.93x, QTOOL_ISA=avx2, per-step minima). So do blocks whose last
  // one is short: 14 x 14 maps (210 wide pixels) made blocks of 64, 64, 64
  // and 18 pixels, 128 for one thread and 82 for the other.
  if (direct && !shared && !by_channel && threads > 1 && (outer % threads != 0 || c.plane % nc != 0))
    chunks = std::min<int64_t>(row_panels, threads);
  const int64_t per_chunk = (row_panels + chunks - 1) / chunks;
  // Pixel block b: its pixels and where its input starts.
  struct Block {
    int64_t grp, n, p0, count, stride;
    const TX* xg;
  };
  auto block_of = [&](int64_t b) {
    Block k;
    const int64_t blk = b % blocks;
    k.grp = (b / blocks) % g.group, k.n = b / (blocks * g.group);
    k.p0 = block_start(blk), k.count = block_start(blk + 1) - k.p0;
    k.stride = (k.count + kQNr - 1) / kQNr * kQNr;
    const int64_t first = k.n * g.in_channels + k.grp * c.group_in;
    k.xg = direct ? reinterpret_cast<const TX*>(reinterpret_cast<const uint8_t*>(padded) + first / 4 * quad_bytes)
           : c.wide ? padded + first * c.pitch
                    : x + first * c.in_plane;
    return k;
  };
  const bool gather = !c.pointwise && !c.wide;
  // Shared blocks, in the calling thread's buffers: outer blocks of kp x nc
  // bytes and nc column sums each, packed before the product by all threads,
  // each a run of whole panels of a block (on the calling thread alone,
  // packing a 7 x 7 map's block of K = 960 took 15-17 us, the worker idle).
  thread_local AlignedBytes shared_panels;
  thread_local std::vector<int32_t> shared_sums;
  const size_t block_bytes = static_cast<size_t>(kp * ((nc + kQNr - 1) / kQNr * kQNr) * b_bytes);
  // AMX reads a panel's last chunk as 16 groups whatever K (the weights past
  // K are zeros): up to a tile's bytes past the last panel.
  const size_t panel_slack = isa.amx_tiles ? detail::kQAmxGroups * kQNr * kQKGroup : 0;
  // With one chunk per thread each task packs the block itself, as the
  // widening 1x1 convs do (by_channel): no job before the product, and each
  // thread reads its own copy. mobilenet_v2 int8's 7 x 7 project convs, 2
  // threads, per-step minima: 0.86-0.95 of their time with the block packed
  // by both threads beforehand.
  const bool pack_shared = shared && chunks > threads;
  if (pack_shared && !direct) {
    uint8_t* const panels = shared_panels.reserve(static_cast<size_t>(outer) * block_bytes + panel_slack);
    shared_sums.resize(static_cast<size_t>(outer * nc + kQNr));
    int32_t* const sums = shared_sums.data();
    const int64_t runs = std::min<int64_t>(threads, (nc + kQNr - 1) / kQNr);
    parallel_for(threads, outer * runs, [&](int64_t task) {
      thread_local AlignedBytes rows_buf;
      const Block k = block_of(task / runs);
      const int64_t run = task % runs, block_panels = (k.count + kQNr - 1) / kQNr;
      const int64_t j0 = run * block_panels / runs * kQNr, j1 = std::min(k.count, (run + 1) * block_panels / runs * kQNr);
      if (j0 >= j1) return;
      const int64_t stride = (j1 - j0 + kQNr - 1) / kQNr * kQNr;
      uint8_t* rb = gather ? rows_buf.reserve(static_cast<size_t>(c.reduction * stride * sizeof(TX))) : nullptr;
      pack_block(c, k.xg, x_zero_point, k.p0 + j0, j1 - j0, rb,
                 panels + static_cast<size_t>(task / runs) * block_bytes + static_cast<size_t>(j0 * kp * b_bytes),
                 o.row_zp ? sums + task / runs * nc + j0 : nullptr, packed.k_tap_major(), wide_b);
    });
  }
  const uint8_t* const shared_base = pack_shared ? shared_panels.data() : nullptr;
  const int32_t* const shared_sum = pack_shared ? shared_sums.data() : nullptr;
  parallel_for(threads, outer * chunks, [&](int64_t task) {
    thread_local AlignedBytes rows_buf, panel_buf, wide_out, wide_panel;
    thread_local std::vector<int32_t> col_sum;
    const int64_t chunk = by_channel ? task / outer : task % chunks, b = by_channel ? task % outer : task / chunks;
    const Block k = block_of(b);
    const int64_t grp = k.grp, n = k.n, p0 = k.p0, count = k.count, stride = k.stride;
    // Output row m of this image at ybase + m * yld: y itself, or (scratch) a
    // scratch block of every output channel, copied to y at the end.
    TY* const y_image = y + n * g.out_channels * c.out_plane;
    TY* const ybase =
        scratch ? reinterpret_cast<TY*>(wide_out.reserve(static_cast<size_t>(g.out_channels * stride) * sizeof(TY)))
                : y_image + p0;
    const int64_t yld = scratch ? stride : c.out_plane;
    // Kernel-side line stores: each 32-pixel tile's, worked out once per block.
    thread_local std::vector<detail::QLineStores> tile_lines;
    if (own_lines) {
      tile_lines.resize(static_cast<size_t>((count + 2 * kQNr - 1) / (2 * kQNr)));
      for (int64_t j = 0; j < count; j += 2 * kQNr) line_stores(c, p0 + j, std::min<int64_t>(2 * kQNr, count - j),
                                                               tile_lines[static_cast<size_t>(j / (2 * kQNr))]);
    }
    const uint8_t* pb;
    const int32_t* sums;
    if (direct) {
      pb = reinterpret_cast<const uint8_t*>(k.xg);
      sums = nullptr;
    } else if (pack_shared) {
      pb = shared_base + static_cast<size_t>(b) * block_bytes;
      sums = shared_sum + b * nc;
    } else {
      uint8_t* rb = gather ? rows_buf.reserve(static_cast<size_t>(c.reduction * stride * sizeof(TX))) : nullptr;
      uint8_t* own = panel_buf.reserve(static_cast<size_t>(kp * stride * b_bytes) + panel_slack);
      col_sum.resize(static_cast<size_t>(stride));
      pack_block(c, k.xg, x_zero_point, p0, count, rb, own, o.row_zp ? col_sum.data() : nullptr, packed.k_tap_major(),
                 wide_b);
      pb = own;
      sums = col_sum.data();
    }
    detail::QOutput ot = o;
    ot.ldy = yld;
    alignas(64) int32_t tile[2][detail::kQMaxMr * kQNr];
    const uint8_t* wg = packed.panels(grp);
    const int64_t p_begin = chunk * per_chunk, p_end = std::min(row_panels, p_begin + per_chunk);
    auto finish = [&](const int32_t* t, int64_t i0, int64_t mv, int64_t j) {
      ot.y = ybase + j;
      ot.col_sum = o.row_zp ? sums + j : nullptr;
      isa.finish(t, kQNr, mv, std::min<int64_t>(kQNr, count - j), i0, 0, ot);
    };
    for (int64_t p = p_begin; p < p_end; ++p) {
      const int64_t i0 = grp * c.group_out + p * mr;
      const int64_t mv = std::min<int64_t>(mr, c.group_out - p * mr);
      const uint8_t* wp = wg + p * packed.panel_bytes();
      if (packed.widen_on_use()) {
        // Widened here, from L3 or memory; the next panel is asked into L2
        // (PREFETCHT1) while this one's tiles run. resnet18 int8's layer3 and
        // layer4 convs took 0.92-0.96 of their time so (QTOOL_ISA=avx2, 1
        // thread, per-step minima); the same prefetch slowed AVX-512 VNNI's
        // layer4, which reads its int8 weights in its kernel, by 7-8%.
        int16_t* wide = reinterpret_cast<int16_t*>(wide_panel.reserve(static_cast<size_t>(2 * mr * kp)));
        isa.widen_panel(wp, mr * kp, wide);
        if (p + 1 < p_end)
          for (int64_t off = 0; off < mr * kp; off += 64) __builtin_prefetch(wp + packed.panel_bytes() + off, 0, 2);
        wp = reinterpret_cast<const uint8_t*>(wide);
      }
      if (fused) {
        detail::QRequantTile t = rt;
        t.row_add = rt.row_add + i0, t.row_scale = rt.row_scale + i0, t.row_zp = rt.row_zp ? rt.row_zp + i0 : nullptr;
        t.rows = static_cast<int>(mv), t.ldy = yld;
        const int64_t panel_bytes = direct ? kQNr * 4 * b_bytes : kQNr * kp * b_bytes;
        int64_t j = 0;
        if (requant_run && mv == mr && !own_lines && count >= 2 * kQNr) {  // whole tiles, then the rest as before
          const int64_t tiles = count / (2 * kQNr);
          t.y = reinterpret_cast<uint8_t*>(ybase + i0 * yld);
          t.col_sum = rt.row_zp ? sums : nullptr;
          requant_run(groups, wp, direct ? pb + p0 * 4 * b_bytes : pb, panel_bytes, tiles, t);
          j = tiles * 2 * kQNr;
        }
        for (; j < count; j += 2 * kQNr) {
          t.cols = static_cast<int>(std::min<int64_t>(2 * kQNr, count - j));
          t.y = reinterpret_cast<uint8_t*>(ybase + i0 * yld + j);
          t.col_sum = rt.row_zp ? sums + j : nullptr;
          if (own_lines) t.lines = &tile_lines[static_cast<size_t>(j / (2 * kQNr))];
          // B panel j: packed (K x 16 bytes each), or direct: at wide pixel p0 + j.
          const uint8_t* b0 = direct ? pb + (p0 + j) * 4 * b_bytes : pb + j * kp * b_bytes;
          requant_kernel(groups, wp, b0, t.cols > kQNr ? b0 + panel_bytes : b0, t);
        }
        continue;
      }
      int64_t j = 0;
      if (two_panels) {
        for (; j + kQNr < count; j += 2 * kQNr) {  // two panels, the second possibly partial
          two_panels(groups, wp, pb + j * kp, pb + (j + kQNr) * kp, tile[0], tile[1]);
          finish(tile[0], i0, mv, j);
          finish(tile[1], i0, mv, j + kQNr);
        }
      }
      for (; j < count; j += kQNr) {
        one_panel(groups, wp, pb + j * kp, tile[0]);
        finish(tile[0], i0, mv, j);
      }
    }
    if (scratch) {
      const int64_t r0 = grp * c.group_out + p_begin * mr, r1 = grp * c.group_out + std::min(c.group_out, p_end * mr);
      copy_wide(c, ybase, yld, r0, r1, p0, count, y_image);
    }
  });
}

#define QT_INSTANTIATE_PACKED_QCONV(TW)                                                                        \
  template PackedQConvWeights::PackedQConvWeights(const TW*, int64_t, int64_t, int64_t, const TW*, int64_t, \
                                                  const detail::QGemmIsa&, int64_t);
QT_INSTANTIATE_PACKED_QCONV(uint8_t)
QT_INSTANTIATE_PACKED_QCONV(int8_t)
#undef QT_INSTANTIATE_PACKED_QCONV

#define QT_INSTANTIATE_QCONV_FAST(TX, TY)                                                                      \
  template void qconv_fast<TX, TY>(const ConvGeometry&, const TX*, TX, const PackedQConvWeights&, const int32_t*, \
                                   const Requantizer*, TY*, int);
QT_INSTANTIATE_QCONV_FAST(uint8_t, uint8_t)
QT_INSTANTIATE_QCONV_FAST(uint8_t, int8_t)
QT_INSTANTIATE_QCONV_FAST(uint8_t, int32_t)
QT_INSTANTIATE_QCONV_FAST(int8_t, uint8_t)
QT_INSTANTIATE_QCONV_FAST(int8_t, int8_t)
QT_INSTANTIATE_QCONV_FAST(int8_t, int32_t)
#undef QT_INSTANTIATE_QCONV_FAST

}  // namespace quant::kernels
