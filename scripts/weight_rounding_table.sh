#!/usr/bin/env bash
# qconvert --weight-rounding rtn|gptq|hqq compared (issue 25): SNR of the
# output vs float in dB, as qrun computes it, on held-out data, per model,
# int4 form and group size, and for --dynamic int8 (per channel).
# Models: the synthetic MatMul stack of scripts/weight_rounding_models.py
# (calibrated on its calib/, measured on its test/); the digits CNN (its two
# Gemms; samples/digits calib/ and test/); from the zoo (scripts/make_zoo.sh)
# when present, transformer_encoder_digits (trained; calib/ and its 360 test
# digits inputs/) and transformer_encoder (random weights; its 8 inputs split:
# gptq calibrated on the first 4, all measured on the last 4). Prints a
# Markdown table. Then, when .cache/zoo/byte_lm exists (scripts/make_zoo.sh
# --only byte_lm: scripts/make_byte_lm.py), the byte-level language model's
# bits per byte on held-out text (scripts/byte_lm_bpb.py) for float and each
# rounding, int4 forms only (gptq calibrated on training text).
#   scripts/weight_rounding_table.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${QTOOL_BUILD_DIR:-$repo/build}
zoo=${ZOO_DIR:-$repo/.cache/zoo}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3

$py "$repo/scripts/weight_rounding_models.py" "$tmp/stack"
models=("stack $tmp/stack/stack.onnx $tmp/stack/calib $tmp/stack/test"
        "digits_cnn $repo/samples/digits_cnn.onnx $repo/samples/digits/calib $repo/samples/digits/test")
d="$zoo/transformer_encoder_digits"
[ -f "$d/model.onnx" ] && models+=("transformer_encoder_digits $d/model.onnx $d/calib $d/inputs")
if [ -f "$zoo/transformer_encoder/model.onnx" ]; then
  mkdir -p "$tmp/tf/calib" "$tmp/tf/test"
  mapfile -t inputs < <(ls "$zoo/transformer_encoder/inputs" | sort)
  for i in "${!inputs[@]}"; do
    cp -r "$zoo/transformer_encoder/inputs/${inputs[$i]}" "$tmp/tf/$([ "$i" -lt 4 ] && echo calib || echo test)/"
  done
  models+=("transformer_encoder $zoo/transformer_encoder/model.onnx $tmp/tf/calib $tmp/tf/test")
fi

snr() {  # snr QUANT FLOAT DATA
  "$build/qrun" "$1" --reference "$2" --data "$3" --json --quiet |
    $py -c "import json,sys; print('%.1f' % json.load(sys.stdin)['snr_db'])"
}

snr_db() { echo "$(snr "$3" "$1" "$2") dB"; }  # snr_db FLOAT DATA QUANT

# each_rounding MODEL CALIB MEASURE QCONVERT-FLAGS...: " A | B | C | D |", MEASURE QUANT.onnx
# of the model converted with each rounding (gptq calibrated on CALIB).
each_rounding() {
  local model=$1 calib=$2 measure=$3 r row=""
  shift 3
  for r in rtn gptq gptq-act hqq; do
    local extra=(--weight-rounding "${r%-act}")
    [ "${r%-act}" = gptq ] && extra+=(--data "$calib")
    [ "$r" = gptq-act ] && extra+=(--gptq-act-order)
    "$build/qconvert" "$model" "$@" "${extra[@]}" -o "$tmp/q.onnx"
    row+=" $($measure "$tmp/q.onnx") |"
  done
  echo "$row"
}

echo "| model | form | rtn | gptq | gptq act-order | hqq |"
echo "|---|---|---|---|---|---|"
for entry in "${models[@]}"; do
  read -r name model calib test <<<"$entry"
  $build/qprofile "$model" --data "$calib" -o "$tmp/$name.profile.json" --quiet
  for form in "int4 g32 dynamic" "int4 g128 dynamic" "int4 g32 weight-only" "int4 g128 weight-only" "int8 dynamic"; do
    read -r bits group kind <<<"$form"
    flags=(--dynamic)
    [ "$kind" = weight-only ] && flags=(--profile "$tmp/$name.profile.json")
    [ "$bits" = int4 ] && flags+=(--weights int4 --group-size "${group#g}")
    echo "| $name | $form |$(each_rounding "$model" "$calib" "snr_db $model $test" "${flags[@]}")"
  done
done

lm="$zoo/byte_lm"
[ -f "$lm/DONE" ] || exit 0
bpb() {  # bpb MODEL: bits per byte on the held-out windows
  rm -rf "$tmp/out"
  "$build/qrun" "$1" --data "$lm/inputs" -o "$tmp/out" --quiet >/dev/null
  $py "$repo/scripts/byte_lm_bpb.py" "$tmp/out" "$lm/targets.npy"
}
echo
echo "byte_lm: float $(bpb "$lm/model.onnx") bits per byte"
echo
echo "| byte_lm form | rtn | gptq | gptq act-order | hqq |"
echo "|---|---|---|---|---|"
$build/qprofile "$lm/model.onnx" --data "$lm/calib" -o "$tmp/lm.profile.json" --quiet
for form in "g32 dynamic" "g128 dynamic" "g32 weight-only" "g128 weight-only"; do
  read -r group kind <<<"$form"
  flags=(--dynamic)
  [ "$kind" = weight-only ] && flags=(--profile "$tmp/lm.profile.json")
  flags+=(--weights int4 --group-size "${group#g}")
  echo "| int4 $form |$(each_rounding "$lm/model.onnx" "$lm/calib" bpb "${flags[@]}")"
done
