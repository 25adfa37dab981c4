// The two passes Histogram::add makes over one activation: statistics (min,
// max, sum, NaN/Inf counts) and bin counting. Each has a portable version,
// which defines the result, and an AVX2 version chosen at run time when the CPU
// has it; the two give identical results (tests/profile/test_batch_scan.cpp
// sweeps sizes and values), so a profile does not depend on the machine.
#pragma once

#include <cstdint>

namespace quant::profile {

struct BatchStats {
  // Smallest and largest finite value; +inf / -inf when there is none. A zero
  // minimum or maximum is +0: -0 and +0 compare equal, and which one a
  // scan meets first must not show in the profile.
  float min = 0;
  float max = 0;
  // Sum of the finite values in 8 double lanes: element i goes to lane i % 8,
  // then sum = ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)). The fixed lane
  // order lets SIMD code produce the same bits as the portable loop (a single
  // sequential sum would chain every addition on the previous one).
  double sum = 0;
  uint64_t finite = 0;
  uint64_t nan = 0;
  uint64_t inf = 0;
};

BatchStats scan_batch(const float* x, int64_t n);
BatchStats scan_batch_portable(const float* x, int64_t n);

// Adds every finite x[i] to counts[clamp(floor(x[i] * 2^-e) - first, 0, bins - 1)]
// (the power-of-two lattice of histogram.h). Precondition: e is at least
// Histogram::floor_exponent of the largest |x[i]|, so that |x[i] * 2^-e| < 2^25.
void count_cells(const float* x, int64_t n, int e, int64_t first, uint64_t* counts, int bins);
void count_cells_portable(const float* x, int64_t n, int e, int64_t first, uint64_t* counts, int bins);

// The statistics of y = min(max(x, lo), hi) (ONNX Clip, and Relu with lo = 0,
// hi = +inf, as the interpreter computes them: a NaN stays NaN, an infinity
// is clamped), as scan_batch of the written-out y gives them, and x's
// extremes and non-finite counts as scan_batch of x gives them; lo <= hi.
// The definition of a clamped pair's statistics: Histogram::add_with_clamped
// takes them in two passes with it where scan_block is not available, and in
// scan_block's own pass (ClampSum, below) where it is.
struct ClampedScan {
  BatchStats y;
  float x_min = 0, x_max = 0;
  uint64_t x_nan = 0, x_inf = 0;
};
ClampedScan scan_batch_clamped(const float* x, int64_t n, float lo, float hi);

// Whether scan_batch and count_cells run their AVX2 versions on this CPU.
bool batch_scan_uses_avx2();

// Whether count_cells' SIMD versions (and scan_block) can bin on the lattice
// (e, first): 2^-e must be a normal float and cells must fit int32.
bool lattice_fits_simd(int e, int64_t first);

// The sum of BatchStats::sum from its 8 lanes: ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)).
double combine_lanes(const double* lanes);

// One block of a tensor in Histogram::add's single pass over it (one read of
// memory instead of two: the block is still in the L1 cache when it is counted
// again in the rare case the lattice changes). Returns the statistics of
// scan_batch for the block; the sum goes to `lanes` (8 doubles, carried from
// block to block: a block must start at an element index that is a multiple
// of 8, so that element i still goes to lane i % 8).
//
// With `lattice`, also bins every finite value as count_cells would: the number
// of values in bin `lattice->hot` (the bin of 0, where Relu outputs put half
// their values) goes to `hot`, and the bins of all other values are written to
// `cold_bins` (room for n + 16 entries), `cold` of them. With
// `lattice->count_hot` false, bin `hot` is not told apart: every bin is
// listed (`hot` is 0), which saves the test where no long runs of values land
// in one bin (the test is there because incrementing one counter over and
// over waits on its own stores). The bins are those of
// count_cells only when the block's values lie in the lattice's range (the
// caller checks min and max before using them); otherwise they are arbitrary
// integers that must not index anything.
struct BinLattice {
  int e = 0;
  int64_t first = 0;
  int bins = 0;
  int32_t hot = 0;
  bool count_hot = true;
};
struct BlockScan {
  BatchStats stats;  // its sum field is left 0: the sum is in `lanes`
  int64_t cold = 0;
  uint64_t hot = 0;
};
//
// With `clamp`, the same pass also adds y = min(max(x, lo), hi) to clamp->lanes
// (8 doubles carried from block to block, y's element i to lane i % 8): the
// sum of scan_batch_clamped's y over consecutive blocks, for
// Histogram::add_with_clamped's single pass. Those lanes mean nothing for a
// block holding a NaN or an infinity (the caller then gives up on the pair).
struct ClampSum {
  float lo = 0, hi = 0;
  double* lanes = nullptr;
};
BlockScan scan_block(const float* x, int64_t n, double* lanes, const BinLattice* lattice, int32_t* cold_bins,
                     const ClampSum* clamp = nullptr);

// The AVX2 version of scan_block alone, 8 values a step (scan_block's own on
// a CPU with AVX2 but not AVX-512F; tests run it on wider ones): the same
// results. Only where batch_scan_uses_avx2().
BlockScan scan_block_avx2(const float* x, int64_t n, double* lanes, const BinLattice* lattice, int32_t* cold_bins,
                          const ClampSum* clamp = nullptr);

// Whether scan_block runs on this CPU (AVX-512F, else AVX2); without it
// Histogram::add makes its two passes with scan_batch and count_cells.
bool scan_block_available();

}  // namespace quant::profile
