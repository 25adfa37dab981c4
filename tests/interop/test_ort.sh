#!/usr/bin/env bash
# Interop with ONNX Runtime (onnxruntime-node 1.20.1, scripts/setup_ort.sh) and
# the ONNX checker: the quantized sample is a valid model that ORT runs with
# the same top-1 as qrun on every test sample; float outputs agree closely.
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"
samples="$src/samples"
model="$samples/digits_cnn.onnx"

"$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/p.json" --quiet
for schema in asymmetric symmetric; do
  q="$tmp/q_$schema.onnx"
  "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$q" --schema "$schema"
  /usr/bin/python3 "$src/tests/interop/check_model.py" "$q"
  "$bin/qrun" "$q" --data "$samples/digits/test" -o "$tmp/qrun_$schema" --target "$ort_target" --quiet
  node "$src/tests/interop/ort_run.js" "$q" "$samples/digits/test" "$tmp/ort_$schema"
  /usr/bin/python3 "$src/tests/interop/compare_outputs.py" "$tmp/qrun_$schema" "$tmp/ort_$schema" --top1 \
    --labels "$samples/digits/test_labels.npy"
done

"$bin/qrun" "$model" --data "$samples/digits/test" -o "$tmp/qrun_float" --quiet
node "$src/tests/interop/ort_run.js" "$model" "$samples/digits/test" "$tmp/ort_float"
/usr/bin/python3 "$src/tests/interop/compare_outputs.py" "$tmp/qrun_float" "$tmp/ort_float" --top1 --atol 1e-4
echo "interop ok"
