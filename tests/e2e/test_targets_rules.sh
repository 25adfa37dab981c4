#!/usr/bin/env bash
# Every built-in target's rules hold in qconvert's output (issue 21): a model
# that exercises them all (tests/e2e/target_rules.py: fixed Sigmoid/Tanh/
# Softmax outputs, a Concat of two fixed outputs, shared MaxPool/Reshape, a
# MatMul of two activations, LayerNormalization's scale, a first layer with a
# bias, a fully connected layer) is converted for each target; then
#  - target_rules.py checks each rule of the target's file on the output on its
#    own (activation types and schema, fixed parameters, shared parameters,
#    weight types, ranges and granularity, bias type, placement);
#  - qconvert --check-target T finds no violation in it;
#  - qrun --target T runs it and keeps SNR >= 20 dB against the float model;
# and qrun --target tflite-int8 computes in fixed point, --target
# tflite-int16x8 as TFLite's 16x8 kernels do.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py "$src/tests/e2e/target_rules.py" make "$tmp"
"$bin/qprofile" "$tmp/rules.onnx" --data "$tmp/calib" -o "$tmp/p.json" --quiet
mapfile -t targets < <("$bin/qconvert" --list-targets | awk '{print $1}')
((${#targets[@]} >= 13)) || fail "qconvert --list-targets listed ${#targets[@]} targets"
for t in "${targets[@]}"; do
  q="$tmp/$t.onnx"
  "$bin/qconvert" "$tmp/rules.onnx" --profile "$tmp/p.json" -o "$q" --target "$t" --report "$tmp/$t.report.json" 2>"$tmp/err" ||
    fail "qconvert --target $t: $(cat "$tmp/err")"
  $py "$src/tests/e2e/target_rules.py" check "$q" "$src/targets/$t.json" >"$tmp/rules.out" ||
    fail "target $t: rules broken in qconvert's output: $(cat "$tmp/rules.out")"
  "$bin/qconvert" --check-target "$t" "$q" >"$tmp/check.out" 2>&1 ||
    fail "target $t: --check-target found violations in qconvert's own output: $(grep -v '^note' "$tmp/check.out")"
  "$bin/qrun" "$q" --reference "$tmp/rules.onnx" --data "$tmp/calib" --target "$t" --min-snr 20 --quiet >"$tmp/run.out" 2>&1 ||
    fail "target $t: qrun --min-snr 20: $(cat "$tmp/run.out")"
done
# qrun --target tflite-int8 requantizes in fixed point (its compute rule):
# the same bits as --requant fixed-point, other bits than --requant float.
for mode in target fixed-point float; do
  extra=()
  [ "$mode" = target ] || extra=(--requant "$mode")
  "$bin/qrun" "$tmp/tflite-int8.onnx" --data "$tmp/calib" --target tflite-int8 "${extra[@]}" -o "$tmp/out.$mode" --quiet >/dev/null
done
$py - "$tmp" <<'PY' || fail "qrun --target tflite-int8 does not compute in fixed point"
import glob, os, sys
import numpy as np
d = sys.argv[1]
files = sorted(os.path.basename(f) for f in glob.glob(d + "/out.target/*.npy"))
assert files
same = lambda mode: all(np.array_equal(np.load(f"{d}/out.target/{f}"), np.load(f"{d}/out.{mode}/{f}")) for f in files)
assert same("fixed-point"), "differs from --requant fixed-point"
assert not same("float"), "identical to --requant float"
PY
# qrun --target tflite-int16x8 computes TFLite's 16x8 bits: int16 Conv
# (per-channel, depthwise), MatMul and Gemm on int64 accumulators with
# TFLite's int64 MultiplyByQuantizedMultiplier (tflite16x8_reference.py
# writes the arithmetic out from TFLite's sources); the same model run with
# those ops in float between Q/DQ (--no-lower) must differ, or the check
# could not tell the two apart.
mkdir -p "$tmp/wide"
$py "$src/tests/e2e/tflite16x8_reference.py" make "$tmp/wide"
"$bin/qrun" "$tmp/wide/wide.onnx" --data "$tmp/wide/data" --target tflite-int16x8 -o "$tmp/wide/out" --quiet >/dev/null
$py "$src/tests/e2e/tflite16x8_reference.py" check "$tmp/wide" "$tmp/wide/out" >"$tmp/wide.out" ||
  fail "qrun --target tflite-int16x8 differs from TFLite's 16x8 arithmetic: $(cat "$tmp/wide.out")"
"$bin/qrun" "$tmp/wide/wide.onnx" --data "$tmp/wide/data" --target tflite-int16x8 --no-lower -o "$tmp/wide/float" --quiet >/dev/null
! $py "$src/tests/e2e/tflite16x8_reference.py" check "$tmp/wide" "$tmp/wide/float" >/dev/null ||
  fail "the 16x8 reference check cannot tell integer from float arithmetic"
# The report names what each target runs in float: LayerNormalization is not in tflite-int8's set.
$py - "$tmp/tflite-int8.report.json" <<'PY' || fail "the report does not say why LayerNormalization stays float"
import json, sys
r = json.load(open(sys.argv[1]))
n = next(n for n in r["nodes"] if n["op_type"] == "LayerNormalization")
assert not n["quantized"] and "not in the op set of target tflite-int8" in n["reason"], n
PY
echo "rules of ${#targets[@]} targets ok"
