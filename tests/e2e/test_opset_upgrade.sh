#!/usr/bin/env bash
# qconvert on an opset 9 model (tests/e2e/old_opset_models.py): the model is
# upgraded to the opset its output needs (13 with per-channel weights, 10 per
# tensor) with one warning line and report notes, and the quantized model is
# valid for the ONNX checker and close to the float one in qrun. An op without
# an upgrade and a model below opset 7 are refused (exit 2, one error line).
source "$(dirname "$0")/lib.sh"

py=/usr/bin/python3
$py "$src/tests/e2e/old_opset_models.py" make "$tmp/m"
"$bin/qprofile" "$tmp/m/cnn9.onnx" --data "$tmp/m/cnn9_in" -o "$tmp/p.json" --quiet

opset_of() { $py -c "import onnx,sys; print([o.version for o in onnx.load(sys.argv[1]).opset_import if o.domain in ('', 'ai.onnx')][0])" "$1"; }

for granularity in per-channel per-tensor; do
  want=13
  [ "$granularity" = per-tensor ] && want=10
  out="$tmp/q_$granularity.onnx"
  "$bin/qconvert" "$tmp/m/cnn9.onnx" --profile "$tmp/p.json" --$granularity -o "$out" --report "$tmp/r.json" \
    2>"$tmp/err" || fail "qconvert --$granularity on an opset 9 model failed: $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "expected one warning line, got: $(cat "$tmp/err")"
  grep -q "^warning: .*cnn9.onnx: upgraded from opset 9 to $want for " "$tmp/err" || fail "no upgrade notice: $(cat "$tmp/err")"
  [ "$(opset_of "$out")" = "$want" ] || fail "$out is opset $(opset_of "$out"), expected $want"
  $py "$src/tests/interop/check_model.py" "$out" >/dev/null || fail "$out is not a valid ONNX model"
  $py - "$tmp/r.json" "$out" "$want" <<'PY' || fail "report or model of --$granularity unexpected"
import json, sys, onnx
r = json.load(open(sys.argv[1]))
notes = r["notes"]
assert any(n.startswith("opset upgraded from 9 to " + sys.argv[3]) for n in notes), notes
# Pad and Clip keep their attributes until opset 11, Squeeze/Unsqueeze/Softmax until 13.
rewritten = ["'up'", "'crop'"] + (["'pad'", "'clip'", "'sq'", "'unsq'", "'soft'"] if sys.argv[3] == "13" else [])
for node in rewritten:
    assert any(n.startswith("opset upgrade: ") and node in n for n in notes), (node, notes)
ops = [n.op_type for n in onnx.load(sys.argv[2]).graph.node]
assert "Upsample" not in ops and "Resize" in ops and "QuantizeLinear" in ops, ops
assert sum(t["kind"] == "weight" for t in r["tensors"]) >= 2, r["tensors"]
PY
  # The quantized model (upgraded) against the original float model.
  "$bin/qrun" "$out" --data "$tmp/m/cnn9_in" --reference "$tmp/m/cnn9.onnx" --min-cosine 0.99 --quiet >/dev/null ||
    fail "--$granularity: quantized output far from the opset 9 float model"
done

# The other rewritten ops, from opset 7: the output is valid ONNX and close to
# the float model, and the report names each rewrite.
"$bin/qprofile" "$tmp/m/ops7.onnx" --data "$tmp/m/ops7_in" -o "$tmp/p7.json" --quiet
"$bin/qconvert" "$tmp/m/ops7.onnx" --profile "$tmp/p7.json" -o "$tmp/q7.onnx" --report "$tmp/r7.json" 2>/dev/null ||
  fail "qconvert on the opset 7 model failed"
[ "$(opset_of "$tmp/q7.onnx")" = 13 ] || fail "q7.onnx is not opset 13"
$py "$src/tests/interop/check_model.py" "$tmp/q7.onnx" >/dev/null || fail "q7.onnx is not a valid ONNX model"
$py - "$tmp/r7.json" <<'PY' || fail "the report of the opset 7 model misses a rewrite"
import json, sys
notes = [n for n in json.load(open(sys.argv[1]))["notes"] if n.startswith("opset upgrade: ")]
for op in ("Upsample-10", "BatchNormalization-9", "Softmax-13", "LogSoftmax-13", "Hardmax-13", "Split-13",
           "ReduceSum-13", "Dropout-10", "Dropout-12", "Clip-11", "TopK-10"):
    assert any(op in n for n in notes), (op, notes)
PY
"$bin/qrun" "$tmp/q7.onnx" --data "$tmp/m/ops7_in" --reference "$tmp/m/ops7.onnx" --min-cosine 0.99 --quiet >/dev/null ||
  fail "the quantized opset 7 model is far from its float model"

# Opset 10 is enough for QDQ: when the upgrade to 13 is refused, the weights
# stay per tensor, with one warning saying why, and the model keeps opset 10.
"$bin/qprofile" "$tmp/m/lppool10.onnx" --data "$tmp/m/x4_in" -o "$tmp/p10.json" --quiet
"$bin/qconvert" "$tmp/m/lppool10.onnx" --profile "$tmp/p10.json" -o "$tmp/q10.onnx" --report "$tmp/r10.json" \
  2>"$tmp/err" || fail "opset 10 model with LpPool failed: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^warning: .*per-channel DequantizeLinear needs opset 13, and opset upgrade 10 -> 13: LpPool node 'lppool': no upgrade of LpPool is implemented; weights stay per tensor" "$tmp/err" ||
  fail "no fallback warning: $(cat "$tmp/err")"
[ "$(opset_of "$tmp/q10.onnx")" = 10 ] || fail "the refused upgrade changed the opset"
grep -q "per tensor: per-channel DequantizeLinear needs opset 13" "$tmp/r10.json" || fail "report lacks the per-tensor reason"

o="$tmp/bad.onnx"
expect_refused "opset upgrade 9 -> 11: LpPool node 'lppool': no upgrade of LpPool is implemented" "$o" \
  "$bin/qconvert" "$tmp/m/lppool9.onnx" --dynamic -o "$o"
expect_refused "upgrades start at opset 7, the model has 6" "$o" "$bin/qconvert" "$tmp/m/relu6.onnx" --dynamic -o "$o"
echo "opset upgrade ok"
