#!/usr/bin/env bash
# qconvert's choice of quantized ops: --exclude-node, --exclude-op and
# --include-op land in the model and in --report; int16 activations use
# ONNX Runtime's com.microsoft Q/DQ; provenance in metadata_props.
source "$(dirname "$0")/lib.sh"

"$bin/qprofile" "$model" --data "$samples/digits/calib" --limit 20 -o "$tmp/p.json" --quiet
report_has() {  # report_has FILE PYTHON-EXPRESSION-over-r
  /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1" \
    || fail "report $1 fails: $2"
}
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/q.onnx" --report "$tmp/r.json"
report_has "$tmp/r.json" "all(n['quantized'] for n in r['nodes'])"
report_has "$tmp/r.json" "any(t['kind']=='bias' and t['params']['type']=='int32' for t in r['tensors'])"

"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/q1.onnx" --report "$tmp/r1.json" --exclude-op Gemm
report_has "$tmp/r1.json" "all(not n['quantized'] and 'exclude-op' in n['reason'] for n in r['nodes'] if n['op_type']=='Gemm')"
report_has "$tmp/r1.json" "not any(t['tensor'].startswith('classifier') and t['kind']=='weight' for t in r['tensors'])"

"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/q2.onnx" --report "$tmp/r2.json" \
  --exclude-node /features/features.0/Conv
report_has "$tmp/r2.json" "[n['quantized'] for n in r['nodes'] if n['node']=='/features/features.0/Conv']==[False]"
report_has "$tmp/r2.json" "sum(1 for n in r['nodes'] if n['op_type']=='Conv' and n['quantized'])==2"
expect_exit 2 "no node of that name" "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/q3.onnx" --exclude-node nope
[ ! -e "$tmp/q3.onnx" ] || fail "output written for a bad --exclude-node"

# --include-op adds an op the defaults keep float (Relu is default; exclude then include shows precedence).
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/q4.onnx" --report "$tmp/r4.json" --exclude-op Relu --include-op Relu
report_has "$tmp/r4.json" "all(not n['quantized'] for n in r['nodes'] if n['op_type']=='Relu')"

"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/q16.onnx" --activations int16
/usr/bin/python3 - "$tmp/q16.onnx" <<'PY' || fail "int16 model is not in the expected form"
import sys, onnx
m = onnx.load(sys.argv[1])
q = [n for n in m.graph.node if n.op_type == "QuantizeLinear"]
assert q and all(n.domain == "com.microsoft" for n in q), [n.domain for n in q]
assert any(o.domain == "com.microsoft" for o in m.opset_import)
meta = {p.key: p.value for p in m.metadata_props}
assert meta["qtool.activations"] == "int16" and len(meta["qtool.profile_digest"]) == 64, meta
PY
"$bin/qrun" "$tmp/q16.onnx" --data "$samples/digits/test" --limit 10 --reference "$model" --min-snr 30 --quiet >/dev/null
# QOperator: with uint8 asymmetric activations the Relu after each Conv is
# implied by saturation, so Conv lowers to QLinearConv; with symmetric int8
# (zero point 0, qmin -128) it is not, and the pattern stays QDQ.
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/qo.onnx" --format qoperator --report "$tmp/ro.json"
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/qos.onnx" --format qoperator --schema symmetric --activations int8
/usr/bin/python3 - "$tmp/qo.onnx" "$tmp/qos.onnx" <<'PY' || fail "QOperator form unexpected"
import sys, onnx
ops = [n.op_type for n in onnx.load(sys.argv[1]).graph.node]
assert ops.count("QLinearConv") == 3 and "Relu" not in ops[:ops.index("Flatten")], ops
ops = [n.op_type for n in onnx.load(sys.argv[2]).graph.node]
assert "QLinearConv" not in ops and ops.count("Relu") == 4, ops
PY
report_has "$tmp/ro.json" "sum('QLinearConv' in n for n in r['notes'])==3"
echo "convert options ok"
