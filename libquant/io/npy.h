// NumPy .npy files (format versions 1.0, 2.0 and 3.0), the tensor format of
// --data directories and of `qrun -o` outputs.
//
// Read: little-endian (or byte-sized) descrs '<f4' '<f8' '<f2' '|i1' '|u1' '<i2'
// '<u2' '<i4' '<u4' '<i8' '<u8' '|b1', C order only. '<f2' is kept as Float16
// bits. Big-endian descrs, fortran_order True, structured dtypes, bad magic, a
// malformed header dict and short (or over-long) data are refused with a
// message naming the file.
//
// Write: byte for byte what numpy.save (1.24) writes: version 1.0 (2.0 when the
// header would not fit), keys sorted, the 21-digit growth space after the
// shape, header padded with spaces to a multiple of 64 bytes including the
// final newline. Types numpy lacks are widened losslessly: BFloat16 -> '<f4',
// Int4 -> '|i1', UInt4 -> '|u1'.
#pragma once

#include <string>
#include <string_view>

#include "libquant/core/status.h"
#include "libquant/core/tensor.h"

namespace quant::io {

Expected<Tensor> read_npy(const std::string& path);
// `name_for_errors` prefixes every error message (normally the file path).
Expected<Tensor> parse_npy(std::string_view bytes, const std::string& name_for_errors);
std::string serialize_npy(const Tensor& tensor);
// Atomic (temp file + rename); an untyped (empty) tensor is refused.
Status write_npy(const std::string& path, const Tensor& tensor);

}  // namespace quant::io
