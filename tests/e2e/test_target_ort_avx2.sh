#!/usr/bin/env bash
# qrun --target ort-x86-avx2 computes as ONNX Runtime 1.20.1 does on an x86
# CPU without VNNI, on any host: every case of tests/fixtures/ort-avx2 (what
# ONNX Runtime computed on an AVX2-only AMD EPYC) must come out bit for bit.
# Without --target qrun computes exactly, which differs from those outputs on
# the cases that saturate (so the comparison can fail), and the saturation
# counts of --explain name the layers that saturated.
source "$(dirname "$0")/lib.sh"
fixtures="$src/tests/fixtures/ort-avx2"
cases=$(cd "$fixtures" && ls -d */ | tr -d /)
[ "$(echo "$cases" | wc -w)" -eq 23 ] || fail "expected 23 fixture cases, found: $cases"
# The cases the fixture README lists as computed exactly by ONNX Runtime there.
exact_cases=" qlinearconv_depthwise_3x3_c16 qlinearconv_3x3_uint8_weights qdq_conv_3x3_uint8_weights matmulinteger_u8u8 qlinearconv_3x3_int8_activations qlinearmatmul_s8s8 "
compare() {  # compare DIR_A DIR_B -> prints the number of differing files
  /usr/bin/python3 - "$1" "$2" <<'PY'
import glob, os, sys
import numpy as np
a_dir, b_dir = sys.argv[1:]
files = sorted(glob.glob(os.path.join(b_dir, "*.npy")))
assert files, "no reference outputs in " + b_dir
differ = 0
for f in files:
    a = np.load(os.path.join(a_dir, os.path.basename(f)))
    b = np.load(f)
    if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
        differ += 1
print(differ)
PY
}
for c in $cases; do
  d="$fixtures/$c"
  "$bin/qrun" "$d/model.onnx" --data "$d/inputs" -o "$tmp/$c.avx2" --target ort-x86-avx2 --quiet >/dev/null
  n=$(compare "$tmp/$c.avx2" "$d/ort")
  [ "$n" -eq 0 ] || fail "$c: qrun --target ort-x86-avx2 differs from ONNX Runtime (AVX2) on $n samples"
  "$bin/qrun" "$d/model.onnx" --data "$d/inputs" -o "$tmp/$c.exact" --quiet >/dev/null
  n=$(compare "$tmp/$c.exact" "$d/ort")
  case "$exact_cases" in
    *" $c "*) [ "$n" -eq 0 ] || fail "$c: exact arithmetic should equal ONNX Runtime here, $n samples differ" ;;
    *) [ "$n" -gt 0 ] || fail "$c: exact arithmetic equals the saturated outputs: the case does not test saturation" ;;
  esac
done

# --explain lists saturated pairs per layer; a target file given by path works
# like the built-in name; the exact target reports no saturation table.
c=qlinearconv_3x3_c8
"$bin/qrun" "$fixtures/$c/model.onnx" --data "$fixtures/$c/inputs" --target ort-x86-avx2 --explain --quiet >"$tmp/explain.txt"
grep -Eq '^saturated dot-product pairs \(target ort-x86-avx2\): [1-9][0-9]* of [0-9]+' "$tmp/explain.txt" ||
  fail "no saturation count: $(cat "$tmp/explain.txt")"
"$bin/qrun" "$fixtures/$c/model.onnx" --data "$fixtures/$c/inputs" --target "$src/targets/ort-x86-avx2.json" --json --quiet >"$tmp/sat.json"
/usr/bin/python3 - "$tmp/sat.json" <<'PY' || fail "saturation JSON: $(cat "$tmp/sat.json")"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["saturation"]
assert d["target"] == "ort-x86-avx2" and s["saturated_pairs"] > 0 and s["pairs"] >= s["saturated_pairs"], s
assert sum(l["saturated_pairs"] for l in s["layers"]) == s["saturated_pairs"], s
PY
"$bin/qrun" "$fixtures/$c/model.onnx" --data "$fixtures/$c/inputs" --target ort-x86-vnni --explain --quiet >"$tmp/vnni.txt"
! grep -q 'saturated dot-product pairs' "$tmp/vnni.txt" || fail "exact target printed saturation"

# Prediction: the digits model that qconvert made for VNNI CPUs (full int8),
# compared with its float twin, gets the SNR ONNX Runtime gives on an AVX2 CPU.
d="$fixtures/digits_cnn_int8_qdq"
"$bin/qrun" "$model" --data "$d/inputs" -o "$tmp/float" --quiet >/dev/null
"$bin/qrun" "$d/model.onnx" --data "$d/inputs" --reference "$model" --target ort-x86-avx2 --json --quiet >"$tmp/pred.json"
/usr/bin/python3 - "$tmp/pred.json" "$tmp/float" "$d/ort" <<'PY' || fail "predicted SNR is off"
import glob, json, os, sys
import numpy as np
pred = json.load(open(sys.argv[1]))["snr_db"]
ref = np.concatenate([np.load(f).ravel() for f in sorted(glob.glob(os.path.join(sys.argv[2], "*.npy")))]).astype(np.float64)
ort = np.concatenate([np.load(f).ravel() for f in sorted(glob.glob(os.path.join(sys.argv[3], "*.npy")))]).astype(np.float64)
measured = 10 * np.log10(np.sum(ref ** 2) / np.sum((ref - ort) ** 2))
print(f"predicted {pred:.2f} dB, ONNX Runtime on AVX2 {measured:.2f} dB")
assert abs(pred - measured) <= 0.5, (pred, measured)
PY
echo "ort-avx2 fixtures: all cases bit-exact with --target ort-x86-avx2"
