#!/usr/bin/env bash
# qprofile --bench N times each sample's run with and without profiling and
# prints the line scripts/bench.sh parses (issue #22's qprofile budget). The
# profiled runs really profile: the values per sample it counts are those of
# a profile of the same samples. Speed itself is never asserted here.
source "$(dirname "$0")/lib.sh"

"$bin/qprofile" "$model" --data "$samples/digits/test" --limit 3 --bench 2 --threads 1 --quiet >"$tmp/bench.txt"
num='[0-9]+(\.[0-9]+)?'
grep -Eq "^bench: profiled $num ms per sample \(cpu; wall median $num ms per run\), unprofiled $num ms \(cpu; wall median $num ms\), profiling -?$num ms per sample = -?$num ns per profiled value \([0-9]+ values per sample; median of 6 paired runs; observer alone $num ms = $num ns\), 6 runs, 1 threads, isa (portable|avx2|avx512|avx512-vnni|avx512-vnni\+amx|avx512\+avx-vnni|avx-vnni), l2 [0-9]+ KiB\$" \
  "$tmp/bench.txt" || fail "bench line missing or malformed: $(cat "$tmp/bench.txt")"
values=$(sed -n 's/.*(\([0-9]*\) values per sample;.*/\1/p' "$tmp/bench.txt")

"$bin/qprofile" "$model" --data "$samples/digits/test" --limit 3 -o "$tmp/p.json" --quiet
want=$(/usr/bin/python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
print(sum(t["count"] + t.get("nan", 0) + t.get("inf", 0) for t in p["tensors"].values()) // p["samples"])' "$tmp/p.json")
[ "$values" = "$want" ] || fail "--bench counted $values values per sample, a profile of the same samples $want"
# Under the portable cap too (no scan_block: the two-pass histogram code).
QTOOL_ISA=portable "$bin/qprofile" "$model" --data "$samples/digits/test" --limit 1 --bench 1 --quiet >"$tmp/p.txt"
grep -q "($want values per sample; median of 1 paired runs; .*), 1 runs, .* isa portable, l2 [0-9]* KiB\$" "$tmp/p.txt" || fail "portable bench: $(cat "$tmp/p.txt")"

expect_exit 2 "--bench writes no profile" "$bin/qprofile" "$model" --data "$samples/digits/test" --bench 1 -o "$tmp/x.json"
[ ! -e "$tmp/x.json" ] || fail "--bench with -o wrote a file"
expect_exit 2 "--bench" "$bin/qprofile" "$model" --data "$samples/digits/test" --bench 0
echo "qprofile bench ok"
