#!/usr/bin/env bash
# qrun's integer execution against ONNX Runtime: for qconvert's outputs with
# default settings, in QDQ and QOperator form, qrun (lowering DQ -> op -> Q to
# integer kernels) and onnxruntime-node give the same outputs within one output
# quantization step for at least 99.9% of the elements
# (tests/interop/compare_outputs.py --within-step).
#
#   test_lower_ort.sh            samples/ (the digits CNN, every test sample)
#   test_lower_ort.sh --zoo      the zoo (scripts/make_zoo.sh), 2 samples per model
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"

# check NAME MODEL CALIB_DIR TEST_DIR: profile, convert both forms, run both runtimes, compare.
check() {
  local name=$1 model=$2 calib=$3 data=$4 d="$tmp/$1"
  mkdir -p "$d"
  "$bin/qprofile" "$model" --data "$calib" -o "$d/p.json" --quiet
  for format in qdq qoperator; do
    "$bin/qconvert" "$model" --profile "$d/p.json" -o "$d/$format.onnx" --format "$format" >/dev/null
    "$bin/qrun" "$d/$format.onnx" --explain >"$d/$format.plan"
    grep -q '^integer ops:' "$d/$format.plan" || { echo "FAIL $name $format: nothing lowered"; cat "$d/$format.plan"; return 1; }
    "$bin/qrun" "$d/$format.onnx" --data "$data" -o "$d/qrun_$format" --target "$ort_target" --quiet
    node "$src/tests/interop/ort_run.js" "$d/$format.onnx" "$data" "$d/ort_$format" >/dev/null
    echo "$name ($format): $(head -n1 "$d/$format.plan")"
    cmp=(/usr/bin/python3 "$src/tests/interop/compare_outputs.py")
    "${cmp[@]}" "$d/qrun_$format" "$d/ort_$format" --within-step "$d/$format.onnx" --min-fraction 0.999 ||
      { echo "FAIL $name $format"; return 1; }
  done
}

if [ "${1:-}" = "--zoo" ]; then
  export ZOO_DIR=${ZOO_DIR:-$src/.cache/zoo}
  bash "$src/scripts/make_zoo.sh"
  failed=()
  checked=0
  for d in "$ZOO_DIR"/*/; do
    name=$(basename "$d")
    [ -f "$d/DONE" ] || continue
    checked=$((checked + 1))
    # Two samples to calibrate and two to compare keep the zoo part to minutes.
    mkdir -p "$tmp/in_$name/calib" "$tmp/in_$name/test"
    ls "$d/inputs" | sort | head -n 2 | while read -r f; do cp "$d/inputs/$f" "$tmp/in_$name/calib/"; done
    ls "$d/inputs" | sort | sed -n 3,4p | while read -r f; do cp "$d/inputs/$f" "$tmp/in_$name/test/"; done
    check "$name" "$d/model.onnx" "$tmp/in_$name/calib" "$tmp/in_$name/test" || failed+=("$name")
  done
  # make_zoo.sh just built the zoo: finding no model in it is a failure, not a pass.
  ((checked > 0)) || { echo "lowered vs ONNX Runtime: no built model in $ZOO_DIR" >&2; exit 1; }
  if ((${#failed[@]})); then
    echo "lowered vs ONNX Runtime: ${#failed[@]} zoo models failed: ${failed[*]}" >&2
    exit 1
  fi
  echo "lowered vs ONNX Runtime: zoo ok"
  exit 0
fi

check digits "$src/samples/digits_cnn.onnx" "$src/samples/digits/calib" "$src/samples/digits/test"
# The check can fail: outputs moved by two steps on 1% of the elements are refused.
/usr/bin/python3 - "$tmp/digits/qrun_qdq" "$tmp/digits/moved" "$tmp/digits/qdq.onnx" <<'PY'
import os, sys
import numpy as np
sys.path.insert(0, os.path.join(os.environ["QTOOL_SOURCE_DIR"], "tests", "interop"))
from compare_outputs import output_steps
src, dst, model = sys.argv[1:]
step = output_steps(model)[0]
os.makedirs(dst)
rng = np.random.default_rng(0)
for f in sorted(os.listdir(src)):
    a = np.load(os.path.join(src, f))
    a.reshape(-1)[rng.random(a.size) < 0.02] += np.float32(2.5 * step)
    np.save(os.path.join(dst, f), a)
PY
if /usr/bin/python3 "$src/tests/interop/compare_outputs.py" "$tmp/digits/moved" "$tmp/digits/ort_qdq"      --within-step "$tmp/digits/qdq.onnx" --min-fraction 0.999 >"$tmp/moved.log"; then
  echo "FAIL: --within-step accepted outputs moved by 2.5 steps"; cat "$tmp/moved.log"; exit 1
fi
echo "lowered vs ONNX Runtime: samples ok"
