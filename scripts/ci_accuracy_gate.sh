#!/usr/bin/env bash
# The pattern for an accuracy gate in a CI pipeline: profile the float model on
# calibration data, quantize it, and compare the quantized model against the
# float one on held-out data with gates. The exit code is qrun's (DESIGN
# "Command-line contract"): 0 pass, 2 bad input, 3 a gate failed, so the CI
# job fails exactly when accuracy does.
#
#   scripts/ci_accuracy_gate.sh MODEL.onnx --calib DIR --test DIR [--labels LABELS.npy]
#       [--min-snr DB] [--min-cosine C] [--max-accuracy-drop PP] [--out DIR] [-- QCONVERT_FLAGS...]
#
# Writes into --out (default: a temp dir, removed at exit): profile.json,
# model.quant.onnx, report.json (qconvert's decisions), accuracy.json (qrun's
# summary with the per-layer table, worst SNR first) and plan.txt (qrun
# --explain). Binaries come from $QTOOL_BIN (default: <repo>/build).
#
# Example (a job in .gitlab-ci.yml or a GitHub Actions step):
#   scripts/ci_accuracy_gate.sh samples/digits_cnn.onnx --calib samples/digits/calib \
#     --test samples/digits/test --labels samples/digits/test_labels.npy \
#     --min-snr 25 --max-accuracy-drop 1 --out artifacts/ -- --schema symmetric
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${QTOOL_BIN:-$repo/build}

usage="usage: ci_accuracy_gate.sh MODEL.onnx --calib DIR --test DIR [--labels L.npy] [gates] [--out DIR] [-- QCONVERT_FLAGS]"
die() { echo "error: $*" >&2; exit 2; }

[ $# -ge 1 ] || die "missing MODEL.onnx ($usage)"
model=$1
shift
calib="" test="" labels="" out=""
gates=()
while [ $# -gt 0 ]; do
  case $1 in
    --calib) calib=${2:?}; shift 2 ;;
    --test) test=${2:?}; shift 2 ;;
    --labels) labels=${2:?}; shift 2 ;;
    --min-snr|--min-cosine|--max-accuracy-drop) gates+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --) shift; break ;;
    *) die "unknown argument '$1' ($usage)" ;;
  esac
done
[ -f "$model" ] || die "$model: model file not found"
[ -n "$calib" ] && [ -n "$test" ] || die "--calib DIR and --test DIR are required"
for tool in qprofile qconvert qrun; do
  [ -x "$bin/$tool" ] || die "$bin/$tool not found (build with scripts/setup.sh or set QTOOL_BIN)"
done
if [ -z "$out" ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

"$bin/qprofile" "$model" --data "$calib" -o "$out/profile.json" --quiet
"$bin/qconvert" "$model" --profile "$out/profile.json" -o "$out/model.quant.onnx" --report "$out/report.json" "$@"
"$bin/qrun" "$out/model.quant.onnx" --explain >"$out/plan.txt"
label_args=()
[ -z "$labels" ] || label_args=(--labels "$labels")
# qrun's exit code is the job's: the gate's `error:` line names the metric.
code=0
"$bin/qrun" "$out/model.quant.onnx" --data "$test" --reference "$model" "${label_args[@]}" "${gates[@]}" \
  --per-layer --json --quiet >"$out/accuracy.json" || code=$?
if [ "$code" -eq 0 ] || [ "$code" -eq 3 ]; then
  /usr/bin/python3 - "$out/accuracy.json" <<'EOF' || true
import json, sys
d = json.load(open(sys.argv[1]))
line = f"accuracy gate: SNR {d['snr_db']} dB, cosine {d['cosine']:.6f}, top-1 agreement {100 * d['top1_agreement']:.2f}%"
if "accuracy_drop_pp" in d:
    line += f", accuracy {d['reference_accuracy']['top1']:.2f}% -> {d['accuracy']['top1']:.2f}% ({d['accuracy_drop_pp']:.2f} pp)"
print(line)
for layer in d.get("layers", [])[:3]:
    print(f"  worst layer: {layer['tensor']} {layer['snr_db']} dB")
EOF
fi
[ "$code" -eq 0 ] && echo "accuracy gate: pass" || echo "accuracy gate: FAIL (qrun exit $code)"
exit "$code"
