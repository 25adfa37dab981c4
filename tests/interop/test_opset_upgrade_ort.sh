#!/usr/bin/env bash
# Opset 9 and 7 models (tests/e2e/old_opset_models.py), upgraded by qconvert on the
# way to QDQ (opset 13, per-channel weights; opset 10, per tensor): ONNX Runtime
# runs the quantized models; their outputs agree with qrun's and stay close
# to ONNX Runtime's outputs of the original float models.
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"

/usr/bin/python3 "$src/tests/e2e/old_opset_models.py" make "$tmp/m"
data="$tmp/m/cnn9_in"
"$bin/qprofile" "$tmp/m/cnn9.onnx" --data "$data" -o "$tmp/p.json" --quiet
node "$src/tests/interop/ort_run.js" "$tmp/m/cnn9.onnx" "$data" "$tmp/ort_float" >/dev/null
for granularity in per-channel per-tensor; do
  q="$tmp/q_$granularity.onnx"
  "$bin/qconvert" "$tmp/m/cnn9.onnx" --profile "$tmp/p.json" --$granularity -o "$q" 2>/dev/null
  node "$src/tests/interop/ort_run.js" "$q" "$data" "$tmp/ort_$granularity" >/dev/null
  "$bin/qrun" "$q" --data "$data" -o "$tmp/qrun_$granularity" --target "$ort_target" --quiet
  snr "opset 9 model, $granularity: qrun vs ORT" "$tmp/ort_$granularity" "$tmp/qrun_$granularity" 60
  snr "opset 9 model, $granularity: ORT quantized vs ORT float" "$tmp/ort_float" "$tmp/ort_$granularity" 30
done
# The opset 7 model of the other rewritten ops (Upsample linear, BatchNormalization spatial=0, Softmax's 2-D
# coercion, Split, ReduceSum, Dropout, Clip, TopK).
data="$tmp/m/ops7_in"
"$bin/qprofile" "$tmp/m/ops7.onnx" --data "$data" -o "$tmp/p7.json" --quiet
"$bin/qconvert" "$tmp/m/ops7.onnx" --profile "$tmp/p7.json" -o "$tmp/q7.onnx" 2>/dev/null
node "$src/tests/interop/ort_run.js" "$tmp/m/ops7.onnx" "$data" "$tmp/ort_float7" >/dev/null
node "$src/tests/interop/ort_run.js" "$tmp/q7.onnx" "$data" "$tmp/ort_q7" >/dev/null
"$bin/qrun" "$tmp/q7.onnx" --data "$data" -o "$tmp/qrun_q7" --target "$ort_target" --quiet
# Within a step of the 8-bit grid: ONNX Runtime and qrun round the 8-bit Softmax
# and the Clip between Q/DQ pairs differently in a few elements (41 dB measured).
snr "opset 7 model: qrun vs ORT" "$tmp/ort_q7" "$tmp/qrun_q7" 35
snr "opset 7 model: ORT quantized vs ORT float" "$tmp/ort_float7" "$tmp/ort_q7" 30
echo "opset upgrade interop ok"
