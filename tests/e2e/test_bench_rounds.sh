#!/usr/bin/env bash
# scripts/bench.sh speed with BENCH_ROUNDS: each side's best round, the
# largest RSS, and the median over the rounds of each round's qrun / ORT
# ratio (paired_rounds), per side the median over the rounds of each
# round's 1-thread / 2-thread time and qrun's speed-up over ORT's round by
# round (paired_speedups), from round lines
# written out here; a bad BENCH_ROUNDS is refused with exit code 2 before
# anything runs.
source "$(dirname "$0")/lib.sh"
source <(sed -n '/^awk_median() {/,/^}/p' "$src/scripts/bench.sh")
source <(sed -n '/^paired_rounds() {/,/^}/p' "$src/scripts/bench.sh")
source <(sed -n '/^paired_speedups() {/,/^}/p' "$src/scripts/bench.sh")
source <(sed -n '/^spread_note() {/,/^}/p' "$src/scripts/bench.sh")
declare -F paired_rounds >/dev/null || fail "paired_rounds not found in scripts/bench.sh"
declare -F paired_speedups >/dev/null || fail "paired_speedups not found in scripts/bench.sh"
declare -F spread_note >/dev/null || fail "spread_note not found in scripts/bench.sh"
# Per line: threads, then qrun f32, ORT f32, qrun int8, ORT int8, each "median_ms cpu_ms rss_kib".
cat >"$tmp/rounds" <<'ROUNDS'
1 12 13 110 18 20 210 6 7 55 7 8 85
2 6 7 100 12 13 200 3 4 50 5 6 80
1 10 11 100 20 22 200 5 6 50 8 9 80
1 9 10 100 21 23 200 4 5 50 10 10 80
ROUNDS
# Thread 1, f32: walls 12/18, 10/20, 9/21 (ratios 0.667, 0.5, 0.429: median 0.5, neither the first
# round's nor the bests' 9/18), CPU 13/20, 11/22, 10/23 (median 0.5); int8: walls 6/7, 5/8, 4/10 (0.857,
# 0.625, 0.4: median 0.625 -> "0.62" or "0.63"; bests 4/7), CPU 7/8, 6/9, 5/10 (median 0.667).
got=$(paired_rounds 1 <"$tmp/rounds")
[[ "$got" =~ ^"9.00 0.50 110 18.00 0.50 210 4.00 0.67 55 7.00 0.6"[23]" 85" ]] || fail "paired_rounds 1: '$got'"
got=$(paired_rounds 2 <"$tmp/rounds")
[[ "$got" =~ ^"6.00 0.54 100 12.00 0.50 200 3.00 0.67 50 5.00 0.60 80" ]] || fail "paired_rounds 2: '$got'"
# Rounds in order: thread-1 lines 1, 3, 4 pair with the thread-2 lines of rounds 1, 2, 3 (here one
# thread-2 line and a second one below). qrun f32: 12/6, 10/5, 9/6 -> 2, 2, 1.5: median 2 (best
# rounds: 9/5 = 1.8); ORT f32 18/12, 20/10, 21/14 -> 1.5, 2, 1.5: median 1.5; qrun int8 6/3, 5/2,
# 4/4 -> 2, 2.5, 1: 2; ORT int8 7/5, 8/4, 10/5 -> 1.4, 2, 2: 2.
{ cat "$tmp/rounds"; echo "2 5 6 100 10 11 200 2 3 50 4 5 80"; echo "2 6 7 100 14 15 200 4 5 50 5 6 80"; } >"$tmp/rounds3"
# Then qrun's speed-up over ORT's in each round: f32 2/1.5, 2/2, 1.5/1.5 -> 1.33, 1, 1 (median 1.00,
# range 1.00-1.33); int8 2/1.4, 2.5/2, 1/2 -> 1.43, 1.25, 0.5 (median 1.25, range 0.50-1.43).
got=$(paired_speedups <"$tmp/rounds3")
[ "$got" = "2.00 1.50 2.00 2.00 1.00 1.00 1.33 1.25 0.50 1.43" ] || fail "paired_speedups: '$got'"
# The noise note: int8's rounds above lie 0.93 apart over 3 rounds; 0.2 apart or 7 rounds: none.
got=$(spread_note 1.00 1.33 0.50 1.43 3)
[ "$got" = "; rounds up to 0.93 apart: too noisy to read a speed-up, run BENCH_ROUNDS=7 or more" ] || fail "spread_note: '$got'"
[ -z "$(spread_note 0.95 1.15 0.90 1.10 3)" ] || fail "spread_note warned on rounds 0.2 apart"
[ -z "$(spread_note 1.00 1.33 0.50 1.43 7)" ] || fail "spread_note warned over 7 rounds"
expect_exit 2 "BENCH_ROUNDS must be a positive integer" env BENCH_ROUNDS=0 QTOOL_BIN="$bin" bash "$src/scripts/bench.sh" speed
echo "paired_rounds and paired_speedups sum up rounds as documented, spread_note flags noisy ones; BENCH_ROUNDS=0 refused"
