#!/usr/bin/env bash
# .npy inputs: bad magic, malformed header, unsupported dtype, Fortran order,
# big-endian, short data, an absurd shape: exit 2 naming the file, nothing written.
source "$(dirname "$0")/lib.sh"
hostile relu_model "$tmp/relu.onnx"

check() {
  local kind=$1 pattern=$2
  rm -rf "$tmp/data" && mkdir -p "$tmp/data"
  hostile "$kind" "$tmp/data/s.npy"
  expect_refused "$tmp/data/s.npy: $pattern" "$tmp/out.json" "$bin/qprofile" "$tmp/relu.onnx" --data "$tmp/data" -o "$tmp/out.json"
  expect_refused "$tmp/data/s.npy: $pattern" "$tmp/outdir" "$bin/qrun" "$tmp/relu.onnx" --data "$tmp/data" -o "$tmp/outdir"
  expect_refused "$tmp/data/s.npy: $pattern" "$tmp/outdir" "$bin/qrun" "$tmp/relu.onnx" --input "x=$tmp/data/s.npy" -o "$tmp/outdir"
}
check npy_magic "not a .npy file"
check npy_header "malformed header dict"
check npy_dtype "unsupported dtype '<c8'"
check npy_fortran "fortran_order True is not supported"
check npy_bigendian "big-endian dtype '>f4' is not supported"
check npy_short "data is short: 15 bytes, shape [1,4] float32 needs more"
check npy_absurd "data is short: 16 bytes, shape [1073741824,1073741824] float32 needs more"
check npy_overflow "shape [0,4294967296,4294967296,16] has more elements than fit in 64 bits"
# --labels is a .npy too.
hostile npy_fortran "$tmp/labels.npy"
mkdir -p "$tmp/ok" && hostile npy_ok "$tmp/ok/a.npy" 1,4
expect_exit 2 "labels.npy: fortran_order True" "$bin/qrun" "$tmp/relu.onnx" --data "$tmp/ok" --labels "$tmp/labels.npy"
echo "robust npy ok"
