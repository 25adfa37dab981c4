#!/usr/bin/env bash
# QTOOL_PAIR_REPORT=1 makes qrun list, per Conv / Gemm / MatMul layer, whether
# its packed weight pairs fit VPMADDUBSW's int16 (DESIGN "Kernels"), and
# nothing without it. Weights bounded in ONNX Runtime's K order (target file
# pair_bound) qualify: Gemm and a conv of one input channel in qtool's K order,
# other convs packed in ONNX Runtime's (tap major); the AVX2 run, which takes
# the VPMADDUBSW kernel there, gives the portable path's bits. kernel_bench refuses unknown sections.
source "$(dirname "$0")/lib.sh"
"$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/p.json" --quiet
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/u8.onnx"
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/pb.onnx" --target "$src/scripts/targets/pair-bound.json" 2>/dev/null

QTOOL_PAIR_REPORT=1 "$bin/qrun" "$tmp/u8.onnx" --data "$samples/digits/test" --limit 1 --quiet >/dev/null 2>"$tmp/u8.err"
[ "$(grep -c '^weight pairs: ' "$tmp/u8.err")" -eq 5 ] || fail "expected 5 weight pairs lines: $(cat "$tmp/u8.err")"
grep -Eq '^weight pairs: QLinearConv /features/features.0/Conv: (bounded|not bounded)$' "$tmp/u8.err" ||
  fail "no line for the first conv: $(cat "$tmp/u8.err")"
"$bin/qrun" "$tmp/u8.onnx" --data "$samples/digits/test" --limit 1 --quiet >/dev/null 2>"$tmp/quiet.err"
! grep -q 'weight pairs' "$tmp/quiet.err" || fail "weight pairs lines without QTOOL_PAIR_REPORT"

# Exact int32 arithmetic (--target ort-x86-vnni), so the packed kernels run.
for isa in portable avx2; do
  QTOOL_ISA=$isa QTOOL_PAIR_REPORT=1 "$bin/qrun" "$tmp/pb.onnx" --target ort-x86-vnni --data "$samples/digits/test" \
    --limit 20 -o "$tmp/pb.$isa" --quiet >/dev/null 2>"$tmp/pb.$isa.err"
done
for node in /classifier/classifier.1/Gemm /classifier/classifier.3/Gemm /features/features.0/Conv; do
  grep -qE "^weight pairs: (QGemm|QLinearConv) $node: bounded$" "$tmp/pb.avx2.err" || fail "$node not bounded: $(cat "$tmp/pb.avx2.err")"
done
# 3x3 convs of several channels: bounded in ONNX Runtime's K order, packed in it.
for node in /features/features.2/Conv /features/features.5/Conv; do
  grep -qE "^weight pairs: QLinearConv $node: bounded \(K tap major\)$" "$tmp/pb.avx2.err" ||
    fail "$node not bounded tap major: $(cat "$tmp/pb.avx2.err")"
done
for f in "$tmp"/pb.portable/*.npy; do
  cmp -s "$f" "$tmp/pb.avx2/$(basename "$f")" || fail "AVX2 output differs from portable: $(basename "$f")"
done
[ "$(ls "$tmp/pb.avx2" | wc -l)" -eq 20 ] || fail "expected 20 outputs"

expect_exit 2 "unknown section 'int9'" "$bin/kernel_bench" int9
expect_exit 2 "name a section" "$bin/kernel_bench"
expect_exit 2 "int8-amx needs AMX-INT8" env QTOOL_ISA=vnni "$bin/kernel_bench" int8-amx
expect_exit 2 "float-avx512 needs the avx512 kernels" env QTOOL_ISA=avx2 "$bin/kernel_bench" float-avx512
echo "pair report ok"
