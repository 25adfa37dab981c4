#!/usr/bin/env bash
# Hostile and broken models: every tool exits 2 with one `error:` line naming the
# file and what is wrong (node, op, value), and writes nothing.
source "$(dirname "$0")/lib.sh"
mkdir -p "$tmp/data"
hostile npy_ok "$tmp/data/a.npy" 1,4
"$bin/qprofile" "$model" --data "$samples/digits/calib" --limit 2 -o "$tmp/digits.json" --quiet

# check_model FILE PATTERN: qprofile, qrun and qconvert all refuse FILE.
check_model() {
  local m=$1 pattern=$2
  expect_refused "$pattern" "$tmp/out.json" "$bin/qprofile" "$m" --data "$tmp/data" -o "$tmp/out.json" --quiet
  expect_refused "$pattern" "$tmp/outdir" "$bin/qrun" "$m" --data "$tmp/data" -o "$tmp/outdir" --quiet
  expect_exit 2 "$(basename "$m")" "$bin/qrun" "$m" --data "$tmp/data" --quiet
}
# check_import FILE PATTERN: refused at import, so qconvert refuses it too.
check_import() {
  check_model "$@"
  expect_refused "$2" "$tmp/out.onnx" "$bin/qconvert" "$1" --profile "$tmp/digits.json" -o "$tmp/out.onnx" --force
}

hostile truncated "$tmp/truncated.onnx" "$model"
check_import "$tmp/truncated.onnx" "truncated.onnx: not a valid ONNX model"
head -c 3000 /dev/urandom >"$tmp/random.onnx"
printf '\xff\xff\xff' >>"$tmp/random.onnx"
check_import "$tmp/random.onnx" "random.onnx: not a valid ONNX model"
: >"$tmp/empty.onnx"
check_import "$tmp/empty.onnx" "empty.onnx: not a valid ONNX model"

hostile missing_initializer "$tmp/m.onnx"
check_import "$tmp/m.onnx" "Add node 'add_w' reads 'w', which is neither a graph input, an initializer nor a node output"
hostile unknown_domain "$tmp/m.onnx"
check_import "$tmp/m.onnx" "node 0 'evil_relu' (Relu) uses domain 'com.evil', which the model's opset_import does not declare"
hostile cycle "$tmp/m.onnx"
check_import "$tmp/m.onnx" "graph has a cycle through Relu node"
hostile duplicate_output "$tmp/m.onnx"
check_import "$tmp/m.onnx" "value 'y' is produced twice (second by node 1 'b')"
hostile no_outputs "$tmp/m.onnx"
check_import "$tmp/m.onnx" "graph has no outputs"
hostile overflow_initializer "$tmp/m.onnx"
check_import "$tmp/m.onnx" "initializer 'w': tensor 'w': shape [1099511627776,1099511627776] has more elements than fit in 64 bits"
hostile absurd_initializer "$tmp/m.onnx"
check_import "$tmp/m.onnx" "shape [1048576,33554432] float32 needs more than"
hostile short_initializer "$tmp/m.onnx"
check_import "$tmp/m.onnx" "tensor 'w' has 7 bytes of data, expected 16 for shape [4] float32"
hostile negative_dim "$tmp/m.onnx"
check_import "$tmp/m.onnx" "value 'x' declares a negative dimension -4"

# Unknown ops are refused by the interpreter naming node, op and opset (qconvert
# leaves them float, so only qprofile and qrun refuse).
hostile unknown_op "$tmp/m.onnx"
check_model "$tmp/m.onnx" "FancyOp node 'fancy': operator FancyOp (opset 13) is not supported by the interpreter"

# Shapes computed while running: refused before allocating, naming the node.
hostile reshape_absurd "$tmp/m.onnx"
check_model "$tmp/m.onnx" "Reshape node 'reshape_big': Reshape shape [4611686018427387904,4] has more elements than fit in 64 bits"
hostile conv_absurd_pads "$tmp/m.onnx"
mkdir -p "$tmp/data4d" && hostile npy_ok "$tmp/data4d/a.npy" 1,1,2,2
expect_refused "Conv node 'conv_pads': Conv pads value 1099511627776 is absurdly large" "$tmp/out.json" \
  "$bin/qprofile" "$tmp/m.onnx" --data "$tmp/data4d" -o "$tmp/out.json"
hostile conv_huge_output "$tmp/m.onnx"
expect_refused "Conv node 'conv_big': shape [1,1,131074,131074] float32 needs more than" "$tmp/outdir" \
  "$bin/qrun" "$tmp/m.onnx" --data "$tmp/data4d" -o "$tmp/outdir"
hostile broadcast_absurd "$tmp/m.onnx"
mkdir -p "$tmp/data1m" && hostile npy_ok "$tmp/data1m/a.npy" 1048576
expect_refused "Add node 'outer_sum': Add broadcast output [1048576,1048576] is too large" "$tmp/out.json" \
  "$bin/qprofile" "$tmp/m.onnx" --data "$tmp/data1m" -o "$tmp/out.json"
# An output sized by the data (an outer product of two 512 KiB inputs, 64 GiB)
# is refused by the kernel's checked allocation, not left to the OOM killer.
hostile matmul_outer "$tmp/m.onnx"
mkdir -p "$tmp/data128k" && hostile npy_ok "$tmp/data128k/a.npy" 131072,1
expect_refused "MatMul node 'outer': shape [131072,131072] float32 needs more than" "$tmp/outdir" \
  "$bin/qrun" "$tmp/m.onnx" --data "$tmp/data128k" -o "$tmp/outdir"
expect_refused "MatMul node 'outer': shape [131072,131072] float32 needs more than" "$tmp/out.json" \
  "$bin/qprofile" "$tmp/m.onnx" --data "$tmp/data128k" -o "$tmp/out.json"
echo "robust models ok"
