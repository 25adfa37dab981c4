#!/usr/bin/env bash
# scripts/ci_accuracy_gate.sh: profile -> convert -> qrun --reference with
# gates; the job's exit code is qrun's (0 pass, 3 gate failed, 2 bad input).
source "$(dirname "$0")/lib.sh"
gate="$src/scripts/ci_accuracy_gate.sh"
export QTOOL_BIN="$bin"
args=(--calib "$samples/digits/calib" --test "$samples/digits/test" --labels "$samples/digits/test_labels.npy")

"$gate" "$model" "${args[@]}" --min-snr 20 --max-accuracy-drop 2 --out "$tmp/pass" >"$tmp/pass.txt" ||
  fail "gate failed on the digits sample: $(cat "$tmp/pass.txt")"
grep -q '^accuracy gate: pass' "$tmp/pass.txt" || fail "no pass line: $(cat "$tmp/pass.txt")"
for f in profile.json model.quant.onnx report.json accuracy.json plan.txt; do
  [ -s "$tmp/pass/$f" ] || fail "artifact $f missing"
done
/usr/bin/python3 - "$tmp/pass/accuracy.json" <<'PY' || fail "accuracy.json wrong: $(head -c 600 "$tmp/pass/accuracy.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["snr_db"] > 20 and d["accuracy_drop_pp"] <= 2, d
layers = d["layers"]
assert len(layers) >= 5, layers
snrs = [l["snr_db"] for l in layers if l["snr_db"] not in ("inf", "-inf")]
assert snrs == sorted(snrs), "per-layer table is not worst-first"
PY
grep -q 'integer ops' "$tmp/pass/plan.txt" || fail "plan.txt lacks the integer ops: $(cat "$tmp/pass/plan.txt")"

# Extra qconvert flags after --; an impossible gate exits 3 naming the metric.
expect_exit 3 "gate failed: SNR" "$gate" "$model" "${args[@]}" --min-snr 200 -- --schema symmetric
grep -q 'FAIL (qrun exit 3)' "$tmp/stdout" || fail "no FAIL line: $(cat "$tmp/stdout")"
expect_exit 3 "accuracy drop" "$gate" "$model" "${args[@]}" --max-accuracy-drop -100
# Bad input exits 2 with one error line.
expect_exit 2 "missing.onnx: model file not found" "$gate" "$tmp/missing.onnx" "${args[@]}"
expect_exit 2 "--calib DIR and --test DIR are required" "$gate" "$model" --test "$samples/digits/test"
echo "ci accuracy gate ok"
