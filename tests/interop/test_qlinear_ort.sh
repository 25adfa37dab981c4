#!/usr/bin/env bash
# ONNX Runtime's com.microsoft QLinear* element-wise, lookup-table and pooling
# ops run in qrun exactly as in onnxruntime-node on x86-64 (issue 6): every byte
# of every output equal, over every pair of 8-bit operands, swept scales and
# zero points (scale ratios from 1e-7 to 1e9), broadcasting forms, and the
# parameter sets where MLAS's float evaluation order decides the rounding
# (tests/interop/make_qlinear_models.py).
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"
/usr/bin/python3 "$src/tests/interop/make_qlinear_models.py" "$tmp"
for t in uint8 int8; do
  "$bin/qrun" "$tmp/qlinear_$t.onnx" --data "$tmp/qlinear_${t}_data" -o "$tmp/qrun_$t" --target "$ort_target" --quiet
  node "$src/tests/interop/ort_run.js" "$tmp/qlinear_$t.onnx" "$tmp/qlinear_${t}_data" "$tmp/ort_$t" >/dev/null
  if ! /usr/bin/python3 "$src/tests/interop/compare_outputs.py" "$tmp/qrun_$t" "$tmp/ort_$t" --exact >"$tmp/log" 2>&1; then
    echo "FAIL $t: qrun differs from ONNX Runtime"
    cat "$tmp/log"
    exit 1
  fi
  echo "ok $t: $(tail -n 1 "$tmp/log")"
done
