#!/usr/bin/env bash
# External data: a location that escapes the model's folder, an absolute one, a
# missing or short file, an offset past the end are refused naming the tensor.
source "$(dirname "$0")/lib.sh"
mkdir -p "$tmp/data" "$tmp/models"
hostile npy_ok "$tmp/data/a.npy" 1,4
hostile relu_model "$tmp/relu.onnx"
"$bin/qprofile" "$tmp/relu.onnx" --data "$tmp/data" -o "$tmp/p.json" --quiet  # for qconvert (--force: another model)
printf '0123456789abcdef' >"$tmp/outside.bin"  # exists, but outside the model's folder

check() {
  local m=$1 pattern=$2
  expect_refused "$pattern" "$tmp/out.json" "$bin/qprofile" "$m" --data "$tmp/data" -o "$tmp/out.json"
  expect_refused "$pattern" "$tmp/outdir" "$bin/qrun" "$m" --data "$tmp/data" -o "$tmp/outdir"
  expect_refused "$pattern" "$tmp/out.onnx" "$bin/qconvert" "$m" --profile "$tmp/p.json" -o "$tmp/out.onnx" --force
}

hostile ext_escape "$tmp/models/m.onnx"
check "$tmp/models/m.onnx" "initializer 'w': tensor 'w': external location '../outside.bin' escapes the model's folder"
hostile ext_absolute "$tmp/models/m.onnx"
check "$tmp/models/m.onnx" "external location '/etc/passwd' is absolute"
ln -s "$tmp/outside.bin" "$tmp/models/link.bin"
/usr/bin/python3 - "$tmp/models/m.onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
m.graph.initializer[0].external_data[0].value = "link.bin"
onnx.save(m, sys.argv[1])
PY
check "$tmp/models/m.onnx" "external location 'link.bin' escapes the model's folder"
hostile ext_missing "$tmp/models/m.onnx"
check "$tmp/models/m.onnx" "external data file '$tmp/models/weights.bin' is missing"
hostile ext_short "$tmp/models/m.onnx"
printf '01234567' >"$tmp/models/weights.bin"
check "$tmp/models/m.onnx" "(8 bytes) is too short for 16 bytes at offset 0"
hostile ext_offset "$tmp/models/m.onnx"
check "$tmp/models/m.onnx" "is too short for 16 bytes at offset 4611686018427387904"
mkdir -p "$tmp/models/dir.bin"
/usr/bin/python3 - "$tmp/models/m.onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
del m.graph.initializer[0].external_data[1:]
m.graph.initializer[0].external_data[0].value = "dir.bin"
onnx.save(m, sys.argv[1])
PY
check "$tmp/models/m.onnx" "dir.bin' is not a regular file"

# The same model with a good weights file runs.
hostile ext_ok "$tmp/models/m.onnx"
printf '0123456789abcdef' >"$tmp/models/weights.bin"
"$bin/qrun" "$tmp/models/m.onnx" --data "$tmp/data" -o "$tmp/outdir" --quiet >/dev/null
[ -f "$tmp/outdir/a.out0.npy" ] || fail "qrun did not run a model with valid external data"
echo "robust external data ok"
