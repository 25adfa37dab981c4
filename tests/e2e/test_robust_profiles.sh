#!/usr/bin/env bash
# Profiles: malformed JSON, truncated, wrong format or version, bad fields,
# hostile nesting, missing tensors, another model's profile: qconvert, merge and
# show exit 2 naming the file and field, and write nothing.
source "$(dirname "$0")/lib.sh"
"$bin/qprofile" "$model" --data "$samples/digits/calib" --limit 2 -o "$tmp/good.json" --quiet

check() {
  local file=$1 pattern=$2
  expect_refused "$pattern" "$tmp/out.onnx" "$bin/qconvert" "$model" --profile "$file" -o "$tmp/out.onnx"
  expect_refused "$pattern" "$tmp/merged.json" "$bin/qprofile" merge "$tmp/good.json" "$file" -o "$tmp/merged.json"
  expect_refused "$pattern" "$tmp/plots" "$bin/qprofile" show "$file" --plot "$tmp/plots"
}
edit() {  # edit OUT PYTHON-EXPR-ON-p: writes good.json changed by the expression
  /usr/bin/python3 - "$tmp/good.json" "$1" "$2" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(p))
PY
}

printf '{"format": "qtool-profile", "version": 1, "model": ' >"$tmp/trunc.json"
check "$tmp/trunc.json" "trunc.json: not valid JSON"
head -c 500 "$tmp/good.json" >"$tmp/half.json"
check "$tmp/half.json" "half.json: not valid JSON"
printf '[1, 2, 3]' >"$tmp/array.json"
check "$tmp/array.json" "array.json: not a qtool profile"
edit "$tmp/v3.json" 'p["version"] = 3'
check "$tmp/v3.json" "v3.json: version: unsupported profile version 3 (this qtool reads versions 1 and 2)"
# Deep nesting where a number belongs: refused without recursing through it.
/usr/bin/python3 -c "
import sys; n = 200000
open(sys.argv[1], 'w').write('{\"format\": \"qtool-profile\", \"version\": ' + '[' * n + ']' * n + '}')" "$tmp/deep.json"
expect_exit 2 "deep.json" "$bin/qconvert" "$model" --profile "$tmp/deep.json" -o "$tmp/out.onnx"
expect_no_output "$tmp/out.onnx"
edit "$tmp/nobins.json" 'del p["bins"]'
check "$tmp/nobins.json" "nobins.json: bins: missing"
edit "$tmp/counts.json" 't = next(iter(p["tensors"].values())); t["histogram"]["counts"] = t["histogram"]["counts"][:5]'
check "$tmp/counts.json" "has 5 entries, expected 2048 (bins)"
edit "$tmp/lohi.json" 't = next(iter(p["tensors"].values())); t["histogram"]["lo"] = 5; t["histogram"]["hi"] = -5'
check "$tmp/lohi.json" "histogram.lo (5) is greater than histogram.hi (-5)"
edit "$tmp/negshape.json" 't = next(iter(p["tensors"].values())); t["shape"] = [-3]'
check "$tmp/negshape.json" "shape: expected an array of non-negative integers"
edit "$tmp/dtype.json" 't = next(iter(p["tensors"].values())); t["dtype"] = "complex128"'
check "$tmp/dtype.json" "unknown data type 'complex128'"

# Missing tensors: the profile claims the right model but lacks an activation.
edit "$tmp/missing.json" 'p["tensors"] = {}'
expect_refused "profile has no entry for activation" "$tmp/out.onnx" \
  "$bin/qconvert" "$model" --profile "$tmp/missing.json" -o "$tmp/out.onnx"

# Another model's profile: qconvert and merge refuse it.
hostile relu_model "$tmp/relu.onnx"
mkdir -p "$tmp/data" && hostile npy_ok "$tmp/data/a.npy" 1,4
"$bin/qprofile" "$tmp/relu.onnx" --data "$tmp/data" -o "$tmp/relu.json" --quiet
expect_refused "relu.json was made from another model" "$tmp/out.onnx" \
  "$bin/qconvert" "$model" --profile "$tmp/relu.json" -o "$tmp/out.onnx"
expect_refused "relu.json: profile of another model" "$tmp/merged.json" \
  "$bin/qprofile" merge "$tmp/good.json" "$tmp/relu.json" -o "$tmp/merged.json"
echo "robust profiles ok"
