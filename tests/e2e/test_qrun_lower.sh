#!/usr/bin/env bash
# qrun's integer lowering from the command line: --explain (text and JSON),
# --no-lower, --requant, --threads, --per-layer, and their refusals.
source "$(dirname "$0")/lib.sh"
test_dir="$samples/digits/test"
"$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/p.json" --quiet
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/q.onnx" >/dev/null
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/qs.onnx" --schema symmetric --activations int8 >/dev/null

# --explain without --data prints the plan and exits.
"$bin/qrun" "$tmp/q.onnx" --explain >"$tmp/plan.txt"
grep -q '^plan (lowered to integer kernels)' "$tmp/plan.txt" || fail "plan header: $(cat "$tmp/plan.txt")"
grep -q "^  quantize   float -> int: 'input' -> 'input_quantized'" "$tmp/plan.txt" || fail "input Q boundary missing"
grep -q "MaxPool node '/features/features.4/MaxPool': lowered: MaxPool" "$tmp/plan.txt" || fail "MaxPool not lowered"
"$bin/qrun" "$tmp/q.onnx" --explain --json >"$tmp/plan.json"
/usr/bin/python3 - "$tmp/plan.json" <<'PY' || fail "plan JSON wrong: $(head -c 800 "$tmp/plan.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["lowered"] is True
s = d["summary"]
assert s["integer_ops"] == len(d["integer_ops"]) >= 2, s
assert s["boundaries"] == len(d["boundaries"]) >= 1, s
assert all(b["kind"] in ("quantize", "dequantize") for b in d["boundaries"])
for island in d["islands"]:
    assert all(n["reason"] for n in island["nodes"]), island
PY
"$bin/qrun" "$tmp/q.onnx" --explain --no-lower >"$tmp/plain.txt"
grep -q '^plan (not lowered: Q/DQ run in float): 0 integer ops' "$tmp/plain.txt" || fail "--no-lower plan: $(head -n1 "$tmp/plain.txt")"
"$bin/qrun" "$model" --explain | grep -q '^plan: float model' || fail "float model plan"

# Lowered and float-path runs agree within one output step; threads change nothing.
"$bin/qrun" "$tmp/q.onnx" --data "$test_dir" --limit 40 -o "$tmp/lowered" --quiet
"$bin/qrun" "$tmp/q.onnx" --data "$test_dir" --limit 40 -o "$tmp/threads" --threads 2 --quiet
"$bin/qrun" "$tmp/q.onnx" --data "$test_dir" --limit 40 -o "$tmp/float_path" --no-lower --quiet
"$bin/qrun" "$tmp/q.onnx" --data "$test_dir" --limit 40 -o "$tmp/fixed" --requant fixed-point --quiet
cmp_out() { /usr/bin/python3 "$src/tests/interop/compare_outputs.py" "$@" >"$tmp/cmp.txt" || fail "$* : $(cat "$tmp/cmp.txt")"; }
cmp_out "$tmp/lowered" "$tmp/threads" --atol 0
cmp_out "$tmp/lowered" "$tmp/float_path" --within-step "$tmp/q.onnx" --min-fraction 0.99
cmp_out "$tmp/lowered" "$tmp/fixed" --within-step "$tmp/q.onnx" --min-fraction 0.99
"$bin/qrun" "$tmp/qs.onnx" --data "$test_dir" --limit 40 -o "$tmp/sym" --quiet
"$bin/qrun" "$tmp/qs.onnx" --data "$test_dir" --limit 40 -o "$tmp/sym_float_path" --no-lower --quiet
cmp_out "$tmp/sym" "$tmp/sym_float_path" --within-step "$tmp/qs.onnx" --min-fraction 0.99

# --per-layer: every quantized activation paired with its float twin, worst first.
"$bin/qrun" "$tmp/q.onnx" --data "$test_dir" --limit 20 --reference "$model" --per-layer --quiet >"$tmp/layers.txt"
grep -q '^per-layer (' "$tmp/layers.txt" || fail "no per-layer table: $(cat "$tmp/layers.txt")"
grep -q "/features/features.1/Relu_output_0_quantized ~ /features/features.1/Relu_output_0" "$tmp/layers.txt" ||
  fail "quantized tensor not paired with its float twin: $(cat "$tmp/layers.txt")"
"$bin/qrun" "$tmp/q.onnx" --data "$test_dir" --limit 20 --reference "$model" --per-layer --json --quiet >"$tmp/layers.json"
/usr/bin/python3 - "$tmp/layers.json" <<'PY' || fail "per-layer JSON wrong: $(head -c 800 "$tmp/layers.json")"
import json, sys
d = json.load(open(sys.argv[1]))
layers = d["layers"]
assert len(layers) >= 8, layers
snr = [l["snr_db"] for l in layers]
assert snr == sorted(snr), snr
assert any(l["dequantized"] for l in layers) and any(not l["dequantized"] for l in layers)
assert sorted(l["order"] for l in layers) == list(range(len(layers)))
PY
"$bin/qrun" "$tmp/q.onnx" --data "$test_dir" --limit 20 --reference "$model" --per-layer --min-snr 60 --quiet \
  >"$tmp/gate.txt" 2>/dev/null && fail "--min-snr 60 passed"
grep -q '^first layer below --min-snr 60.00 dB: ' "$tmp/gate.txt" || fail "no first-bad-layer line: $(cat "$tmp/gate.txt")"

# Refusals: exit 2, one error line.
expect_exit 2 "--per-layer needs --reference" "$bin/qrun" "$tmp/q.onnx" --data "$test_dir" --per-layer
expect_exit 2 "--requant" "$bin/qrun" "$tmp/q.onnx" --data "$test_dir" --requant sometimes
expect_exit 2 "--threads" "$bin/qrun" "$tmp/q.onnx" --data "$test_dir" --threads 0
echo "qrun lowering ok"
