#!/usr/bin/env bash
# qconvert --dynamic (int8, and int4 --group-size G) and --weights int4 with a
# profile (static, weight-only): qrun's outputs equal the scheme's maths written
# out in numpy (tests/e2e/dynamic_models.py) on shapes whose K no group divides;
# the report states the weight bytes; bad flag combinations exit 2 with one
# error line and no output.
source "$(dirname "$0")/lib.sh"

py=/usr/bin/python3
models="$src/tests/e2e/dynamic_models.py"
$py "$models" make "$tmp/m"
report_has() {  # report_has FILE PYTHON-EXPRESSION-over-r
  $py -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1" || fail "report $1 fails: $2"
}

for name in linear gemm; do
  "$bin/qconvert" "$tmp/m/$name.onnx" --dynamic -o "$tmp/${name}_int8.onnx" --report "$tmp/${name}_int8.json"
  "$bin/qrun" "$tmp/${name}_int8.onnx" --data "$tmp/m/${name}_in" -o "$tmp/${name}_int8_out" --quiet
  $py "$models" check "$tmp/m/$name.onnx" "$tmp/m/${name}_in" "$tmp/${name}_int8_out" int8 0 || fail "$name int8"
  report_has "$tmp/${name}_int8.json" "r['options']['mode']=='dynamic' and 0 < r['weight_bytes']['after'] < r['weight_bytes']['before']"
  for g in 32 64 128 256; do
    "$bin/qconvert" "$tmp/m/$name.onnx" --dynamic --weights int4 --group-size $g -o "$tmp/${name}_$g.onnx" \
      --report "$tmp/${name}_$g.json"
    "$bin/qrun" "$tmp/${name}_$g.onnx" --data "$tmp/m/${name}_in" -o "$tmp/${name}_${g}_out" --quiet
    $py "$models" check "$tmp/m/$name.onnx" "$tmp/m/${name}_in" "$tmp/${name}_${g}_out" int4 $g || fail "$name int4 G=$g"
    # Blobs are padded to whole groups: K = 70 takes 96 (G=32) to 256 (G=256) codes.
    report_has "$tmp/${name}_$g.json" "r['options']['group_size']==$g and r['weight_bytes']['after'] < (0.3 if $g == 32 else 1) * r['weight_bytes']['before']"
  done
done
# The check itself fails on NaN outputs (a NaN error must not read as 0).
cp -r "$tmp/linear_int8_out" "$tmp/nan_out"
$py -c "import numpy as np, glob
for f in glob.glob('$tmp/nan_out/*.npy'): a = np.load(f); a.flat[0] = np.nan; np.save(f, a)"
$py "$models" check "$tmp/m/linear.onnx" "$tmp/m/linear_in" "$tmp/nan_out" int8 0 >/dev/null &&
  fail "dynamic_models.py check passes NaN outputs"
# The int8 form is plain ONNX (opset 13): the checker accepts it. The int4 form
# is com.microsoft MatMulNBits with accuracy_level 4 and packed uint8 weights.
$py "$src/tests/interop/check_model.py" "$tmp/linear_int8.onnx"
$py - "$tmp/linear_int8.onnx" "$tmp/gemm_32.onnx" <<'PY' || fail "dynamic forms unexpected"
import sys, onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
ops = [n.op_type for n in m.graph.node]
assert ops.count("DynamicQuantizeLinear") == 2 and ops.count("MatMulInteger") == 2 and "MatMul" not in ops, ops
meta = {p.key: p.value for p in m.metadata_props}
# The default target ort-x86 stores the int8 codes as uint8 + 128 (zero point
# 128): ONNX Runtime's U8U8 MatMulInteger is exact on x86 without VNNI too.
assert meta["qtool.mode"] == "dynamic" and meta["qtool.weights"] == "uint8" and meta["qtool.target"] == "ort-x86", meta
inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
for n in m.graph.node:
    if n.op_type == "MatMulInteger":
        assert inits[n.input[1]].dtype.name == "uint8" and int(inits[n.input[3]]) == 128, n
m = onnx.load(sys.argv[2])
[n] = [n for n in m.graph.node]
assert n.op_type == "MatMulNBits" and n.domain == "com.microsoft", n
a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
assert a == {"K": 70, "N": 9, "bits": 4, "block_size": 32, "accuracy_level": 4}, a
inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
assert inits[n.input[1]].shape == (9, 3, 16) and inits[n.input[1]].dtype.name == "uint8"
assert inits[n.input[2]].shape == (27,) and len(n.input) == 6 and inits[n.input[5]].shape == (9,)
PY

# --target ort-x86-vnni keeps int8 weights; both forms compute the same values.
"$bin/qconvert" "$tmp/m/linear.onnx" --dynamic --target ort-x86-vnni -o "$tmp/linear_s8.onnx" >/dev/null
$py - "$tmp/linear_s8.onnx" <<'PY' || fail "ort-x86-vnni dynamic weights are not int8"
import sys, onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
assert all(inits[n.input[1]].dtype.name == "int8" for n in m.graph.node if n.op_type == "MatMulInteger")
PY
"$bin/qrun" "$tmp/linear_int8.onnx" --data "$tmp/m/linear_in" -o "$tmp/u8w" --quiet
"$bin/qrun" "$tmp/linear_s8.onnx" --data "$tmp/m/linear_in" -o "$tmp/s8w" --quiet
for f in "$tmp"/u8w/*.npy; do cmp -s "$f" "$tmp/s8w/$(basename "$f")" || fail "uint8 and int8 weight storage differ: $f"; done

# Conv through ConvInteger on the digits CNN: close to float.
"$bin/qconvert" "$model" --dynamic -o "$tmp/cnn.onnx" --report "$tmp/cnn.json"
report_has "$tmp/cnn.json" "all(n['quantized'] for n in r['nodes'] if n['op_type'] in ('Conv','Gemm'))"
"$bin/qrun" "$tmp/cnn.onnx" --data "$samples/digits/test" --limit 20 --reference "$model" --min-snr 25 --quiet >/dev/null \
  || fail "dynamic int8 digits CNN below 25 dB"

# Static int4 weight-only: MatMul/Gemm as MatMulNBits with float activations
# (accuracy_level 0), the rest from the profile.
"$bin/qprofile" "$tmp/m/linear.onnx" --data "$tmp/m/linear_in" -o "$tmp/p.json" --quiet
"$bin/qconvert" "$tmp/m/linear.onnx" --profile "$tmp/p.json" --weights int4 --group-size 64 -o "$tmp/static4.onnx" \
  --report "$tmp/static4.json"
report_has "$tmp/static4.json" "sum(1 for n in r['nodes'] if n['op_type']=='MatMul' and n['quantized'] and 'weight-only' in n['reason'])==2"
report_has "$tmp/static4.json" "r['weight_bytes']['after'] < 0.3 * r['weight_bytes']['before']"
$py - "$tmp/static4.onnx" <<'PY' || fail "static int4 form unexpected"
import sys, onnx
m = onnx.load(sys.argv[1])
nb = [n for n in m.graph.node if n.op_type == "MatMulNBits"]
assert len(nb) == 2 and all(onnx.helper.get_attribute_value(a) == 0 for n in nb for a in n.attribute if a.name == "accuracy_level")
PY
"$bin/qrun" "$tmp/static4.onnx" --data "$tmp/m/linear_in" --reference "$tmp/m/linear.onnx" --min-snr 12 --quiet >/dev/null \
  || fail "static int4 below 12 dB (random gaussian weights at 4 bits give ~17 dB)"
# Static int4 on the digits CNN: the convolutions keep the target's 8-bit
# weights (ort-x86: uint8, so that nothing saturates on x86 without VNNI).
"$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/cnn_p.json" --quiet
"$bin/qconvert" "$model" --profile "$tmp/cnn_p.json" --weights int4 -o "$tmp/cnn4.onnx" >/dev/null
$py - "$tmp/cnn4.onnx" <<'PY' || fail "static int4: Conv weights do not follow the target"
import sys, onnx
m = onnx.load(sys.argv[1])
inits = {t.name: t for t in m.graph.initializer}
producers = {o: n for n in m.graph.node for o in n.output}
convs = [n for n in m.graph.node if n.op_type == "Conv"]
assert convs
for c in convs:
    dq = producers[c.input[1]]
    assert dq.op_type == "DequantizeLinear" and inits[dq.input[0]].data_type == onnx.TensorProto.UINT8, dq
PY

# Bad input: exit 2, one error line, no output file.
o="$tmp/bad.onnx"
expect_refused "--group-size: group size 48 must be a power of two" "$o" \
  "$bin/qconvert" "$tmp/m/linear.onnx" --dynamic --weights int4 --group-size 48 -o "$o"
expect_refused "--group-size applies to --weights int4 only" "$o" \
  "$bin/qconvert" "$tmp/m/linear.onnx" --dynamic --group-size 32 -o "$o"
expect_refused "takes no --profile" "$o" "$bin/qconvert" "$tmp/m/linear.onnx" --dynamic --profile "$tmp/p.json" -o "$o"
expect_refused "--profile is required" "$o" "$bin/qconvert" "$tmp/m/linear.onnx" -o "$o"
expect_refused "--format does not apply" "$o" "$bin/qconvert" "$tmp/m/linear.onnx" --dynamic --format qoperator -o "$o"
# An opset 10 model is upgraded to DynamicQuantizeLinear's opset 11, with one warning.
"$bin/qconvert" "$tmp/m/old.onnx" --dynamic -o "$tmp/old_int8.onnx" 2>"$tmp/old.err" || fail "opset 10 --dynamic failed"
grep -q "upgraded from opset 10 to 11 for DynamicQuantizeLinear" "$tmp/old.err" || fail "no upgrade warning: $(cat "$tmp/old.err")"
$py "$src/tests/interop/check_model.py" "$tmp/old_int8.onnx"
expect_refused "weights" "$o" "$bin/qconvert" "$tmp/m/linear.onnx" --dynamic --weights int2 -o "$o"
echo "dynamic ok"
