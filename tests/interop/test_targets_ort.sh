#!/usr/bin/env bash
# Every built-in target (qconvert --list-targets) gives a model ONNX Runtime
# loads and runs (issue 21): the digits CNN, profiled on samples/digits/calib,
# converted with --target T, passes the ONNX checker, runs in ONNX Runtime
# (CPU) on the 360 test digits without NaN or Inf, and keeps top-1 agreement
# with the float model as ONNX Runtime computes both (>= 95%: a target's rules
# may cost accuracy, but not the model). Every target is tried; the failures
# are listed together at the end. Skipped (exit 77, which CMakeLists.txt makes
# CTest report as skipped) when ONNX Runtime for Node is not installed and
# scripts/setup_ort.sh cannot install it.
set -euo pipefail
src=${QTOOL_SOURCE_DIR:?QTOOL_SOURCE_DIR must point at the repository}
if ! command -v node >/dev/null || ! "$src/scripts/setup_ort.sh" >/dev/null 2>&1; then
  echo "skipped: ONNX Runtime for Node is missing (scripts/setup_ort.sh could not install it)"
  exit 77
fi
source "$src/tests/interop/ort_env.sh"

model="$src/samples/digits_cnn.onnx"
"$bin/qprofile" "$model" --data "$src/samples/digits/calib" -o "$tmp/profile.json" --quiet
node "$src/tests/interop/ort_run.js" "$model" "$src/samples/digits/test" "$tmp/float" >/dev/null

mapfile -t targets < <("$bin/qconvert" --list-targets | awk '{print $1}')
((${#targets[@]} >= 4)) || { echo "FAIL: qconvert --list-targets listed ${#targets[@]} targets"; exit 1; }
failed=()
for t in "${targets[@]}"; do
  q="$tmp/$t.onnx"
  step=""
  if ! "$bin/qconvert" "$model" --profile "$tmp/profile.json" -o "$q" --target "$t" >/dev/null 2>"$tmp/err"; then
    step="qconvert"
  elif ! /usr/bin/python3 "$src/tests/interop/check_model.py" "$q" >/dev/null 2>"$tmp/err"; then
    step="ONNX checker"
  elif ! node "$src/tests/interop/ort_run.js" "$q" "$src/samples/digits/test" "$tmp/$t.out" >/dev/null 2>"$tmp/err"; then
    step="ONNX Runtime"
  elif ! /usr/bin/python3 "$src/tests/zoo/agreement.py" "$t" "$tmp/$t.out" "$tmp/float" --min-agreement 0.95 \
      --max-drop inf >"$tmp/agree" 2>"$tmp/err"; then
    cat "$tmp/agree" >>"$tmp/err"
    step="agreement with float"
  fi
  if [ -n "$step" ]; then
    echo "FAIL $t: $step: $(head -c 300 "$tmp/err" | tr '\n' ' ')"
    failed+=("$t")
  else
    cat "$tmp/agree"  # "ok   TARGET: top-1 agreement ..., SNR ..."
  fi
done
# The model that exercises every rule (tests/e2e/target_rules.py: fixed
# outputs, requantized Concat inputs, a MatMul of two activations, 16-bit
# com.microsoft Q/DQ, LayerNormalization): ONNX Runtime runs each target's
# output, and its first output is within 20 dB SNR of the float model's.
/usr/bin/python3 "$src/tests/e2e/target_rules.py" make "$tmp/rules"
"$bin/qprofile" "$tmp/rules/rules.onnx" --data "$tmp/rules/calib" -o "$tmp/rules.json" --quiet
node "$src/tests/interop/ort_run.js" "$tmp/rules/rules.onnx" "$tmp/rules/calib" "$tmp/rules.float" >/dev/null
for t in "${targets[@]}"; do
  q="$tmp/$t.rules.onnx"
  if ! "$bin/qconvert" "$tmp/rules/rules.onnx" --profile "$tmp/rules.json" -o "$q" --target "$t" >/dev/null 2>"$tmp/err" ||
     ! node "$src/tests/interop/ort_run.js" "$q" "$tmp/rules/calib" "$tmp/$t.rules.out" >/dev/null 2>>"$tmp/err" ||
     ! /usr/bin/python3 "$src/tests/zoo/agreement.py" "$t rules" "$tmp/$t.rules.out" "$tmp/rules.float" --min-agreement 0 \
         --max-drop inf --min-snr 20 >"$tmp/agree" 2>>"$tmp/err"; then
    echo "FAIL $t (rules model): $(cat "$tmp/agree" "$tmp/err" 2>/dev/null | head -c 300 | tr '\n' ' ')"
    failed+=("$t")
  fi
done
if ((${#failed[@]})); then
  echo "${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}"
  exit 1
fi
echo "all ${#targets[@]} targets run in ONNX Runtime"
