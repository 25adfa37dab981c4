#!/usr/bin/env bash
# Datasets: missing, empty, mixed forms, wrong input names, wrong dtype or shape
# for the model, a later sample that differs: exit 2 naming the file, nothing written.
source "$(dirname "$0")/lib.sh"
hostile relu_model "$tmp/relu.onnx"

both() {
  local pattern=$1
  shift
  expect_refused "$pattern" "$tmp/out.json" "$bin/qprofile" "$tmp/relu.onnx" "$@" -o "$tmp/out.json"
  expect_refused "$pattern" "$tmp/outdir" "$bin/qrun" "$tmp/relu.onnx" "$@" -o "$tmp/outdir"
}

both "$tmp/nowhere" --data "$tmp/nowhere"
mkdir -p "$tmp/empty"
both "$tmp/empty: no samples" --data "$tmp/empty"
mkdir -p "$tmp/hidden" && hostile npy_ok "$tmp/hidden/.a.npy" 1,4
both "$tmp/hidden: no samples" --data "$tmp/hidden"
mkdir -p "$tmp/mixed/s1" && hostile npy_ok "$tmp/mixed/a.npy" 1,4 && hostile npy_ok "$tmp/mixed/s1/x.npy" 1,4
both "$tmp/mixed: mixes .npy files (a.npy) with sample folders (s1/)" --data "$tmp/mixed"
mkdir -p "$tmp/names/s1" && hostile npy_ok "$tmp/names/s1/image.npy" 1,4
both "$tmp/names/s1/image.npy: the model has no input named 'image' (model inputs: x)" --data "$tmp/names"
mkdir -p "$tmp/noinput/s1" && : >"$tmp/noinput/s1/README"
both "$tmp/noinput/s1: sample folder holds no" --data "$tmp/noinput"
mkdir -p "$tmp/dtype" && hostile npy_int64 "$tmp/dtype/a.npy" 1,4
both "input 'x' has type int64, the model expects float32" --data "$tmp/dtype"
mkdir -p "$tmp/shape" && hostile npy_ok "$tmp/shape/a.npy" 1,5
both "input 'x' has shape [1,5], the model expects [1,4]" --data "$tmp/shape"
# A later sample that does not fit: the run fails and still writes no profile.
mkdir -p "$tmp/later" && hostile npy_ok "$tmp/later/a.npy" 1,4 && hostile npy_ok "$tmp/later/b.npy" 2,4
expect_refused "sample b: input 'x' has shape [2,4], the model expects [1,4]" "$tmp/out.json" \
  "$bin/qprofile" "$tmp/relu.onnx" --data "$tmp/later" -o "$tmp/out.json"
# qrun -o writes one complete file per sample as it goes: a's output stays, b's is never started.
expect_exit 2 "sample b: input 'x' has shape [2,4]" "$bin/qrun" "$tmp/relu.onnx" --data "$tmp/later" -o "$tmp/outdir"
[ "$(ls -A "$tmp/outdir")" = a.out0.npy ] || fail "qrun -o left $(ls -A "$tmp/outdir") after failing on sample b"
rm -rf "$tmp/outdir"
# Mixed shapes or types cannot share a --batch (dim 0 dynamic here).
hostile relu_shaped "$tmp/dyn.onnx" N,4
mkdir -p "$tmp/ragged" && hostile npy_ok "$tmp/ragged/a.npy" 1,4 && hostile npy_ok "$tmp/ragged/b.npy" 1,5
expect_refused "sample 'b': input 'x' is float32 [1,5], which cannot be stacked along dim 0 with sample 'a' (float32 [1,4])" \
  "$tmp/out.json" "$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/ragged" --batch 2 -o "$tmp/out.json"
mkdir -p "$tmp/types" && hostile npy_ok "$tmp/types/a.npy" 1,4 && hostile npy_int64 "$tmp/types/b.npy" 1,4
expect_refused "sample 'b': input 'x' is int64 [1,4], which cannot be stacked" \
  "$tmp/out.json" "$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/types" --batch 2 -o "$tmp/out.json"
both "--input 'x' is not NAME=FILE" --input x
both "$tmp/nothing.npy: cannot open" --input "x=$tmp/nothing.npy"
both "no data: give --data DIR or --input NAME=FILE"
echo "robust datasets ok"
