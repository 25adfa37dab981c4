#!/usr/bin/env bash
# qrun --threads N gives the same bytes as one thread (kernels split work over
# outputs, never over a sum), and --bench N prints the per-sample time line
# scripts/bench.sh parses. --no-fuse (the plan qprofile runs, for bench.sh's
# qprofile budget) gives the same bytes with more steps: the Relus after the
# convs run on their own. Speed itself is never asserted here.
source "$(dirname "$0")/lib.sh"

"$bin/qrun" "$model" --data "$samples/digits/test" --limit 5 -o "$tmp/t1" --threads 1 --quiet >/dev/null
"$bin/qrun" "$model" --data "$samples/digits/test" --limit 5 -o "$tmp/t3" --threads 3 --quiet >/dev/null
for f in "$tmp"/t1/*.npy; do
  cmp -s "$f" "$tmp/t3/$(basename "$f")" || fail "--threads 3 output differs from --threads 1: $(basename "$f")"
done
[ "$(ls "$tmp/t1" | wc -l)" -eq 5 ] || fail "expected 5 outputs, got $(ls "$tmp/t1")"

"$bin/qrun" "$model" --data "$samples/digits/test" --limit 2 --bench 3 --threads 2 --quiet >"$tmp/bench.txt"
grep -Eq '^bench: [0-9.]+ ms per sample \(median [0-9.]+ ms, min [0-9.]+ ms, cpu [0-9.]+ ms per sample, 6 runs, 2 threads, [0-9]+ steps, isa (portable|avx2|avx512|avx512-vnni|avx512-vnni\+amx|avx512\+avx-vnni|avx-vnni), l2 [0-9]+ KiB\)$' \
  "$tmp/bench.txt" || fail "bench line missing or malformed: $(cat "$tmp/bench.txt")"
"$bin/qrun" "$model" --data "$samples/digits/test" --limit 5 -o "$tmp/nf" --no-fuse --quiet >/dev/null
for f in "$tmp"/t1/*.npy; do
  cmp -s "$f" "$tmp/nf/$(basename "$f")" || fail "--no-fuse output differs from the fused run: $(basename "$f")"
done
steps() { sed -n 's/.* \([0-9]*\) steps, isa .*/\1/p' "$1"; }
"$bin/qrun" "$model" --data "$samples/digits/test" --limit 1 --bench 1 --quiet >"$tmp/fused.txt"
"$bin/qrun" "$model" --data "$samples/digits/test" --limit 1 --bench 1 --no-fuse --quiet >"$tmp/unfused.txt"
[ -n "$(steps "$tmp/fused.txt")" ] && [ "$(steps "$tmp/unfused.txt")" -gt "$(steps "$tmp/fused.txt")" ] ||
  fail "--no-fuse should run more steps: $(cat "$tmp/fused.txt" "$tmp/unfused.txt")"
# With --json the bench line goes to stderr and stdout stays one JSON document.
"$bin/qrun" "$model" --data "$samples/digits/test" --limit 1 --bench 1 --json --quiet >"$tmp/b.json" 2>"$tmp/b.err"
/usr/bin/python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/b.json" || fail "--json stdout is not JSON"
grep -q '^bench: ' "$tmp/b.err" || fail "--json --bench: no bench line on stderr"

expect_exit 2 "--threads" "$bin/qrun" "$model" --data "$samples/digits/test" --threads 0
expect_exit 2 "--bench" "$bin/qrun" "$model" --data "$samples/digits/test" --bench 0
echo "qrun threads/bench ok"
