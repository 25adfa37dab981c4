#!/usr/bin/env bash
# qrun --target ort-x86-avx2 computes as ONNX Runtime does on an AVX2-only CPU
# on graphs tests/fixtures/ort-avx2 does not hold, against ONNX Runtime shown
# such a CPU by scripts/cpuid_avx2.c (tests/interop/avx2_view.sh; on hosts
# without cpuid_fault a patched copy of its library; test_cpuid_avx2.sh checks
# that it then computes every fixture bit for bit), or run as it is on a host
# without VNNI or on an emulated AVX2-only CPU (scripts/test_avx2_emulated.sh):
#  - int8 symmetric activations in QDQ form (zero point 0) with int8 weights
#    (a model made for ort-x86-vnni): the Relu between each Conv/Gemm and its
#    Q is not implied by the Q, so ONNX Runtime leaves the Convs in float
#    (exact) and fuses the Gemms into QGemms with a float output, whose pairs
#    saturate where the activation comes from a Q -> DQ pair (ONNX Runtime
#    rewrites only such int8 pairs to uint8; in QOperator form the first Gemm
#    reads Flatten's int8 output and multiplies S8S8, exact): the same bits,
#    where exact arithmetic differs;
#  - com.microsoft DynamicQuantizeLSTM with int8 W and R (a static conversion
#    for ort-x86-vnni) inside the branches of an If: its prepacked u8 x s8
#    GEMMs saturate on that CPU; within 1e-6 (measured 0), where exact
#    arithmetic differs by more than 1e-3;
#  - the default target's int8 activations in QOperator form: the nodes ONNX
#    Runtime still multiplies as uint8 keep uint8 weights, nothing saturates,
#    its outputs equal exact arithmetic's bits;
#  - the default target's static conversion of the LSTM model (uint8 + 128
#    W and R, as qconvert --dynamic makes them): nothing saturates, ONNX
#    Runtime's outputs there equal exact arithmetic's within 1e-6.
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

# ort_avx2 MODEL DATA OUT: ONNX Runtime's outputs as on an AVX2-only CPU.
# QTOOL_AVX2_EMULATED=1: node on PATH runs on an emulated AVX2-only CPU
# (scripts/test_avx2_emulated.sh), ONNX Runtime as it is there.
if [ "${QTOOL_AVX2_EMULATED:-0}" = 1 ] || ! grep -qw -e avx512_vnni -e avx_vnni /proc/cpuinfo; then
  ort_avx2() { node "$src/tests/interop/ort_run.js" "$@" >/dev/null; }
  how="ONNX Runtime as it is (no VNNI on this host)"
  [ "${QTOOL_AVX2_EMULATED:-0}" != 1 ] || how="ONNX Runtime on the emulated AVX2-only CPU"
else
  source "$src/tests/interop/avx2_view.sh"
  mode=$(view_modes | cut -d' ' -f1)
  ort_avx2() { CPUID_VIEW=avx2 in_view "$mode" node "$src/tests/interop/ort_run.js" "$@" >/dev/null; }
  how="ONNX Runtime in the $mode AVX2 view (scripts/cpuid_avx2.c)"
fi
maxdiff() { /usr/bin/python3 "$src/tests/interop/make_lstm_models.py" maxdiff "$@"; }
prefix() { awk -v p="$1" '{ print p $0 }'; }
compare="$src/tests/interop/compare_outputs.py"
# differ A B: 0 when the outputs' bits differ, 1 when equal, else fails.
differ() {
  local code=0
  /usr/bin/python3 "$compare" "$1" "$2" --exact >"$tmp/cmp.log" 2>&1 || code=$?
  [ "$code" -le 1 ] || fail "compare_outputs.py $1 $2 exited $code: $(cat "$tmp/cmp.log")"
  [ "$code" -eq 1 ]
}

# Int8 symmetric QDQ activations and int8 weights (ort-x86-vnni) on the digits CNN.
mkdir -p "$tmp/data"
for f in "$src"/samples/digits/test/00[0-4]?.npy; do ln -s "$f" "$tmp/data/"; done
"$bin/qprofile" "$src/samples/digits_cnn.onnx" --data "$src/samples/digits/calib" -o "$tmp/p.json" --quiet
for format in qdq qoperator; do
  q="$tmp/s8_$format"
  "$bin/qconvert" "$src/samples/digits_cnn.onnx" --profile "$tmp/p.json" -o "$q.onnx" --target ort-x86-vnni \
    --schema symmetric --calibration minmax --activations int8 --format "$format"
  ort_avx2 "$q.onnx" "$tmp/data" "$q.ort"
  "$bin/qrun" "$q.onnx" --data "$tmp/data" -o "$q.qrun" --target ort-x86-avx2 --quiet >"$q.log"
  /usr/bin/python3 "$compare" "$q.qrun" "$q.ort" --exact >"$tmp/cmp.log" ||
    fail "int8 $format activations: qrun --target ort-x86-avx2 differs from $how: $(cat "$tmp/cmp.log")"
  # Gemms saturate (fused with a float output before their Relu) where their
  # activation comes from a Q -> DQ pair; no Conv does (left in float, or
  # S8S8 QLinearConv in QOperator form).
  { grep -E '^ +[0-9]+ +[0-9]+ ' "$q.log" || true; } | awk '$1 > 0 { print $NF }' | sort | tr '\n' ' ' >"$q.saturated"
  want="/classifier/classifier.1/Gemm /classifier/classifier.3/Gemm "
  # QOperator form: the first Gemm reads Flatten's int8 output, no Q -> DQ pair.
  [ "$format" = qdq ] || want="/classifier/classifier.3/Gemm "
  [ "$(cat "$q.saturated")" = "$want" ] ||
    fail "int8 $format activations: saturated nodes were: $(cat "$q.saturated"), not $want; $(cat "$q.log")"
  "$bin/qrun" "$q.onnx" --data "$tmp/data" -o "$q.exact" --quiet >/dev/null
  differ "$q.exact" "$q.ort" || fail "int8 $format activations: exact arithmetic equals $how, which proves nothing"
done

# The default target with int8 activations in QOperator form (symmetric:
# int8 tensors; symmetric-uint8: uint8 for the non-negative ones): every node
# ONNX Runtime multiplies as uint8 (uint8 tensors, int8 ones it rewrites in
# the QDQ nodes left) has uint8 weights, so nothing saturates there and
# exact arithmetic gives its bits; qconvert warns of nothing.
for schema in symmetric symmetric-uint8; do
  q="$tmp/qop_$schema"
  "$bin/qconvert" "$src/samples/digits_cnn.onnx" --profile "$tmp/p.json" -o "$q.onnx" --schema "$schema" \
    --calibration minmax --activations int8 --format qoperator 2>"$q.err"
  if grep -q . "$q.err"; then fail "$schema int8 QOperator: qconvert warned: $(cat "$q.err")"; fi
  ort_avx2 "$q.onnx" "$tmp/data" "$q.ort"
  "$bin/qrun" "$q.onnx" --data "$tmp/data" -o "$q.exact" --quiet >/dev/null
  /usr/bin/python3 "$compare" "$q.exact" "$q.ort" --exact >"$tmp/cmp.log" ||
    fail "$schema int8 QOperator (default target): $how differs from exact arithmetic: $(cat "$tmp/cmp.log")"
done

# DynamicQuantizeLSTM inside If branches, int8 W and R, then the default target's uint8 ones.
/usr/bin/python3 "$src/tests/e2e/subgraph_models.py" make "$tmp/m"
"$bin/qprofile" "$tmp/m/silero.onnx" --data "$tmp/m/in" -o "$tmp/silero.json" --quiet
for target in ort-x86-vnni ort-x86; do
  q="$tmp/silero_$target"
  "$bin/qconvert" "$tmp/m/silero.onnx" --profile "$tmp/silero.json" -o "$q.onnx" --target "$target"
  /usr/bin/python3 - "$q.onnx" "$target" <<'EOF'
import sys
import onnx
m, target = onnx.load(sys.argv[1]), sys.argv[2]
want = onnx.TensorProto.UINT8 if target == "ort-x86" else onnx.TensorProto.INT8
for a in [a for n in m.graph.node if n.op_type == "If" for a in n.attribute]:
    lstm = [n for n in a.g.node if n.op_type == "DynamicQuantizeLSTM"]
    assert len(lstm) == 1, (a.name, [n.op_type for n in a.g.node])
    types = {t.name: t.data_type for t in a.g.initializer}
    for w in lstm[0].input[1:3]:
        assert types[w] == want, (target, w, types[w])
EOF
  ort_avx2 "$q.onnx" "$tmp/m/in" "$q.ort"
  "$bin/qrun" "$q.onnx" --data "$tmp/m/in" -o "$q.exact" --quiet >/dev/null
  if [ "$target" = ort-x86-vnni ]; then
    "$bin/qrun" "$q.onnx" --data "$tmp/m/in" -o "$q.qrun" --target ort-x86-avx2 --quiet >/dev/null
    maxdiff "$q.qrun" "$q.ort" 1e-6 | prefix "int8 LSTM weights, qrun --target ort-x86-avx2 vs $how: "
    if maxdiff "$q.exact" "$q.ort" 1e-3 >/dev/null; then
      fail "int8 LSTM weights: exact arithmetic within 1e-3 of $how, which proves nothing"
    fi
  else
    maxdiff "$q.exact" "$q.ort" 1e-6 | prefix "default target (uint8 LSTM weights), exact arithmetic vs $how: "
  fi
done
echo "qrun --target ort-x86-avx2 matched $how on int8 QDQ activations and on int8 DynamicQuantizeLSTM"
