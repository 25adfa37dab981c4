#!/usr/bin/env bash
# An opset 9 model (tests/e2e/old_opset_models.py), upgraded by qconvert on the
# way to QDQ (opset 13, per-channel weights; opset 10, per tensor): ONNX Runtime
# runs the quantized model; its outputs agree with qrun's on it and stay close
# to ONNX Runtime's outputs of the original opset 9 float model.
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"
snr() { /usr/bin/python3 "$src/tests/zoo/snr_table.py" "$@"; }

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
echo "opset upgrade interop ok"
