#!/usr/bin/env bash
# Accuracy of qconvert's output as ONNX Runtime runs it, per model, calibration
# method and schema: SNR of the quantized model's first output vs the float
# model's, top-1 agreement with float, and test accuracy of float and quantized
# against labels where the model has them. Models: samples/digits_cnn.onnx plus
# every zoo model found in $QTOOL_ZOO (default .cache/zoo, made by
# scripts/make_zoo.sh) as NAME/model.onnx with inputs in NAME/inputs/ (.npy
# files). A zoo model with NAME/calib/ (the ones trained on digits) is profiled
# on it and evaluated on inputs/ with NAME/labels.npy; the others are profiled
# and evaluated on inputs/. Each model's first row, "input-u8", is the float
# model run on its input rounded to uint8 with the profile's range
# (scripts/round_inputs.py): what rounding the input alone already costs.
# A segmentation model (NAME/calib/ and NAME/masks.npy instead of labels.npy,
# fpn_text_digits) is measured by its probability map thresholded at 0.5
# (tests/zoo/iou.py): its "top-1" column holds the IoU of the quantized map
# with float's ("IoU 0.953"), its accuracy columns the IoU of the float and
# the quantized map with the ground-truth masks.
#   scripts/accuracy_table.sh [MODEL.onnx DATA_DIR]...
#
# With --target (repeatable), the accuracy of each target's model as that
# target computes it, one row per target and model: qprofile, qconvert
# --target T, then qrun QUANT --reference FLOAT --data DIR --target T --json
# (qrun's integer kernels with the target's arithmetic). SNR of the first
# output vs float in dB and top-1 agreement with float (a segmentation model:
# the IoU of its thresholded map with float's, both as qrun computes them);
# "ORT" says whether ONNX Runtime (CPU) loads and runs the model ("ok", or
# "fail"). A target qconvert or qrun cannot handle yet prints "-" and the
# start of the error.
#   scripts/accuracy_table.sh --target T [--target T2 ...] [MODEL.onnx DATA_DIR]...
#
# With --equalize, the table of qconvert --equalize and --bias-correction
# (issue 25, docs/accuracy.md "Per-tensor weights"): per model, default target
# otherwise, weights per channel (the reference), per tensor, and per tensor with
# --equalize, --bias-correction, both, and both with --equalize-relu6 (--data:
# the profiling data), each run by ONNX Runtime: SNR vs float, top-1 agreement,
# accuracies. QTOOL_ZOO_MODELS="a b" limits the zoo to those names.
#   scripts/accuracy_table.sh --equalize [MODEL.onnx DATA_DIR]...
#
# With --smooth-quant, the table of qconvert --smooth-quant (issue 25,
# docs/accuracy.md "SmoothQuant"): per model with a MatMul or Gemm, static int8
# (default target) without SmoothQuant, with --smooth-quant (alpha 0.5) and
# with --smooth-quant=auto (--data: the profiling data), each run by ONNX
# Runtime: SNR vs float, top-1 agreement, accuracies; then, when the zoo has
# byte_lm (scripts/make_zoo.sh --only byte_lm), the language model's bits per
# byte on held-out text (scripts/byte_lm_bpb.py) for float and the same three.
#   scripts/accuracy_table.sh --smooth-quant [MODEL.onnx DATA_DIR]...
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${QTOOL_BUILD_DIR:-$repo/build}
zoo=${QTOOL_ZOO:-$repo/.cache/zoo}
targets=()
equalize=0
smooth=0
if [ "${1:-}" = --equalize ]; then
  equalize=1
  shift
elif [ "${1:-}" = --smooth-quant ]; then
  smooth=1
  shift
fi
while (($#)) && [ "$1" = --target ]; do
  [ $# -ge 2 ] || { echo "error: --target needs a target name or file" >&2; exit 2; }
  targets+=("$2")
  shift 2
done
[ -x "$build/qconvert" ] || "$repo/scripts/setup.sh"
"$repo/scripts/setup_ort.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# model|profiling data|evaluation data|labels (may be empty)|masks (segmentation models, else empty)
models=()
if (($#)); then
  while (($# >= 2)); do models+=("$1|$2|$2||"); shift 2; done
else
  models+=("$repo/samples/digits_cnn.onnx|$repo/samples/digits/calib|$repo/samples/digits/test|$repo/samples/digits/test_labels.npy|")
  for m in "$zoo"/*/model.onnx; do
    [ -e "$m" ] || continue
    d=$(dirname "$m")
    [ -z "${QTOOL_ZOO_MODELS:-}" ] || [[ " $QTOOL_ZOO_MODELS " == *" $(basename "$d") "* ]] || continue
    [ -d "$d/inputs" ] || continue
    # The byte-level LM (next-byte targets, bits per byte): scripts/weight_rounding_table.sh measures it.
    [ -f "$d/targets.npy" ] && continue
    if [ -d "$d/calib" ] && [ -f "$d/labels.npy" ]; then
      models+=("$m|$d/calib|$d/inputs|$d/labels.npy|")
    elif [ -d "$d/calib" ] && [ -f "$d/masks.npy" ]; then
      models+=("$m|$d/calib|$d/inputs||$d/masks.npy")
    else
      models+=("$m|$d/inputs|$d/inputs||")
    fi
  done
fi

# iou_fields QUANT_DIR FLOAT_DIR MASKS: "SNR IOU_VS_FLOAT FLOAT_IOU QUANT_IOU" (tests/zoo/iou.py, no gate).
iou_fields() {
  /usr/bin/python3 "$repo/tests/zoo/iou.py" "$name" "$1" "$2" --masks "$3" --fields || true
}

if ((${#targets[@]})); then
  # Profiles once per model, then every target on every model.
  format='%-16s %-28s %8s %9s %5s\n'
  printf "$format" target model "SNR dB" "top-1" "ORT"
  for entry in "${models[@]}"; do
    IFS='|' read -r model profile_data data labels masks <<<"$entry"
    name=$(basename "$model" .onnx)
    [ "$name" = model ] && name=$(basename "$(dirname "$model")")
    "$build/qprofile" "$model" --data "$profile_data" -o "$tmp/$name.json" --quiet
    # A segmentation model's IoU needs the float maps (qrun's float arithmetic, as its --reference).
    [ -z "$masks" ] || "$build/qrun" "$model" --data "$data" -o "$tmp/$name.float" --quiet >/dev/null
  done
  for target in "${targets[@]}"; do
    for entry in "${models[@]}"; do
      IFS='|' read -r model profile_data data labels masks <<<"$entry"
      name=$(basename "$model" .onnx)
      [ "$name" = model ] && name=$(basename "$(dirname "$model")")
      q="$tmp/$name.target.onnx"
      rm -rf "$tmp/target_out"
      if ! "$build/qconvert" "$model" --profile "$tmp/$name.json" -o "$q" --target "$target" >/dev/null 2>"$tmp/err" ||
         ! "$build/qrun" "$q" --reference "$model" --data "$data" --target "$target" --json --quiet \
           ${masks:+-o "$tmp/target_out"} >"$tmp/run.json" 2>>"$tmp/err"; then
        printf '%-16s %-28s %8s %9s  %s\n' "$target" "$name" "-" "-" "$( (grep -m1 -i error "$tmp/err" || head -n1 "$tmp/err") | head -c 120)"
        continue
      fi
      read -r snr agree < <(/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
snr = d.get("snr_db")
print("%.2f" % snr if isinstance(snr, (int, float)) else "-", "%.2f%%" % (100 * d["top1_agreement"]))
' "$tmp/run.json")
      if [ -n "$masks" ]; then
        read -r _ iou _ < <(iou_fields "$tmp/target_out" "$tmp/$name.float" "$masks")
        agree="IoU $iou"
      fi
      ort=ok
      rm -rf "$tmp/ort_out"
      node "$repo/tests/interop/ort_run.js" "$q" "$data" "$tmp/ort_out" >/dev/null 2>&1 || ort=fail
      printf "$format" "$target" "$name" "$snr" "$agree" "$ort"
    done
  done
  exit 0
fi

if ((equalize)); then
  format='%-26s %-58s %8s %9s %8s %8s\n'
  printf "$format" model "qconvert flags" "SNR dB" "top-1" "acc f32" "acc q"
  for entry in "${models[@]}"; do
    IFS='|' read -r model profile_data data labels masks <<<"$entry"
    [ -z "$masks" ] || continue  # classification outputs only
    name=$(basename "$model" .onnx)
    [ "$name" = model ] && name=$(basename "$(dirname "$model")")
    "$build/qprofile" "$model" --data "$profile_data" -o "$tmp/$name.json" --quiet
    node "$repo/tests/interop/ort_run.js" "$model" "$data" "$tmp/$name.float" >/dev/null
    for flags in "--per-channel" "--per-tensor" "--per-tensor --equalize" "--per-tensor --bias-correction" \
                 "--per-tensor --equalize --bias-correction" "--per-tensor --equalize --equalize-relu6 --bias-correction"; do
      q="$tmp/$name.q.onnx"
      rm -rf "$tmp/$name.quant"
      data_flags=()
      [ "$flags" = --per-channel ] || [ "$flags" = --per-tensor ] || data_flags=(--data "$profile_data")
      # shellcheck disable=SC2086
      if ! "$build/qconvert" "$model" --profile "$tmp/$name.json" -o "$q" $flags "${data_flags[@]}" 2>"$tmp/err" ||
         ! node "$repo/tests/interop/ort_run.js" "$q" "$data" "$tmp/$name.quant" >/dev/null 2>>"$tmp/err"; then
        printf '%-26s %-58s %8s %9s  %s\n' "$name" "$flags" "-" "-" "$(head -c 120 "$tmp/err")"
        continue
      fi
      read -r snr agree facc qacc < <(/usr/bin/python3 "$repo/tests/zoo/agreement.py" "$name" "$tmp/$name.quant" \
        "$tmp/$name.float" ${labels:+--labels "$labels"} --fields --min-agreement 0 --max-drop inf)
      printf "$format" "$name" "$flags" "$snr" "$agree" "$facc" "$qacc"
    done
  done
  exit 0
fi

if ((smooth)); then
  format='%-26s %-22s %8s %9s %8s %8s\n'
  printf "$format" model "qconvert flags" "SNR dB" "top-1" "acc f32" "acc q"
  # convert_ort NAME MODEL PROFILE_DATA OUT_DIR DATA FLAGS...: qconvert, then ONNX Runtime over DATA into OUT_DIR.
  convert_ort() {
    local name=$1 model=$2 calib=$3 out=$4 data=$5
    shift 5
    local q="$tmp/$name.q.onnx"
    rm -rf "$out"
    local data_flags=()
    (($#)) && data_flags=(--data "$calib")
    "$build/qconvert" "$model" --profile "$tmp/$name.json" -o "$q" "$@" "${data_flags[@]}" 2>"$tmp/err" &&
      node "$repo/tests/interop/ort_run.js" "$q" "$data" "$out" >/dev/null 2>>"$tmp/err"
  }
  modes=("" "--smooth-quant" "--smooth-quant=auto")
  for entry in "${models[@]}"; do
    IFS='|' read -r model profile_data data labels masks <<<"$entry"
    [ -z "$masks" ] || continue  # classification outputs only
    /usr/bin/python3 -c "import onnx, sys; sys.exit(0 if any(n.op_type in ('MatMul', 'Gemm') for n in onnx.load(sys.argv[1]).graph.node) else 1)" "$model" || continue
    name=$(basename "$model" .onnx)
    [ "$name" = model ] && name=$(basename "$(dirname "$model")")
    "$build/qprofile" "$model" --data "$profile_data" -o "$tmp/$name.json" --quiet
    node "$repo/tests/interop/ort_run.js" "$model" "$data" "$tmp/$name.float" >/dev/null
    for flags in "${modes[@]}"; do
      # shellcheck disable=SC2086
      if ! convert_ort "$name" "$model" "$profile_data" "$tmp/$name.quant" "$data" $flags; then
        printf '%-26s %-22s %8s %9s  %s\n' "$name" "${flags:-(none)}" "-" "-" "$(head -c 120 "$tmp/err")"
        continue
      fi
      read -r snr agree facc qacc < <(/usr/bin/python3 "$repo/tests/zoo/agreement.py" "$name" "$tmp/$name.quant" \
        "$tmp/$name.float" ${labels:+--labels "$labels"} --fields --min-agreement 0 --max-drop inf)
      printf "$format" "$name" "${flags:-(none)}" "$snr" "$agree" "$facc" "$qacc"
    done
  done
  lm="$zoo/byte_lm"
  if (($# == 0)) && [ -f "$lm/DONE" ]; then
    bpb() { /usr/bin/python3 "$repo/scripts/byte_lm_bpb.py" "$1" "$lm/targets.npy"; }
    "$build/qprofile" "$lm/model.onnx" --data "$lm/calib" -o "$tmp/byte_lm.json" --quiet
    node "$repo/tests/interop/ort_run.js" "$lm/model.onnx" "$lm/inputs" "$tmp/byte_lm.float" >/dev/null
    echo
    printf '%-26s %-22s %14s\n' model "qconvert flags" "bits per byte"
    printf '%-26s %-22s %14s\n' byte_lm "(float)" "$(bpb "$tmp/byte_lm.float")"
    for flags in "${modes[@]}"; do
      # shellcheck disable=SC2086
      if convert_ort byte_lm "$lm/model.onnx" "$lm/calib" "$tmp/byte_lm.quant" "$lm/inputs" $flags; then
        printf '%-26s %-22s %14s\n' byte_lm "${flags:-(none)}" "$(bpb "$tmp/byte_lm.quant")"
      else
        printf '%-26s %-22s %14s  %s\n' byte_lm "${flags:-(none)}" "-" "$(head -c 120 "$tmp/err")"
      fi
    done
  fi
  exit 0
fi

format='%-28s %-11s %-16s %8s %9s %8s %8s\n'
printf "$format" model calibration schema "SNR dB" "top-1" "acc f32" "acc q"
# row CALIBRATION SCHEMA OUT_DIR: the table's row for the outputs in OUT_DIR against float's.
# Gates off: the table reports, tests/zoo/test_zoo_digits.sh gates.
row() {
  local snr agree facc qacc
  if [ -n "$masks" ]; then
    read -r snr agree facc qacc < <(iou_fields "$3" "$tmp/$name.float" "$masks")
    agree="IoU $agree"
  else
    read -r snr agree facc qacc < <(/usr/bin/python3 "$repo/tests/zoo/agreement.py" "$name" "$3" "$tmp/$name.float" \
      ${labels:+--labels "$labels"} --fields --min-agreement 0 --max-drop inf)
  fi
  printf "$format" "$name" "$1" "$2" "$snr" "$agree" "$facc" "$qacc"
}
for entry in "${models[@]}"; do
  IFS='|' read -r model profile_data data labels masks <<<"$entry"
  name=$(basename "$model" .onnx)
  [ "$name" = model ] && name=$(basename "$(dirname "$model")")
  "$build/qprofile" "$model" --data "$profile_data" -o "$tmp/$name.json" --quiet
  node "$repo/tests/interop/ort_run.js" "$model" "$data" "$tmp/$name.float" >/dev/null
  # The floor: the float model on its input rounded to uint8 (and nothing
  # else quantized), for single-input models with .npy samples.
  rm -rf "$tmp/$name.rounded" "$tmp/$name.rounded_out"
  if /usr/bin/python3 "$repo/scripts/round_inputs.py" "$model" "$tmp/$name.json" "$data" "$tmp/$name.rounded" 2>/dev/null &&
     node "$repo/tests/interop/ort_run.js" "$model" "$tmp/$name.rounded" "$tmp/$name.rounded_out" >/dev/null; then
    row input-u8 "(float model)" "$tmp/$name.rounded_out"
  fi
  for calib in minmax percentile kl mse; do
    for schema in asymmetric symmetric symmetric-uint8 power2-scale; do
      q="$tmp/$name.q.onnx"
      rm -rf "$tmp/$name.quant"
      if ! "$build/qconvert" "$model" --profile "$tmp/$name.json" -o "$q" --calibration "$calib" --schema "$schema" 2>"$tmp/err" ||
         ! node "$repo/tests/interop/ort_run.js" "$q" "$data" "$tmp/$name.quant" >/dev/null 2>>"$tmp/err"; then
        printf '%-28s %-11s %-16s %8s %9s  %s\n' "$name" "$calib" "$schema" "-" "-" "$(head -c 120 "$tmp/err")"
        continue
      fi
      row "$calib" "$schema" "$tmp/$name.quant"
    done
  done
done
