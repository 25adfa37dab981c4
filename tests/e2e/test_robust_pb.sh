#!/usr/bin/env bash
# ONNX TensorProto (.pb) inputs in the ONNX test-data layout: garbage, short raw
# data, an unsupported type, an absurd shape: exit 2 naming the file.
source "$(dirname "$0")/lib.sh"
hostile relu_model "$tmp/relu.onnx"

check() {
  local kind=$1 pattern=$2
  rm -rf "$tmp/data" && mkdir -p "$tmp/data/test_data_set_0"
  hostile "$kind" "$tmp/data/test_data_set_0/input_0.pb"
  local f="$tmp/data/test_data_set_0/input_0.pb"
  expect_refused "$f: $pattern" "$tmp/out.json" "$bin/qprofile" "$tmp/relu.onnx" --data "$tmp/data" -o "$tmp/out.json"
  expect_refused "$f: $pattern" "$tmp/outdir" "$bin/qrun" "$tmp/relu.onnx" --data "$tmp/data" -o "$tmp/outdir"
  expect_refused "$f: $pattern" "$tmp/outdir" "$bin/qrun" "$tmp/relu.onnx" --input "x=$f" -o "$tmp/outdir"
}
check pb_garbage "not a valid ONNX TensorProto (.pb) file"
check pb_short "tensor 'x' has 12 bytes of data, expected 16 for shape [1,4] float32"
check pb_dtype "tensor 'x' has data type 14, which qtool does not support"
check pb_strings_short "tensor 'x' has 1 strings, expected 2 for shape [2]"
check pb_absurd "tensor 'x': shape [2147483648,2147483648] float32 needs more than"
echo "robust pb ok"
