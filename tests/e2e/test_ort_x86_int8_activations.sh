#!/usr/bin/env bash
# The default target ort-x86 leaves ONNX Runtime no uint8 x int8 product to
# saturate on x86 without VNNI, also with --activations int8 in QOperator form
# (where converted nodes take int8 weights for the exact S8S8 kernels):
# a QLinearConv / QLinearMatMul reading uint8 (symmetric-uint8's non-negative
# tensors) and every Conv / MatMul / Gemm left in QDQ form (ONNX Runtime
# rewrites its int8 Q -> DQ activations to uint8) get uint8 weights with zero
# point 128, depthwise ones excepted; the report says so; qconvert warns of no
# saturation risk and qrun --target ort-x86-avx2 counts no saturated pair.
# --weights int8, asked for, is kept. (tests/interop/test_ort_avx2_view.sh
# runs the same models in ONNX Runtime shown an AVX2-only CPU.)
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
"$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/p.json" --quiet
for schema in symmetric symmetric-uint8; do
  q="$tmp/$schema"
  "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$q.onnx" --schema "$schema" --activations int8 \
    --format qoperator --report "$q.json" 2>"$q.err"
  if grep -q . "$q.err"; then fail "$schema: qconvert warned: $(cat "$q.err")"; fi
  $py - "$q.onnx" "$q.json" <<'PY' || fail "$schema: weight types"
import json, sys
import onnx
m = onnx.load(sys.argv[1])
init = {t.name: t for t in m.graph.initializer}
U8, S8 = onnx.TensorProto.UINT8, onnx.TensorProto.INT8
producer = {o: n for n in m.graph.node for o in n.output}
checked = 0
for n in m.graph.node:
    if n.op_type in ("QLinearConv", "QLinearMatMul"):
        # The activation's type is its zero point's.
        want = U8 if init[n.input[2]].data_type == U8 else S8
        w = init[n.input[3]]
    elif n.op_type in ("Conv", "MatMul", "Gemm"):
        want, w = U8, init[producer[n.input[1]].input[0]]
    else:
        continue
    assert w.data_type == want, (n.name, w.name, w.data_type, want)
    checked += 1
assert checked == 5, checked
r = json.load(open(sys.argv[2]))
for t in r["tensors"]:
    if t["kind"] == "weight":
        want = "uint8" if init[t["tensor"] + "_quantized"].data_type == U8 else "int8"
        assert t["params"]["type"] == want, t
        assert all(z == (128 if want == "uint8" else 0) for z in t["params"]["zero_point"]), t
assert any("stored as uint8 + 128" in note for note in r["notes"]), r["notes"]
PY
  "$bin/qrun" "$q.onnx" --data "$samples/digits/test" --limit 40 --target ort-x86-avx2 --quiet >"$q.run"
  # (qrun prints the count where some product ran on the saturating arithmetic.)
  if grep -qE "^saturated dot-product pairs \(target ort-x86-avx2\): [1-9]" "$q.run"; then
    fail "$schema: qrun --target ort-x86-avx2 saturated: $(cat "$q.run")"
  fi
done
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/w8.onnx" --schema symmetric --activations int8 \
  --format qoperator --weights int8 2>/dev/null
$py - "$tmp/w8.onnx" <<'PY' || fail "--weights int8 was not kept"
import sys
import onnx
m = onnx.load(sys.argv[1])
w = [t for t in m.graph.initializer if t.name.endswith("weight_quantized")]
assert w and all(t.data_type == onnx.TensorProto.INT8 for t in w), [(t.name, t.data_type) for t in w]
PY
echo "ort-x86 with int8 activations in QOperator form: no uint8 x int8 product left"
