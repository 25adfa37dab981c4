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

// Whether scan_batch and count_cells run their AVX2 versions on this CPU.
bool batch_scan_uses_avx2();

}  // namespace quant::profile
