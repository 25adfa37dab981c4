#!/usr/bin/env bash
# ONNX Runtime runs qconvert --dynamic's forms (DynamicQuantizeLinear +
# MatMulInteger / ConvInteger, and com.microsoft MatMulNBits for int4) and
# agrees with qrun: int8 to float rounding (the integer parts are exact), int4
# within the difference of the two runtimes' int8 activation quantization
# (qrun: per row, as torchao; ONNX Runtime: per block of K). The same with the
# weights in external data.
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"

/usr/bin/python3 "$src/tests/e2e/dynamic_models.py" make "$tmp/m"
for name in linear gemm; do
  "$bin/qconvert" "$tmp/m/$name.onnx" --dynamic -o "$tmp/${name}_int8.onnx"
  /usr/bin/python3 "$src/tests/interop/check_model.py" "$tmp/${name}_int8.onnx" >/dev/null
  both "$tmp/${name}_int8.onnx" "$tmp/m/${name}_in" "${name}_int8"
  snr "$name int8 qrun vs ORT" "$tmp/ort_${name}_int8" "$tmp/qrun_${name}_int8" 100
  for g in 32 128; do
    "$bin/qconvert" "$tmp/m/$name.onnx" --dynamic --weights int4 --group-size $g -o "$tmp/${name}_$g.onnx"
    both "$tmp/${name}_$g.onnx" "$tmp/m/${name}_in" "${name}_$g"
    snr "$name int4 G=$g qrun vs ORT" "$tmp/ort_${name}_$g" "$tmp/qrun_${name}_$g" 25
  done
done

# Conv through ConvInteger (uint8 weights, zero point 128) on the digits CNN.
model="$src/samples/digits_cnn.onnx"
"$bin/qconvert" "$model" --dynamic -o "$tmp/cnn.onnx"
/usr/bin/python3 "$src/tests/interop/check_model.py" "$tmp/cnn.onnx" >/dev/null
both "$tmp/cnn.onnx" "$src/samples/digits/test" cnn
snr "digits CNN int8 qrun vs ORT" "$tmp/ort_cnn" "$tmp/qrun_cnn" 100
/usr/bin/python3 "$src/tests/interop/compare_outputs.py" "$tmp/qrun_cnn" "$tmp/ort_cnn" --top1 >/dev/null
# External data (DESIGN "Large models"): ONNX Runtime loads outputs whose
# weights qconvert streamed to OUT.onnx.data, and agrees with qrun as above.
mkdir -p "$tmp/ext"
for w in int8 int4; do
  "$bin/qconvert" "$tmp/m/linear.onnx" --dynamic --weights $w -o "$tmp/ext/linear_$w.onnx" --external-data always \
    --external-data-threshold 16
  [ -f "$tmp/ext/linear_$w.onnx.data" ] || { echo "FAIL: no external data file for $w" >&2; exit 1; }
  both "$tmp/ext/linear_$w.onnx" "$tmp/m/linear_in" "ext_$w"
done
snr "external data int8 qrun vs ORT" "$tmp/ort_ext_int8" "$tmp/qrun_ext_int8" 100
snr "external data int4 qrun vs ORT" "$tmp/ort_ext_int4" "$tmp/qrun_ext_int4" 25
echo "dynamic interop ok"
