#!/usr/bin/env bash
# The main job end to end on samples/: qprofile -> qconvert -> qrun, with the
# quantized accuracy within 1 point of float.
source "$(dirname "$0")/lib.sh"

"$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/p.json" --quiet
grep -q '"format"' "$tmp/p.json" || fail "profile lacks its format tag"
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/q.onnx" --report "$tmp/report.json"
[ -s "$tmp/q.onnx" ] || fail "no quantized model written"
grep -q '"QuantizeLinear"\|"quantized": true' "$tmp/report.json" || fail "report lists no quantized node"
grep -q 'qtool.profile_digest' "$tmp/q.onnx" || fail "provenance metadata missing"

"$bin/qrun" "$tmp/q.onnx" --data "$samples/digits/test" --reference "$model" \
  --labels "$samples/digits/test_labels.npy" --quiet | tee "$tmp/summary.txt"
float=$(sed -n 's/^float accuracy: \([0-9.]*\)%.*/\1/p' "$tmp/summary.txt")
quant=$(sed -n 's/^quantized accuracy: \([0-9.]*\)%.*/\1/p' "$tmp/summary.txt")
snr=$(sed -n 's/^SNR: \([-0-9.]*\) dB/\1/p' "$tmp/summary.txt")
[ -n "$float" ] && [ -n "$quant" ] && [ -n "$snr" ] || fail "summary lacks accuracy or SNR"
awk -v f="$float" -v q="$quant" 'BEGIN { exit !(f - q <= 1.0 && f >= 95) }' || fail "accuracy drop too large: $float -> $quant"
awk -v s="$snr" 'BEGIN { exit !(s >= 20) }' || fail "SNR $snr dB too low"

# JSON summary and gates: a passing gate exits 0, an impossible one exits 3 naming the metric.
"$bin/qrun" "$tmp/q.onnx" --data "$samples/digits/test" --limit 20 --reference "$model" --json --quiet >"$tmp/s.json"
/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['samples']==20 and d['snr_db']>20" "$tmp/s.json" \
  || fail "--json summary wrong: $(cat "$tmp/s.json")"
"$bin/qrun" "$tmp/q.onnx" --data "$samples/digits/test" --limit 20 --reference "$model" --min-snr 10 --quiet >/dev/null
expect_exit 3 "SNR" "$bin/qrun" "$tmp/q.onnx" --data "$samples/digits/test" --limit 20 --reference "$model" --min-snr 200 --quiet
expect_exit 3 "accuracy drop" "$bin/qrun" "$tmp/q.onnx" --data "$samples/digits/test" --limit 30 --reference "$model" \
  --labels "$samples/digits/test_labels.npy" --max-accuracy-drop -100 --quiet

# -o writes <stem>.out<k>.npy per sample.
"$bin/qrun" "$model" --data "$samples/digits/test" --limit 3 -o "$tmp/out" --quiet
for s in 0000 0001 0002; do [ -s "$tmp/out/$s.out0.npy" ] || fail "missing $tmp/out/$s.out0.npy"; done
[ "$(ls "$tmp/out" | wc -l)" -eq 3 ] || fail "unexpected files in -o dir: $(ls "$tmp/out")"
echo "pipeline ok: float $float%, quantized $quant%, SNR $snr dB"
