#!/usr/bin/env bash
# Targets from the command line (docs/targets.md): --list-targets, the
# target's rules filling qconvert's flags and overrides recorded in the report
# and metadata_props, the saturation warning, user-written target files, and
# bad target files refused with exit 2 and one error line, no output written.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
"$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/p.json" --quiet

"$bin/qconvert" --list-targets >"$tmp/list"
for t in ort-x86 ort-x86-vnni ort-x86-avx2 ort-arm64; do grep -q "^$t " "$tmp/list" || fail "--list-targets lacks $t"; done

# Every built-in target file matches the schema.
$py - "$src/targets" <<'PY' || fail "a target file does not match targets/target.schema.json"
import glob, json, os, sys
import jsonschema
d = sys.argv[1]
schema = json.load(open(os.path.join(d, "target.schema.json")))
files = [f for f in glob.glob(os.path.join(d, "*.json")) if not f.endswith("schema.json")]
assert len(files) >= 4, files
for f in files:
    jsonschema.validate(json.load(open(f)), schema)
PY

# Default target ort-x86: uint8 weights (int8 for depthwise), recorded, no warning.
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/d.onnx" --report "$tmp/d.json" 2>"$tmp/d.err"
[ ! -s "$tmp/d.err" ] || fail "default conversion printed: $(cat "$tmp/d.err")"
# A flag overrides the target's field; the override is recorded; on the
# saturating target full int8 weights draw one warning per layer at risk.
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/o.onnx" --report "$tmp/o.json" --target ort-x86-avx2 \
  --weights int8 2>"$tmp/o.err"
grep -q "^warning: target ort-x86-avx2: Conv node '/features/features.0/Conv': [1-9][0-9]* of [0-9]* weight pairs can saturate" \
  "$tmp/o.err" || fail "no saturation warning: $(cat "$tmp/o.err")"
$py - "$tmp/d.onnx" "$tmp/d.json" "$tmp/o.onnx" "$tmp/o.json" <<'PY' || fail "target not recorded as expected"
import json, sys, onnx
def meta(p): return {x.key: x.value for x in onnx.load(p).metadata_props}
def weight_types(p):
    m = onnx.load(p)
    inits = {t.name: t.data_type for t in m.graph.initializer}
    prod = {o: n for n in m.graph.node for o in n.output}
    return {n.name: inits[prod[n.input[1]].input[0]] for n in m.graph.node if n.op_type in ("Conv", "Gemm")}
d, dr, o, orp = sys.argv[1:]
md, mo = meta(d), meta(o)
assert md["qtool.target"] == "ort-x86" and "qtool.target_overrides" not in md, md
assert json.load(open(dr))["target"] == {"name": "ort-x86", "overrides": []}
assert set(weight_types(d).values()) == {onnx.TensorProto.UINT8}, weight_types(d)
assert mo["qtool.target"] == "ort-x86-avx2" and mo["qtool.target_overrides"] == "--weights=int8 (target: uint8)", mo
r = json.load(open(orp))
assert r["target"]["overrides"] == ["--weights=int8 (target: uint8)"], r["target"]
assert any("can saturate int16" in n for n in r["notes"]), r["notes"]
assert set(weight_types(o).values()) == {onnx.TensorProto.INT8}, weight_types(o)
PY

# Int8 activations with zero point 0 after each Relu: ONNX Runtime leaves those
# Convs in float (the Relu is not implied by the Q) and fuses the Gemms with a
# float output, so only the Gemms draw a warning.
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/s8.onnx" --target ort-x86-avx2 --weights int8 \
  --schema symmetric --activations int8 2>"$tmp/s8.err"
grep -q "^warning: target ort-x86-avx2: Gemm node '/classifier/classifier.1/Gemm'" "$tmp/s8.err" &&
  ! grep -q "Conv node" "$tmp/s8.err" || fail "int8 activations after Relus: warnings were: $(cat "$tmp/s8.err")"

# A user-written target file, by path: its rules apply (7-bit weights here).
cat >"$tmp/mine.json" <<'JSON'
{"name": "mine", "quantize": {"weights": {"type": "int8", "range": [-64, 64]}}}
JSON
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/m.onnx" --target "$tmp/mine.json" >/dev/null
$py - "$tmp/m.onnx" <<'PY' || fail "the user target's weight range was not applied"
import sys, onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
meta = {x.key: x.value for x in m.metadata_props}
assert meta["qtool.target"] == "mine", meta
w = [numpy_helper.to_array(t) for t in m.graph.initializer if t.name.endswith("weight_quantized")]
assert w and max(abs(int(a.min())) for a in w) <= 64 and max(int(a.max()) for a in w) == 64, [(a.min(), a.max()) for a in w]
PY
# A pair bound holds in ONNX Runtime's K order (taps major, channels minor for
# Conv; down each column for Gemm and the dynamic MatMulInteger), and
# qconvert's warning stays silent on the saturating target.
cat >"$tmp/pairs.json" <<'JSON'
{"name": "pairs", "quantize": {"weights": {"type": "int8", "pair_bound": 128}},
 "compute": {"dot_product": "u8s8-pairs-saturate-int16", "pair_order": "onnxruntime-mlas"}}
JSON
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/pb.onnx" --target "$tmp/pairs.json" 2>"$tmp/pb.err" >/dev/null
[ ! -s "$tmp/pb.err" ] || fail "pair-bounded model drew a warning: $(cat "$tmp/pb.err")"
"$bin/qconvert" "$model" --dynamic -o "$tmp/pbd.onnx" --target "$tmp/pairs.json" --report "$tmp/pbd.json" >/dev/null
$py - "$tmp/pb.onnx" "$tmp/pbd.onnx" "$tmp/pbd.json" <<'PY' || fail "pair bound not kept"
import json, sys, onnx
import numpy as np
from onnx import numpy_helper
def weights(p, ops):
    m = onnx.load(p)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    prod = {o: n for n in m.graph.node for o in n.output}
    out = []
    for n in m.graph.node:
        if n.op_type in ops:
            src = n.input[1] if n.input[1] in inits else prod[n.input[1]].input[0]
            out.append((n, inits[src]))
    return out
def worst(cols):  # cols: [columns, K] in K order
    k = cols.shape[1] // 2 * 2
    return int((np.abs(cols[:, 0:k:2].astype(int)) + np.abs(cols[:, 1:k:2].astype(int))).max())
for n, w in weights(sys.argv[1], ("Conv", "Gemm")):
    if n.op_type == "Conv":
        cols = w.transpose(0, 2, 3, 1).reshape(w.shape[0], -1)  # taps major, channels minor
    else:
        cols = w if any(a.name == "transB" and a.i == 1 for a in n.attribute) else w.T
    assert w.dtype == np.int8 and worst(cols) <= 128, (n.name, worst(cols))
dyn = weights(sys.argv[2], ("MatMulInteger",))
assert dyn and all(w.dtype == np.int8 and worst(w.T) <= 128 for _, w in dyn)
assert any("pairs bounded" in t["method"] for t in json.load(open(sys.argv[3]))["tensors"])
PY

# qrun takes the same file and target names.
"$bin/qrun" "$tmp/m.onnx" --data "$samples/digits/test" --limit 3 --target "$tmp/mine.json" --quiet | grep -q "^target: mine$" ||
  fail "qrun --target FILE"

# Bad target files and names: exit 2, one error line naming file and field, nothing written.
printf '{"name": "bad", "quantize": {"weights": {"rnage": [-1, 1]}}}' >"$tmp/bad_field.json"
printf '{"name": "bad", "compute": {"dot_product": "fast"}}' >"$tmp/bad_value.json"
printf '{"name": ' >"$tmp/bad_json.json"
out="$tmp/never.onnx"
expect_refused "$tmp/bad_field.json: quantize.weights.rnage: unknown field" "$out" \
  "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$out" --target "$tmp/bad_field.json"
expect_refused "$tmp/bad_value.json: compute.dot_product: 'fast' is not one of" "$out" \
  "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$out" --target "$tmp/bad_value.json"
expect_refused "$tmp/bad_json.json: not valid JSON" "$out" \
  "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$out" --target "$tmp/bad_json.json"
expect_refused "no built-in target of that name" "$out" \
  "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$out" --target ort-x68
expect_refused "$tmp/missing.json" "$out" \
  "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$out" --target "$tmp/missing.json"
expect_refused "$tmp/bad_field.json: quantize.weights.rnage: unknown field" "$tmp/never_dir" \
  "$bin/qrun" "$model" --data "$samples/digits/test" --limit 1 -o "$tmp/never_dir" --target "$tmp/bad_field.json"
echo "targets from the command line: ok"
