#!/usr/bin/env bash
# Accuracy of qconvert's output as ONNX Runtime runs it, per model, calibration
# method and schema: SNR of the quantized model's first output vs the float
# model's, and top-1 agreement. Models: samples/digits_cnn.onnx plus every zoo
# model found in $QTOOL_ZOO (default .cache/zoo, made by scripts/make_zoo.sh) as
# NAME/model.onnx with inputs in NAME/inputs/ (.npy files), used to profile and to evaluate.
#   scripts/accuracy_table.sh [MODEL.onnx DATA_DIR]...
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${QTOOL_BUILD_DIR:-$repo/build}
zoo=${QTOOL_ZOO:-$repo/.cache/zoo}
[ -x "$build/qconvert" ] || "$repo/scripts/setup.sh"
"$repo/scripts/setup_ort.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

models=()
if (($#)); then
  while (($# >= 2)); do models+=("$1|$2|$2"); shift 2; done
else
  # Profiled on the calibration set, evaluated on the held-out test set.
  models+=("$repo/samples/digits_cnn.onnx|$repo/samples/digits/calib|$repo/samples/digits/test")
  for m in "$zoo"/*/model.onnx; do
    [ -e "$m" ] || continue
    d="$(dirname "$m")/inputs"
    [ -d "$d" ] && models+=("$m|$d|$d")
  done
fi

printf '%-28s %-11s %-16s %9s %9s\n' model calibration schema "SNR dB" "top-1"
for entry in "${models[@]}"; do
  IFS='|' read -r model profile_data data <<<"$entry"
  name=$(basename "$model" .onnx)
  [ "$name" = model ] && name=$(basename "$(dirname "$model")")
  "$build/qprofile" "$model" --data "$profile_data" -o "$tmp/$name.json" --quiet
  node "$repo/tests/interop/ort_run.js" "$model" "$data" "$tmp/$name.float" >/dev/null
  for calib in minmax percentile kl mse; do
    for schema in asymmetric symmetric symmetric-uint8 power2-scale; do
      q="$tmp/$name.q.onnx"
      rm -rf "$tmp/$name.quant"
      if ! "$build/qconvert" "$model" --profile "$tmp/$name.json" -o "$q" --calibration "$calib" --schema "$schema" 2>"$tmp/err" ||
         ! node "$repo/tests/interop/ort_run.js" "$q" "$data" "$tmp/$name.quant" >/dev/null 2>>"$tmp/err"; then
        printf '%-28s %-11s %-16s %9s %9s  %s\n' "$name" "$calib" "$schema" "-" "-" "$(head -c 120 "$tmp/err")"
        continue
      fi
      out=$(/usr/bin/python3 "$repo/tests/interop/compare_outputs.py" "$tmp/$name.quant" "$tmp/$name.float" --top1 --min-snr -1000 || true)
      snr=$(sed -n 's/^SNR .*: \([-0-9.inf]*\) dB$/\1/p' <<<"$out")
      agree=$(sed -n 's/^top1 agreement: //p' <<<"$out")
      printf '%-28s %-11s %-16s %9s %9s\n' "$name" "$calib" "$schema" "$snr" "$agree"
    done
  done
done
