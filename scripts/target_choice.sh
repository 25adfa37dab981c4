#!/usr/bin/env bash
# How should the default target (ort-x86) avoid the int16 saturation of ONNX
# Runtime's x86 kernels without VNNI? Measures each candidate side by side on
# the zoo (scripts/make_zoo.sh), as ONNX Runtime computes it on VNNI CPUs
# (exact int32: qrun --target ort-x86-vnni) and on AVX2-only CPUs (pairs
# saturating to int16: qrun --target ort-x86-avx2, bit-exact with ONNX
# Runtime there, tests/e2e/test_target_ort_avx2.sh):
#   full-int8   uint8 x int8, no bound (target ort-x86-vnni)
#   pair-bound  int8 weights with |w0| + |w1| <= 128 per pair
#   u8u8        uint8 weights, zero point 128 (ONNX Runtime's U8U8 kernels)
#   u8u8-dw8    u8u8 but int8 depthwise weights (exact there too; ort-x86's rules)
#   7-bit       int8 weights in [-64, 64] (reduce-range)
#   s8s8-qop    int8 activations, QOperator form (ONNX Runtime's S8S8 kernels)
# Trained digits models: top-1 agreement with float over the test images;
# random-weight models: SNR of the output vs float. ONNX Runtime's speed of
# each form: scripts/bench.sh targets.
#   scripts/target_choice.sh [MODEL...]   (default: every zoo model)
set -euo pipefail
export LC_ALL=C
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${QTOOL_BIN:-$repo/build}
zoo=${ZOO_DIR:-$repo/.cache/zoo}
work=$(mktemp -d "${TMPDIR:-/tmp}/qtool_targets.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The other candidates are user-written target files in scripts/targets/
# (u8u8-dw8.json has ort-x86's quantize rules).
variant_target() {
  case $1 in
    full-int8) echo ort-x86-vnni ;;
    *) echo "$repo/scripts/targets/$1.json" ;;
  esac
}
variants=(full-int8 pair-bound u8u8 u8u8-dw8 7-bit s8s8-qop)
models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  models=(resnet18_digits mobilenet_v2_digits shufflenet_v2_x0_5_digits efficientnet_b0_digits squeezenet1_1_digits
          transformer_encoder_digits resnet18 mobilenet_v2 shufflenet_v2_x0_5 efficientnet_b0 squeezenet1_1 transformer_encoder)
fi
for m in "${models[@]}"; do
  [ -f "$zoo/$m/DONE" ] || { bash "$repo/scripts/make_zoo.sh" >/dev/null; break; }
done
echo "host ISA: $(grep -o -E 'avx512[a-z_]*|avx_vnni|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
printf '%-28s %-10s | %-22s | %-22s\n' model variant "as ORT with VNNI" "as ORT without VNNI"
for m in "${models[@]}"; do
  d="$zoo/$m"
  [ -f "$d/model.onnx" ] || { echo "error: $d/model.onnx missing" >&2; exit 2; }
  calib="$d/calib"
  [ -d "$calib" ] || calib="$d/inputs"
  "$bin/qprofile" "$d/model.onnx" --data "$calib" -o "$work/$m.profile.json" --quiet
  labels=()
  [ -f "$d/labels.npy" ] && labels=(--labels "$d/labels.npy")
  for v in "${variants[@]}"; do
    "$bin/qconvert" "$d/model.onnx" --profile "$work/$m.profile.json" --target "$(variant_target "$v")" \
      -o "$work/$m.$v.onnx" >/dev/null 2>"$work/err" || { echo "error: qconvert $m $v: $(cat "$work/err")" >&2; exit 1; }
    cells=()
    for t in ort-x86-vnni ort-x86-avx2; do
      "$bin/qrun" "$work/$m.$v.onnx" --data "$d/inputs" --reference "$d/model.onnx" "${labels[@]}" --target "$t" \
        --json --quiet >"$work/r.json"
      cells+=("$(/usr/bin/python3 - "$work/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
snr = r["snr_db"]
snr = "%.1f dB" % snr if isinstance(snr, float) else str(snr)
print("%.2f%% agree, %s" % (100 * r["top1_agreement"], snr) if "accuracy" in r else snr)
PY
)")
    done
    printf '%-28s %-10s | %-22s | %-22s\n' "$m" "$v" "${cells[0]}" "${cells[1]}"
  done
done
