// The im2col matrix of a convolution as the B operand of its GEMM, packed
// panel by panel straight from the input (the matrix itself never exists).
//
// For one image and group: row k = (c, kd, kh, kw), column j = (od, oh, ow),
// element = x[c, od*s+kd*d-p, oh*s+kh*d-p, ow*s+kw*d-p], or 0 in the padding.
//
// The packers write the same bytes:
//  - generic: row by row, each row as runs of an output row cut at panel
//    boundaries (any geometry, any panel width);
//  - vector, AVX-512 (panel width a multiple of 16) or AVX2 (of 8), stride 1
//    or 2 along the width: panel by panel, tap by tap. The lanes of a panel
//    and their output rows are worked out once per panel, then for each tap
//    which lanes read inside the input and from where (a few masked loads per
//    vector); every input channel of the depth block reuses that with its own
//    base pointer, and so do the later depth blocks of the same columns (each
//    thread keeps the reads of the column block it packed last). Runs were
//    short and each cost a call and mask setup in the row-wise packer, which
//    took a fifth of a float resnet18 run.
#pragma once

#include <cstdint>

#include "libquant/kernels/gemm_packed.h"
#include "libquant/kernels/spatial.h"

namespace quant::kernels {

class Im2colSource final : public PanelSource {
 public:
  // kVector: the widest vector packer the CPU has, wherever the geometry
  // allows it (tests compare it to kGeneric); kVectorAvx2: the AVX2 one even
  // on an AVX-512 CPU (for tests); kBest: the faster of vector and generic
  // for the call.
  enum class Packer { kGeneric, kVector, kVectorAvx2, kBest };

  Im2colSource(const detail::Spatial3& s, const float* x, Packer packer = Packer::kBest);
  // Whether this CPU (under QTOOL_ISA) has a vector packer (AVX-512F + BMI2,
  // or AVX2), and the AVX2 one; without it kVector (kVectorAvx2) packs as
  // kGeneric, and a test comparing the two has nothing to compare.
  static bool vector_available();
  static bool vector_avx2_available();

  void pack(int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float* dst) const override;

 private:
  void pack_generic(int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float* dst) const;

  detail::Spatial3 s_;
  const float* x_;
  int64_t in_plane_, k_volume_;
  Packer packer_;
  enum class Vector { kNone, kAvx512, kAvx2 };
  Vector vector_ = Vector::kNone;  // the vector packer for this geometry, if any
};

}  // namespace quant::kernels
