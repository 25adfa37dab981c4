#!/usr/bin/env bash
# ONNX Runtime loads and runs the models of qconvert --weight-rounding gptq and
# hqq (the same MatMulNBits / MatMulInteger forms as round to nearest, other
# codes and scales) and agrees with qrun as closely as for rtn
# (tests/interop/test_dynamic_ort.sh): int8 to float rounding, int4 within the
# two runtimes' different int8 activation quantization; the weight-only int4
# form (float activations) to float rounding.
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"

/usr/bin/python3 "$src/tests/e2e/dynamic_models.py" make "$tmp/m"
m="$tmp/m/linear.onnx"
data="$tmp/m/linear_in"
"$bin/qprofile" "$m" --data "$data" -o "$tmp/p.json" --quiet
for r in gptq hqq; do
  d=()
  [ $r = gptq ] && d=(--data "$data" --gptq-act-order)
  "$bin/qconvert" "$m" --dynamic --weights int4 --group-size 32 --weight-rounding $r "${d[@]}" -o "$tmp/${r}_int4.onnx"
  both "$tmp/${r}_int4.onnx" "$data" "${r}_int4"
  snr "$r int4 G=32 qrun vs ORT" "$tmp/ort_${r}_int4" "$tmp/qrun_${r}_int4" 25
  "$bin/qconvert" "$m" --profile "$tmp/p.json" --weights int4 --group-size 128 --weight-rounding $r "${d[@]}" \
    -o "$tmp/${r}_wo.onnx"
  both "$tmp/${r}_wo.onnx" "$data" "${r}_wo"
  snr "$r int4 weight-only G=128 qrun vs ORT" "$tmp/ort_${r}_wo" "$tmp/qrun_${r}_wo" 100
  "$bin/qconvert" "$m" --dynamic --weight-rounding $r "${d[@]}" -o "$tmp/${r}_int8.onnx"
  /usr/bin/python3 "$src/tests/interop/check_model.py" "$tmp/${r}_int8.onnx" >/dev/null
  both "$tmp/${r}_int8.onnx" "$data" "${r}_int8"
  snr "$r int8 qrun vs ORT" "$tmp/ort_${r}_int8" "$tmp/qrun_${r}_int8" 100
done
echo "weight rounding interop ok"
