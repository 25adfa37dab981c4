#!/usr/bin/env bash
# qconvert's accuracy targets (issue 24): --data DIR with --min-snr,
# --max-drop (with --labels) or --min-agreement keeps the fewest nodes float
# until the target holds, in at most 20 evaluations; exit 3, with the best
# model written, when nothing that may move reaches it.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py "$src/tests/e2e/sensitive_model.py" "$tmp"
"$bin/qprofile" "$tmp/sens.onnx" --data "$tmp/data" -o "$tmp/p.json" --quiet
convert() { "$bin/qconvert" "$tmp/sens.onnx" --profile "$tmp/p.json" --per-tensor "$@"; }

# The broken layer alone is kept float (with its fused Relu), and the target holds in qrun too.
convert -o "$tmp/s.onnx" --data "$tmp/data" --min-snr 25 --report "$tmp/r.json" >"$tmp/out.txt" 2>"$tmp/err.txt" ||
  fail "qconvert --min-snr 25: $(cat "$tmp/err.txt")"
grep -q "accuracy target --min-snr 25: .* with 1 node(s) kept float .*: bad$" "$tmp/out.txt" || fail "summary line: $(cat "$tmp/out.txt")"
$py - "$tmp/r.json" <<'PY' || fail "the report's search record is wrong"
import json, sys
s = json.load(open(sys.argv[1]))["search"]
assert s["met"] and s["kept_float"] == ["bad"] and s["kept_float_nodes"] == ["bad", "relu2"], s
assert s["before"] < 15 and s["after"] >= 25, s
assert s["evaluations"] == len(s["steps"]) <= 20, s
assert s["steps"][0]["step"] == "as converted" and not s["steps"][0]["meets"], s["steps"]
assert s["ranking"][0]["node"] == "bad", s["ranking"]
PY
"$bin/qrun" "$tmp/s.onnx" --reference "$tmp/sens.onnx" --data "$tmp/data" --min-snr 25 --quiet >/dev/null ||
  fail "the searched model misses --min-snr 25 in qrun"
$py - "$tmp/s.onnx" <<'PY' || fail "'bad' keeps quantized weights in the output model"
import sys, onnx
m = onnx.load(sys.argv[1])
bad = next(n for n in m.graph.node if n.name == "bad")
assert bad.input[1] in {i.name for i in m.graph.initializer}, bad  # float weights, no DequantizeLinear
PY

# A target the conversion already meets costs one evaluation and moves nothing.
convert -o "$tmp/easy.onnx" --data "$tmp/data" --min-agreement 0.5 --report "$tmp/easy.json" >/dev/null 2>&1 ||
  fail "qconvert --min-agreement 0.5 failed"
$py -c "import json,sys; s=json.load(open(sys.argv[1]))['search']; assert s['met'] and s['kept_float']==[] and s['evaluations']==1, s" \
  "$tmp/easy.json" || fail "an easy target moved nodes"

# An unnamed broken node cannot be kept float: exit 3, the best model written, the shortfall said.
mkdir -p "$tmp/u"
$py "$src/tests/e2e/sensitive_model.py" "$tmp/u" --unnamed-bad
"$bin/qprofile" "$tmp/u/sens.onnx" --data "$tmp/u/data" -o "$tmp/u/p.json" --quiet
code=0
"$bin/qconvert" "$tmp/u/sens.onnx" --profile "$tmp/u/p.json" --per-tensor -o "$tmp/u/s.onnx" --data "$tmp/u/data" \
  --min-snr 25 >/dev/null 2>"$tmp/u/err" || code=$?
[ "$code" = 3 ] || fail "an unreachable target exited $code: $(cat "$tmp/u/err")"
grep -q "gate failed: accuracy target --min-snr 25 not met even with all" "$tmp/u/err" || fail "no shortfall: $(cat "$tmp/u/err")"
[ -s "$tmp/u/s.onnx" ] || fail "no model written after an unreachable target"

# --max-drop on the digits sample with labels.
"$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/d.json" --quiet
"$bin/qconvert" "$model" --profile "$tmp/d.json" -o "$tmp/d.onnx" --data "$samples/digits/test" --limit 100 \
  --labels "$samples/digits/test_labels.npy" --max-drop 0.5 >"$tmp/d.txt" 2>&1 || fail "--max-drop 0.5: $(cat "$tmp/d.txt")"
grep -q "accuracy target --max-drop 0.5" "$tmp/d.txt" || fail "--max-drop summary: $(cat "$tmp/d.txt")"

# Bad usage: exit 2, one error line, nothing written.
expect_refused "needs --data" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --min-snr 25
expect_refused "--max-drop needs --labels" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --data "$tmp/data" --max-drop 1
expect_refused "give one accuracy target" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --data "$tmp/data" --min-snr 25 --min-agreement 0.9
expect_refused "go with an accuracy target" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --data "$tmp/data"
expect_refused "a fraction in [0, 1]" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --data "$tmp/data" --min-agreement 95
expect_refused "not --dynamic" "$tmp/x.onnx" "$bin/qconvert" "$tmp/sens.onnx" --dynamic -o "$tmp/x.onnx" --data "$tmp/data" --min-snr 25
echo "accuracy search ok"
