#!/usr/bin/env bash
# qconvert's accuracy targets (issue 24): --data DIR with --min-snr,
# --max-drop (with --labels) or --min-agreement moves the fewest nodes to
# 16-bit activations (where the target mixes them: ort-x86 does) or float until
# the target holds, in at most 20 evaluations; exit 3, with the best model
# written, when nothing that may move reaches it.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py "$src/tests/e2e/sensitive_model.py" "$tmp"
"$bin/qprofile" "$tmp/sens.onnx" --data "$tmp/data" -o "$tmp/p.json" --quiet
convert() { "$bin/qconvert" "$tmp/sens.onnx" --profile "$tmp/p.json" --per-tensor "$@"; }

# Weights broken: 16-bit activations cannot help, so the broken layer alone is kept float (with its fused Relu),
# and the target holds in qrun too.
convert -o "$tmp/s.onnx" --data "$tmp/data" --min-snr 25 --report "$tmp/r.json" >"$tmp/out.txt" 2>"$tmp/err.txt" ||
  fail "qconvert --min-snr 25: $(cat "$tmp/err.txt")"
grep -q "accuracy target --min-snr 25: .* with 1 node(s) moved to float .*: bad$" "$tmp/out.txt" || fail "summary line: $(cat "$tmp/out.txt")"
$py - "$tmp/r.json" <<'PY' || fail "the report's search record is wrong"
import json, sys
s = json.load(open(sys.argv[1]))["search"]
assert s["met"] and s["moved"] == ["bad"] and s["moved_nodes"] == ["bad", "relu2"], s
assert s["levels"] == ["uint16", "float"] and s["moved_to"] == "float", s
assert s["before"] < 15 and s["after"] >= 25, s
assert s["evaluations"] == len(s["steps"]) <= 20, s
assert s["steps"][0]["step"] == "as converted" and not s["steps"][0]["meets"], s["steps"]
assert s["steps"][1]["step"] == "all moved to uint16" and not s["steps"][1]["meets"], s["steps"]
assert s["steps"][2]["step"] == "all moved to float" and s["steps"][2]["meets"], s["steps"]
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

# An activation broken: 16-bit activations repair it; weights stay 8-bit, the model is still ort-x86's
# (--check-target), and ONNX Runtime's float run agrees with qrun's.
mkdir -p "$tmp/a"
$py "$src/tests/e2e/sensitive_model.py" "$tmp/a" --activation-outlier
"$bin/qprofile" "$tmp/a/sens.onnx" --data "$tmp/a/data" -o "$tmp/a/p.json" --quiet
"$bin/qconvert" "$tmp/a/sens.onnx" --profile "$tmp/a/p.json" -o "$tmp/a/s.onnx" --data "$tmp/a/data" --min-snr 30 \
  --report "$tmp/a/r.json" >"$tmp/a/out.txt" 2>"$tmp/a/err.txt" || fail "activation outlier --min-snr 30: $(cat "$tmp/a/err.txt")"
grep -q "moved to uint16" "$tmp/a/out.txt" || fail "activation outlier summary: $(cat "$tmp/a/out.txt")"
$py - "$tmp/a/r.json" "$tmp/a/s.onnx" <<'PY' || fail "the 16-bit move is wrong"
import json, sys, onnx
s = json.load(open(sys.argv[1]))["search"]
assert s["met"] and s["moved_to"] == "uint16" and len(s["moved"]) == 1 and s["before"] < 25 <= 30 <= s["after"], s
m = onnx.load(sys.argv[2])
q16 = [n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.domain == "com.microsoft"]
assert q16, "no 16-bit QuantizeLinear"
w = [i for i in m.graph.initializer if i.name.startswith("w_bad") and i.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)]
assert w, "bad's weights are not 8-bit"
PY
"$bin/qconvert" --check-target ort-x86 "$tmp/a/s.onnx" >/dev/null || fail "a 16-bit move is not ort-x86's"
# The decisions travel with the model (metadata qtool.search) and qrun --html shows them.
"$bin/qrun" "$tmp/a/s.onnx" --reference "$tmp/a/sens.onnx" --data "$tmp/a/data" --per-layer --html "$tmp/a/page.html" \
  --quiet >/dev/null 2>&1 || fail "qrun --per-layer --html on the searched model failed"
$py - "$tmp/a/s.onnx" "$tmp/a/page.html" "$tmp/a/r.json" <<'PY' || fail "the search's decisions are not in the model or the page"
import json, sys, onnx
import xml.etree.ElementTree as ET
meta = {p.key: p.value for p in onnx.load(sys.argv[1]).metadata_props}
rec = json.loads(meta["qtool.search"])
assert rec["moved_to"] == "uint16" and rec["moved"] == json.load(open(sys.argv[3]))["search"]["moved"], rec
page = open(sys.argv[2]).read()
root = ET.fromstring(page)
text = " ".join(root.itertext())
assert "Mixed precision: qconvert's accuracy search" in text, "no search section"
assert "--min-snr 30" in text and rec["moved"][0] in text and "uint16" in text, "search section incomplete"
PY
"$bin/qrun" "$tmp/a/s.onnx" --reference "$tmp/a/sens.onnx" --data "$tmp/a/data" --min-snr 30 --quiet >/dev/null ||
  fail "the 16-bit model misses --min-snr 30 in qrun"
# --move-to float keeps the old behaviour; --move-to 16-bit on a target without a mix is refused.
"$bin/qconvert" "$tmp/a/sens.onnx" --profile "$tmp/a/p.json" -o "$tmp/a/f.onnx" --data "$tmp/a/data" --min-snr 30 \
  --move-to float >"$tmp/a/outf.txt" 2>&1 || fail "--move-to float: $(cat "$tmp/a/outf.txt")"
grep -q "moved to float" "$tmp/a/outf.txt" || fail "--move-to float summary: $(cat "$tmp/a/outf.txt")"
expect_refused "runs no 16-bit activations beside 8-bit ones" "$tmp/x.onnx" "$bin/qconvert" "$tmp/a/sens.onnx" \
  --profile "$tmp/a/p.json" -o "$tmp/x.onnx" --data "$tmp/a/data" --min-snr 30 --move-to 16-bit --target tflite-int8

# A target the conversion already meets costs one evaluation and moves nothing.
convert -o "$tmp/easy.onnx" --data "$tmp/data" --min-agreement 0.5 --report "$tmp/easy.json" >/dev/null 2>&1 ||
  fail "qconvert --min-agreement 0.5 failed"
$py -c "import json,sys; s=json.load(open(sys.argv[1]))['search']; assert s['met'] and s['moved']==[] and s['evaluations']==1, s" \
  "$tmp/easy.json" || fail "an easy target moved nodes"
$py -c "import onnx,sys; m=onnx.load(sys.argv[1]); assert 'qtool.search' not in {p.key for p in m.metadata_props}" "$tmp/easy.onnx" ||
  fail "a model the search left alone carries a search record"

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
expect_refused "goes with an accuracy target" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --move-to float
expect_refused "a fraction in [0, 1]" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --data "$tmp/data" --min-agreement 95
expect_refused "not --dynamic" "$tmp/x.onnx" "$bin/qconvert" "$tmp/sens.onnx" --dynamic -o "$tmp/x.onnx" --data "$tmp/data" --min-snr 25
echo "accuracy search ok"
