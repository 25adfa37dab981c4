#!/usr/bin/env bash
# qconvert --weight-rounding rtn|gptq|hqq (calib/gptq.h, calib/hqq.h) on the
# dynamic test models (tests/e2e/dynamic_models.py): rtn is the default to the
# bit; gptq lowers the output error on the data it was calibrated on (what it
# minimises) for int4 (dynamic and weight-only) and dynamic int8; hqq changes
# the group scales without data; the report and metadata_props name the method;
# bad flags exit 2 with one error line and no output.
source "$(dirname "$0")/lib.sh"

py=/usr/bin/python3
$py "$src/tests/e2e/dynamic_models.py" make "$tmp/m"
m="$tmp/m/linear.onnx"
data="$tmp/m/linear_in"
snr() { "$bin/qrun" "$1" --reference "$m" --data "$data" --json --quiet | $py -c "import json,sys; print(json.load(sys.stdin)['snr_db'])"; }
report_has() {  # report_has FILE PYTHON-EXPRESSION-over-r
  $py -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1" || fail "report $1 fails: $2"
}

# rtn: the default, bit for bit.
for w in "--weights int4 --group-size 32" ""; do
  # shellcheck disable=SC2086
  "$bin/qconvert" "$m" --dynamic $w -o "$tmp/default.onnx"
  # shellcheck disable=SC2086
  "$bin/qconvert" "$m" --dynamic $w --weight-rounding rtn -o "$tmp/rtn.onnx"
  cmp -s "$tmp/default.onnx" "$tmp/rtn.onnx" || fail "--weight-rounding rtn differs from the default ($w)"
done

for mode in "int4 --dynamic --weights int4 --group-size 32" "int4wo --weights int4 --group-size 64" "int8 --dynamic"; do
  read -r tag flags <<<"$mode"
  extra=()
  if [ "$tag" = int4wo ]; then
    "$bin/qprofile" "$m" --data "$data" -o "$tmp/p.json" --quiet
    extra=(--profile "$tmp/p.json")
  fi
  # shellcheck disable=SC2086
  "$bin/qconvert" "$m" $flags "${extra[@]}" -o "$tmp/rtn_$tag.onnx"
  # shellcheck disable=SC2086
  "$bin/qconvert" "$m" $flags "${extra[@]}" --weight-rounding gptq --data "$data" -o "$tmp/gptq_$tag.onnx" \
    --report "$tmp/gptq_$tag.json"
  # shellcheck disable=SC2086
  "$bin/qconvert" "$m" $flags "${extra[@]}" --weight-rounding gptq --gptq-act-order --gptq-damp 0.05 --data "$data" \
    -o "$tmp/gptqa_$tag.onnx" --report "$tmp/gptqa_$tag.json"
  # shellcheck disable=SC2086
  "$bin/qconvert" "$m" $flags "${extra[@]}" --weight-rounding hqq -o "$tmp/hqq_$tag.onnx" --report "$tmp/hqq_$tag.json"
  report_has "$tmp/gptq_$tag.json" "r['options']['weight_rounding']=='gptq' and sum('gptq (damp 0.01, block 128' in t['method'] for t in r['tensors'])==2"
  report_has "$tmp/gptqa_$tag.json" "sum('gptq (damp 0.05, act-order' in t['method'] for t in r['tensors'])==2"
  report_has "$tmp/hqq_$tag.json" "r['options']['weight_rounding']=='hqq' and sum('hqq scales' in t['method'] for t in r['tensors'])==2"
  rtn=$(snr "$tmp/rtn_$tag.onnx")
  gptq=$(snr "$tmp/gptq_$tag.onnx")
  gptqa=$(snr "$tmp/gptqa_$tag.onnx")
  hqq=$(snr "$tmp/hqq_$tag.onnx")
  echo "$tag: SNR rtn $rtn, gptq $gptq, gptq act-order $gptqa, hqq $hqq dB"
  $py -c "import sys; r, g, a = map(float, sys.argv[1:]); sys.exit(0 if g > r + 1 and a > r + 1 else 1)" "$rtn" "$gptq" "$gptqa" ||
    fail "$tag: gptq ($gptq, act-order $gptqa dB) not above rtn ($rtn dB) on its calibration data"
  $py -c "import sys; r, h = map(float, sys.argv[1:]); sys.exit(0 if h > r - 1 else 1)" "$rtn" "$hqq" ||
    fail "$tag: hqq ($hqq dB) far below rtn ($rtn dB)"
  cmp -s "$tmp/rtn_$tag.onnx" "$tmp/hqq_$tag.onnx" && fail "$tag: hqq wrote the rtn model"
  $py -c "import onnx, sys; m = {p.key: p.value for p in onnx.load(sys.argv[1]).metadata_props}
sys.exit(m.get('qtool.weight_rounding') != 'gptq')" "$tmp/gptq_$tag.onnx" || fail "$tag: metadata_props lack qtool.weight_rounding"
done
# gptq is deterministic.
"$bin/qconvert" "$m" --dynamic --weights int4 --weight-rounding gptq --data "$data" -o "$tmp/again.onnx"
cmp -s "$tmp/gptq_int4.onnx" "$tmp/again.onnx" || fail "gptq is not deterministic"

# Bad input: exit 2, one error line, no output file.
o="$tmp/bad.onnx"
expect_refused "--weight-rounding gptq needs --data DIR" "$o" \
  "$bin/qconvert" "$m" --dynamic --weights int4 --weight-rounding gptq -o "$o"
expect_refused "--weight-rounding" "$o" "$bin/qconvert" "$m" --dynamic --weights int4 --weight-rounding awq -o "$o"
expect_refused "go with --weight-rounding gptq" "$o" \
  "$bin/qconvert" "$m" --dynamic --weights int4 --weight-rounding hqq --gptq-act-order -o "$o"
expect_refused "go with --weight-rounding gptq" "$o" "$bin/qconvert" "$m" --dynamic --gptq-damp 0.1 -o "$o"
expect_refused "in (0, 1]" "$o" \
  "$bin/qconvert" "$m" --dynamic --weight-rounding gptq --gptq-damp 0 --data "$data" -o "$o"
expect_refused "--gptq-damp" "$o" \
  "$bin/qconvert" "$m" --dynamic --weight-rounding gptq --gptq-damp abc --data "$data" -o "$o"
expect_refused "not to static" "$o" \
  "$bin/qconvert" "$m" --profile "$tmp/p.json" --weight-rounding hqq -o "$o"
expect_refused "--data, --limit and --labels go with" "$o" "$bin/qconvert" "$m" --dynamic --weight-rounding hqq --data "$data" -o "$o"
echo "weight rounding ok"
