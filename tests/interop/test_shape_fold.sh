#!/usr/bin/env bash
# Transpose- and Reshape-fed weights with per-channel scales spanning 100x fold
# correctly: no shape op stays on the weight path, and ONNX Runtime's output of
# the quantized model keeps SNR >= 35 dB against the float model's.
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"
/usr/bin/python3 "$src/tests/interop/make_shape_fold_models.py" "$tmp"
for m in transpose_matmul reshape_conv; do
  "$bin/qprofile" "$tmp/$m.onnx" --data "$tmp/${m}_data" -o "$tmp/$m.json" --quiet
  "$bin/qconvert" "$tmp/$m.onnx" --profile "$tmp/$m.json" -o "$tmp/$m.q.onnx" --report "$tmp/$m.report.json"
  /usr/bin/python3 "$src/tests/interop/check_model.py" "$tmp/$m.q.onnx"
  /usr/bin/python3 - "$tmp/$m.q.onnx" <<'PY'
import sys, onnx
ops = [n.op_type for n in onnx.load(sys.argv[1]).graph.node]
assert "Transpose" not in ops and "Reshape" not in ops, f"shape op left on the weight path: {ops}"
PY
  node "$src/tests/interop/ort_run.js" "$tmp/$m.onnx" "$tmp/${m}_data" "$tmp/${m}_float"
  node "$src/tests/interop/ort_run.js" "$tmp/$m.q.onnx" "$tmp/${m}_data" "$tmp/${m}_quant"
  /usr/bin/python3 "$src/tests/interop/compare_outputs.py" "$tmp/${m}_quant" "$tmp/${m}_float" --min-snr 35
done
echo "shape folding interop ok"
