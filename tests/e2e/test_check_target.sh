#!/usr/bin/env bash
# qconvert --check-target T MODEL (docs/targets.md): a model made for a target
# passes its check (exit 0); a model made for another target lists each broken
# rule (exit 3, one error line), also as JSON; QOperator models from ONNX
# Runtime's tools are read too; unreadable models and bad target files exit 2
# with one error line.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
"$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/p.json" --quiet
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/x86.onnx" --target ort-x86
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/x86-vnni.onnx" --target ort-x86-vnni

# Each model passes the check of the target it was made for.
for t in x86 x86-vnni; do
  "$bin/qconvert" --check-target "ort-$t" "$tmp/$t.onnx" >"$tmp/ok.out" 2>"$tmp/ok.err" ||
    fail "--check-target ort-$t on its own model exited $?: $(cat "$tmp/ok.out" "$tmp/ok.err")"
  [ ! -s "$tmp/ok.err" ] || fail "a clean check printed on stderr: $(cat "$tmp/ok.err")"
  grep -q "^$tmp/$t.onnx: 0 violations of target ort-$t (checked: nodes [0-9]*, activations [1-9][0-9]*, weights 5, biases 5)$" \
    "$tmp/ok.out" || fail "no clean summary: $(cat "$tmp/ok.out")"
done

# ort-x86 stores weights as uint8 (zero point 128); ort-x86-vnni wants int8:
# one violation per Conv/Gemm weight, exit 3 as a failed gate.
expect_exit 3 "$tmp/x86.onnx: 5 violations of target ort-x86-vnni" "$bin/qconvert" --check-target ort-x86-vnni "$tmp/x86.onnx"
[ "$(grep -c ': quantize.weights.type: found uint8, expected int8$' "$tmp/stdout")" -eq 5 ] ||
  fail "expected 5 weight type violations: $(cat "$tmp/stdout")"
grep -q "^Conv '/features/features.0/Conv', tensor 'features.0.weight_quantized': quantize.weights.type" "$tmp/stdout" ||
  fail "the violation does not name the node and the tensor: $(cat "$tmp/stdout")"
# The same target read from its file.
expect_exit 3 "5 violations of target ort-x86-vnni" "$bin/qconvert" --check-target "$src/targets/ort-x86-vnni.json" "$tmp/x86.onnx"

# --json: one document on stdout, the error line on stderr.
code=0
"$bin/qconvert" --check-target ort-x86-vnni "$tmp/x86.onnx" --json >"$tmp/v.json" 2>"$tmp/v.err" || code=$?
[ "$code" -eq 3 ] || fail "--json exited $code, expected 3"
$py - "$tmp/v.json" "$tmp/x86.onnx" <<'PY' || fail "--json output is not as expected: $(cat "$tmp/v.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["target"] == "ort-x86-vnni" and j["model"] == sys.argv[2], j
v = j["violations"]
assert len(v) == 5 and all(x["rule"] == "quantize.weights.type" for x in v), v
assert set(v[0]) == {"node", "op_type", "tensor", "rule", "found", "expected"}, v[0]
assert (v[0]["op_type"], v[0]["found"], v[0]["expected"]) == ("Conv", "uint8", "int8"), v[0]
assert j["checked"]["weights"] == 5 and j["checked"]["biases"] == 5, j["checked"]
PY

# A user's target file: per-tensor weights and a narrower range, both broken.
cat >"$tmp/strict.json" <<'JSON'
{"name": "strict", "quantize": {"weights": {"type": "int8", "range": [-64, 64], "granularity": "per-tensor"}}}
JSON
expect_exit 3 "violations of target strict" "$bin/qconvert" --check-target "$tmp/strict.json" "$tmp/x86-vnni.onnx"
grep -q ": quantize.weights.granularity: found per-axis along axis 0" "$tmp/stdout" || fail "granularity not reported: $(cat "$tmp/stdout")"
grep -q ": quantize.weights.range: found [0-9]* of [0-9]* values up to 127 from the zero point" "$tmp/stdout" ||
  fail "range not reported: $(cat "$tmp/stdout")"

# A QOperator model (QLinearConv, com.microsoft ops) on a QDQ target: the
# form is a violation, and its weights are checked as in QDQ form.
qop="$src/tests/fixtures/ort-avx2/digits_cnn_int8_qoperator/model.onnx"
expect_exit 3 "violations of target ort-x86" "$bin/qconvert" --check-target ort-x86 "$qop"
grep -q "^QLinearConv '.*': quantize.format: found QLinearConv (QOperator form)" "$tmp/stdout" ||
  fail "QOperator form not reported: $(cat "$tmp/stdout")"

# Bad input: exit 2, one error line naming the file.
printf 'not a model' >"$tmp/corrupt.onnx"
expect_exit 2 "$tmp/corrupt.onnx" "$bin/qconvert" --check-target ort-x86 "$tmp/corrupt.onnx"
printf '{"name": "bad", "quantize": {"weights": {"rnage": [-1, 1]}}}' >"$tmp/bad.json"
expect_exit 2 "$tmp/bad.json: quantize.weights.rnage: unknown field" "$bin/qconvert" --check-target "$tmp/bad.json" "$tmp/x86.onnx"
expect_exit 2 "--check-target 'ort-x68': no built-in target of that name" "$bin/qconvert" --check-target ort-x68 "$tmp/x86.onnx"
expect_exit 2 "File does not exist" "$bin/qconvert" --check-target ort-x86 "$tmp/missing.onnx"
expect_refused "--check-target T takes one MODEL" "$tmp/never.onnx" \
  "$bin/qconvert" --check-target ort-x86 "$tmp/x86.onnx" -o "$tmp/never.onnx"
expect_exit 2 "--json applies to --check-target only" "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/never.onnx" --json
echo "qconvert --check-target: ok"
