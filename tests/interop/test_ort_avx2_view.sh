#!/usr/bin/env bash
# qrun --target ort-x86-avx2 computes as ONNX Runtime does on an AVX2-only CPU
# on graphs tests/fixtures/ort-avx2 does not hold, against ONNX Runtime shown
# such a CPU by scripts/cpuid_avx2.c (test_cpuid_avx2.sh checks that it then
# computes every fixture bit for bit), or run as it is on a host without VNNI:
#  - int8 symmetric activations in QDQ form (zero point 0): the Relu between
#    each Conv/Gemm and its Q is not implied by the Q, so ONNX Runtime fuses
#    none of them and runs them in float (exact), and fuses only the last Gemm
#    (float output) into a QGemm whose pairs saturate: the same bits, where
#    exact arithmetic differs;
#  - com.microsoft DynamicQuantizeLSTM with int8 W and R (a static conversion
#    for ort-x86-vnni) inside the branches of an If: its prepacked u8 x s8
#    GEMMs saturate on that CPU; within 1e-6 (measured 0), where exact
#    arithmetic differs by more than 1e-3;
#  - the default target's static conversion of the same model (uint8 + 128
#    W and R, as qconvert --dynamic makes them): nothing saturates, ONNX
#    Runtime's outputs there equal exact arithmetic's within 1e-6.
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

# ort_avx2 MODEL DATA OUT: ONNX Runtime's outputs as on an AVX2-only CPU.
if ! grep -qw -e avx512_vnni -e avx_vnni /proc/cpuinfo; then
  ort_avx2() { node "$src/tests/interop/ort_run.js" "$@" >/dev/null; }
  how="ONNX Runtime as it is (no VNNI on this host)"
elif grep -qw cpuid_fault /proc/cpuinfo; then
  cc -O2 -shared -fPIC -o "$tmp/cpuid_avx2.so" "$src/scripts/cpuid_avx2.c" -ldl
  ort_avx2() { LD_PRELOAD="$tmp/cpuid_avx2.so" CPUID_VIEW=avx2 node "$src/tests/interop/ort_run.js" "$@" >/dev/null; }
  how="ONNX Runtime under scripts/cpuid_avx2.c"
else
  echo "this VNNI host cannot show ONNX Runtime an AVX2-only CPU (no cpuid_fault): nothing to compare with"
  exit 0
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

# Int8 symmetric QDQ activations on the digits CNN.
mkdir -p "$tmp/data"
for f in "$src"/samples/digits/test/00[0-4]?.npy; do ln -s "$f" "$tmp/data/"; done
"$bin/qprofile" "$src/samples/digits_cnn.onnx" --data "$src/samples/digits/calib" -o "$tmp/p.json" --quiet
"$bin/qconvert" "$src/samples/digits_cnn.onnx" --profile "$tmp/p.json" -o "$tmp/s8.onnx" --schema symmetric --calibration minmax \
  --activations int8 --format qoperator 2>/dev/null
ort_avx2 "$tmp/s8.onnx" "$tmp/data" "$tmp/s8.ort"
"$bin/qrun" "$tmp/s8.onnx" --data "$tmp/data" -o "$tmp/s8.qrun" --target ort-x86-avx2 --quiet >"$tmp/s8.log"
/usr/bin/python3 "$compare" "$tmp/s8.qrun" "$tmp/s8.ort" --exact >"$tmp/cmp.log" ||
  fail "int8 QDQ activations: qrun --target ort-x86-avx2 differs from $how: $(cat "$tmp/cmp.log")"
# Only the last Gemm saturates (the others stay float in ONNX Runtime).
grep -E '^ +[0-9]+ +[0-9]+ ' "$tmp/s8.log" | awk '$1 > 0 { print $NF }' >"$tmp/s8.saturated"
[ "$(cat "$tmp/s8.saturated")" = /classifier/classifier.3/Gemm ] ||
  fail "int8 QDQ activations: saturated nodes were: $(cat "$tmp/s8.saturated"); $(cat "$tmp/s8.log")"
"$bin/qrun" "$tmp/s8.onnx" --data "$tmp/data" -o "$tmp/s8.exact" --quiet >/dev/null
differ "$tmp/s8.exact" "$tmp/s8.ort" || fail "int8 QDQ activations: exact arithmetic equals $how, which proves nothing"

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
