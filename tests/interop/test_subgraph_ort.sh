#!/usr/bin/env bash
# Control-flow bodies (DESIGN "Subgraphs"), on a Silero-VAD-style model whose
# whole network (Conv + Relu + LSTM) sits in the two branches of an If
# (tests/e2e/subgraph_models.py; the samples take both branches).
# Static: qprofile's scoped entries quantize the branches' Convs in QDQ form,
# their LSTMs become DynamicQuantizeLSTM; >= 90% of the float weight bytes
# (measured 98.5%: the LSTMs' B stays float, as in ONNX Runtime's quantizer) are
# int8; ONNX Runtime runs it and qrun, which lowers the
# branches' QDQ Convs to its integer QLinearConv, matches it within the same
# 1e-6 as below (measured 0: bit-exact).
# qconvert --dynamic rewrites the branches (ConvInteger, com.microsoft
# DynamicQuantizeLSTM), outer-scope x stays a free name, the report's weight
# coverage counts the branches' weights (>= 90%, measured 100%); ONNX Runtime
# runs the result, and qrun (computing as this host's ONNX Runtime) matches it
# within 1e-6 absolute: outputs are LSTM hidden states in (-1, 1); the int32
# products are exact in both runtimes, which differ only in float rounding of
# the rescale, gates and activations (measured 2.4e-7, a couple of float32
# ulps; one activation code rounded differently would show as ~1e-3).
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"
models() { /usr/bin/python3 "$src/tests/e2e/subgraph_models.py" "$@"; }

models make "$tmp/m"
node "$src/tests/interop/ort_run.js" "$tmp/m/silero.onnx" "$tmp/m/in" "$tmp/float" >/dev/null

"$bin/qprofile" "$tmp/m/silero.onnx" --data "$tmp/m/in" -o "$tmp/profile.json" --quiet
"$bin/qconvert" "$tmp/m/silero.onnx" --profile "$tmp/profile.json" -o "$tmp/static.onnx" --report "$tmp/static.json" \
  2>"$tmp/static.err"
if grep -q . "$tmp/static.err"; then echo "FAIL: qconvert (static) warned:"; cat "$tmp/static.err"; exit 1; fi
models check_static "$tmp/m/silero.onnx" "$tmp/static.onnx"
/usr/bin/python3 - "$tmp/static.json" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
assert report["weight_coverage"]["fraction"] >= 0.9, report["weight_coverage"]  # the branches' weights count
nodes = {n["node"]: n for n in report["nodes"]}
for b in ("then", "else"):
    for name in ("conv1", "conv2", "lstm"):
        d = nodes["branches/%s_branch/%s_%s" % (b, b, name)]
        assert d["quantized"], d
    assert "DynamicQuantizeLSTM" in nodes["branches/%s_branch/%s_lstm" % (b, b)]["reason"]
assert not any(n["op_type"] == "DynamicQuantizeLSTM" for n in nodes.values()), sorted(nodes)
EOF
# qrun lowers the branches' QDQ Convs to its integer QLinearConv kernels.
"$bin/qrun" "$tmp/static.onnx" --explain >"$tmp/explain.txt"
for b in then else; do
  grep -q "branches/${b}_branch: Conv node '${b}_conv2' -> QLinearConv" "$tmp/explain.txt" ||
    { echo "FAIL: $b branch not lowered:"; cat "$tmp/explain.txt"; exit 1; }
done
both "$tmp/static.onnx" "$tmp/m/in" static
/usr/bin/python3 "$src/tests/interop/make_lstm_models.py" maxdiff "$tmp/qrun_static" "$tmp/ort_static" 1e-6
snr "static ORT vs float" "$tmp/float" "$tmp/ort_static" 25

"$bin/qconvert" "$tmp/m/silero.onnx" --dynamic -o "$tmp/dyn.onnx" --report "$tmp/dyn.json" 2>"$tmp/dyn.err"
if grep -q . "$tmp/dyn.err"; then echo "FAIL: qconvert --dynamic warned:"; cat "$tmp/dyn.err"; exit 1; fi
models check_dynamic "$tmp/dyn.onnx" "$tmp/dyn.json"
both "$tmp/dyn.onnx" "$tmp/m/in" dyn
/usr/bin/python3 "$src/tests/interop/make_lstm_models.py" maxdiff "$tmp/qrun_dyn" "$tmp/ort_dyn" 1e-6
snr "dynamic ORT vs float" "$tmp/float" "$tmp/ort_dyn" 25
snr "dynamic qrun vs float" "$tmp/float" "$tmp/qrun_dyn" 25
# A Loop whose body holds a MatMul (its weight a body initializer) and reads x
# from outside, and a Scan over x's rows whose body holds two MatMuls (state
# h @ W and row x_t @ U): static (profile entries loop/body/*, scan/body/*,
# every iteration) and dynamic; qrun lowers the bodies' MatMuls and matches
# ONNX Runtime within 1e-6 (measured 0 for all four).
for cf in loop scan; do
  "$bin/qprofile" "$tmp/m/${cf}_mm.onnx" --data "$tmp/m/${cf}_mm_in" -o "$tmp/$cf.json" --quiet
  "$bin/qconvert" "$tmp/m/${cf}_mm.onnx" --profile "$tmp/$cf.json" -o "$tmp/${cf}_static.onnx"
  "$bin/qconvert" "$tmp/m/${cf}_mm.onnx" --dynamic -o "$tmp/${cf}_dyn.onnx"
  node "$src/tests/interop/ort_run.js" "$tmp/m/${cf}_mm.onnx" "$tmp/m/${cf}_mm_in" "$tmp/${cf}_float" >/dev/null
  for mode in static dyn; do
    both "$tmp/${cf}_$mode.onnx" "$tmp/m/${cf}_mm_in" "${cf}_$mode"
    /usr/bin/python3 "$src/tests/interop/make_lstm_models.py" maxdiff "$tmp/qrun_${cf}_$mode" "$tmp/ort_${cf}_$mode" 1e-6
    snr "$cf $mode ORT vs float" "$tmp/${cf}_float" "$tmp/ort_${cf}_$mode" 30
  done
done
"$bin/qrun" "$tmp/loop_static.onnx" --explain | grep -q "loop/body: MatMul node 'mm' -> QLinearMatMul" ||
  { echo "FAIL: Loop body not lowered"; exit 1; }
"$bin/qrun" "$tmp/scan_static.onnx" --explain >"$tmp/scan_explain.txt"
for mm in mm_h mm_x; do
  grep -q "scan/body: MatMul node '$mm' -> QLinearMatMul" "$tmp/scan_explain.txt" ||
    { echo "FAIL: Scan body's $mm not lowered:"; cat "$tmp/scan_explain.txt"; exit 1; }
done
/usr/bin/python3 - "$tmp/scan.json" <<'EOF2'
import json, sys
t = json.load(open(sys.argv[1]))["tensors"]
assert t["scan/body/hw"]["count"] == 4 * 6 * 32, t["scan/body/hw"]  # 4 samples x 6 rows x 32 values
EOF2
echo "subgraph interop ok"
