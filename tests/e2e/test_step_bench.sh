#!/usr/bin/env bash
# bench/step_bench (scripts/bench.sh steps): a row per observed value of
# qrun's fused plan (the input, then one per step on this single-output
# model), each with its 1- and 2-thread medians, then the sums and the whole
# runs; bad arguments get one error line and exit 2. Times are never asserted.
source "$(dirname "$0")/lib.sh"

# The first sample by the glob's order: `find | sort | head -n 1` under
# pipefail failed the test now and then (sort killed by SIGPIPE).
samples_npy=("$samples"/digits/test/*.npy)
sample=${samples_npy[0]}
[ -f "$sample" ] || fail "no .npy in $samples/digits/test"
"$bin/step_bench" "$model" "$sample" 3 >"$tmp/steps.txt"
"$bin/qrun" "$model" --data "$samples/digits/test" --limit 1 --bench 1 --quiet >"$tmp/bench.txt"
steps=$(sed -n 's/.* \([0-9]*\) steps, isa .*/\1/p' "$tmp/bench.txt")
num='[0-9]+\.[0-9]'
rows=$(grep -Ec "^[^ ].* +$num +$num +-?$num+ +-?$num+$" "$tmp/steps.txt" || true)
# Rows: the values, then "sum of the steps" and "whole run (no observer)".
[ -n "$steps" ] && [ "$rows" -eq $((steps + 1 + 2)) ] ||
  fail "expected $steps steps + the input + 2 totals, got $rows rows: $(cat "$tmp/steps.txt")"
grep -q '^input ' "$tmp/steps.txt" || fail "no input row: $(cat "$tmp/steps.txt")"
grep -Eq '^steps of .*, isa [a-z0-9+-]+, l2 [0-9]+ KiB; medians of 3 rounds, us$' "$tmp/steps.txt" ||
  fail "header missing or malformed: $(head -n 1 "$tmp/steps.txt")"
grep -Eq "^outside the steps \(whole - sum\) +-?$num+ +-?$num+$" "$tmp/steps.txt" ||
  fail "no outside-the-steps line: $(cat "$tmp/steps.txt")"

expect_exit 2 "usage" "$bin/step_bench" "$model"
expect_exit 2 "RUNS" "$bin/step_bench" "$model" "$sample" 1
expect_exit 2 "RUNS" "$bin/step_bench" "$model" "$sample" 3x
expect_exit 2 "$tmp/none.onnx" "$bin/step_bench" "$tmp/none.onnx" "$sample" 2
printf 'not npy' >"$tmp/bad.npy"
expect_exit 2 "$tmp/bad.npy" "$bin/step_bench" "$model" "$tmp/bad.npy" 2
expect_exit 2 "QTOOL_ISA" env QTOOL_ISA=avx9 "$bin/step_bench" "$model" "$sample" 2
echo "step_bench ok"
