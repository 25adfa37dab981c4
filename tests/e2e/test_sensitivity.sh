#!/usr/bin/env bash
# qrun --sensitivity (issue 24) ranks the layer that breaks the model first:
# tests/e2e/sensitive_model.py has one layer, "bad", whose per-tensor weights
# round to zero, so quantizing that layer alone costs the most and leaving it
# alone float recovers the most.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py "$src/tests/e2e/sensitive_model.py" "$tmp"
"$bin/qprofile" "$tmp/sens.onnx" --data "$tmp/data" -o "$tmp/p.json" --quiet
"$bin/qconvert" "$tmp/sens.onnx" --profile "$tmp/p.json" -o "$tmp/q.onnx" --per-tensor 2>/dev/null
"$bin/qrun" "$tmp/q.onnx" --reference "$tmp/sens.onnx" --data "$tmp/data" --sensitivity --json --quiet >"$tmp/s.json"
$py - "$tmp/s.json" <<'PY' || fail "qrun --sensitivity: $(cat "$tmp/s.json")"
import json, sys
s = json.load(open(sys.argv[1]))
layers = s["layers"]
names = [l["node"] for l in layers]
assert s["method"] == "full-run" and s["samples"] == 12, s
assert s["model_runs"] == 2 * len(layers) + 1, s
assert set(names) >= {"conv1", "bad", "fc"}, names
assert names[0] == "bad", f"most sensitive first: {names}"
bad = layers[0]
snr = lambda v: v["snr_db"]
all_q = snr(s["all_quantized"])
# Quantizing "bad" alone costs about what quantizing everything costs ...
assert snr(bad["only_quantized"]) < all_q + 3, (bad, all_q)
# ... and leaving it float recovers more than any other layer does.
assert snr(bad["only_float"]) > all_q + 10, (bad, all_q)
assert all(snr(l["only_float"]) < snr(bad["only_float"]) for l in layers[1:]), layers
assert all(l["kept_constants"] == 0 for l in layers), layers
# The layer-alone method (no full run) singles out the same layer.
alone = {l["node"]: l["alone"] for l in layers}
assert all(a["method"] == "layer-alone" and "snr_db" in a for a in alone.values()), alone
assert min(alone, key=lambda k: alone[k]["snr_db"]) == "bad", alone
assert alone["bad"]["snr_db"] < 5 and alone["conv1"]["snr_db"] > 25, alone
PY
# The text form names the ranking and the method.
"$bin/qrun" "$tmp/q.onnx" --reference "$tmp/sens.onnx" --data "$tmp/data" --sensitivity --quiet >"$tmp/s.txt"
grep -q "method full-run" "$tmp/s.txt" && grep -q "method layer-alone" "$tmp/s.txt" || fail "text output lacks the method: $(cat "$tmp/s.txt")"
# Bad usage: exit 2 with one error line.
expect_exit 2 "--sensitivity needs --reference" "$bin/qrun" "$tmp/q.onnx" --data "$tmp/data" --sensitivity
expect_exit 2 "--sensitivity runs on its own" "$bin/qrun" "$tmp/q.onnx" --reference "$tmp/sens.onnx" --data "$tmp/data" --sensitivity -o "$tmp/out"
[ ! -e "$tmp/out" ] || fail "--sensitivity with -o wrote $tmp/out"
expect_exit 2 "no quantized layer" "$bin/qrun" "$tmp/sens.onnx" --reference "$tmp/sens.onnx" --data "$tmp/data" --sensitivity
echo "sensitivity ok"
