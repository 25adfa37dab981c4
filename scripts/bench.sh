#!/usr/bin/env bash
# Benchmarks of qtool. Each section is independent; run all, or name sections:
#   scripts/bench.sh [qprofile-memory] [speed] [qprofile] [targets] [kernels] [steps] [scale] [gptq]
# Builds are not triggered here: run scripts/setup.sh first.
# speed needs the zoo (scripts/make_zoo.sh) and ONNX Runtime (scripts/setup_ort.sh);
# BENCH_MODELS (default "resnet18 mobilenet_v2"; any model directory of
# ZOO_DIR, e.g. scripts/make_softmax_bench.py's softmax_attn), BENCH_THREADS ("1 2"),
# BENCH_RUNS (timed runs per sample, 3) and BENCH_SAMPLES (4) tune it,
# BENCH_ROUNDS (1) repeats speed's runs of each model that many times, qrun and
# ORT alternating, and reports each side's best round and the median of the
# rounds' ratios (on a host whose speed moves between runs, the ratio of two
# adjacent runs moves much less than either run), and so each side's
# 2-thread speed-up: the median of the rounds' own, and qrun's over ONNX
# Runtime's round by round (paired_speedups);
# BENCH_QPROFILE=0 leaves out qprofile's timing (the longest part);
# QTOOL_ISA=portable|avx2|avx512|vnni|amx runs qrun's kernels capped at that ISA
# (libquant/kernels/cpu.h), e.g. the AVX2 paths on an AVX-512 host;
# BENCH_CPUID=avx2 runs every process of every section (qrun, qprofile, ONNX
# Runtime, PyTorch) with AVX-512, AVX-VNNI and AMX hidden from CPUID
# (scripts/cpuid_avx2.c, preloaded), so that an AVX-512 host measures both
# sides on the kernels each picks on an AVX2-only CPU; BENCH_CPUID=avx512
# hides AMX alone (CPUID_VIEW=avx512 of the same library): on a host with
# AMX, both sides' int8 convolutions then run on VPDPBUSD. Where CPUID cannot
# fault (no cpuid_fault: AMD hosts, most VMs) the view runs on copies of
# qtool's programs and of ONNX Runtime's library with their CPUIDs patched
# (scripts/cpuid_patch.py, CPUID_PATCHED=1); PyTorch, unpatched, is then held
# to the same kernels by its own switches (ATEN_CPU_CAPABILITY,
# ONEDNN_MAX_CPU_ISA, OPENBLAS_CORETYPE).
set -euo pipefail
export LC_ALL=C  # "." decimal points in EPOCHREALTIME and printf, which awk reads
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${QTOOL_BIN:-$repo/build}
py=/usr/bin/python3
work=$(mktemp -d "${TMPDIR:-/tmp}/qtool_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

case ${BENCH_CPUID:-} in
  "") ;;
  avx2 | avx512)
    cc -O2 -shared -fPIC -o "$work/cpuid_avx2.so" "$repo/scripts/cpuid_avx2.c" -ldl
    export CPUID_VIEW=$BENCH_CPUID
    if ! grep -qw cpuid_fault /proc/cpuinfo; then
      mkdir -p "$work/bin"
      for p in qrun qprofile qconvert kernel_bench step_bench; do
        [ ! -x "$bin/$p" ] || $py "$repo/scripts/cpuid_patch.py" "$bin/$p" "$work/bin/$p" >/dev/null || exit 2
      done
      bin=$work/bin
      # ONNX Runtime patched where it is installed (the kernels section runs without it).
      if "$repo/scripts/ort_lib_patched.sh" "$work/ort" 2>/dev/null; then
        export LD_LIBRARY_PATH="$work/ort${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      fi
      export CPUID_PATCHED=1
      if [ "$BENCH_CPUID" = avx2 ]; then
        export ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell
      else
        export ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16
      fi
    fi
    # The library stops a process where CPUID cannot be hidden: stop here then.
    env LD_PRELOAD="$work/cpuid_avx2.so" true || exit 2
    export LD_PRELOAD="$work/cpuid_avx2.so"
    ;;
  *) echo "error: BENCH_CPUID must be avx2, avx512 or unset, not '$BENCH_CPUID'" >&2; exit 2 ;;
esac

# The host's vector ISA as /proc/cpuinfo names it, and what the processes see of it.
host_isa() {
  grep -o -E 'avx512[a-z_]*|avx_vnni|avx2' /proc/cpuinfo | sort -u | tr '\n' ' '
  # The L2 qtool's blocking is worked out for (kernels/cpu.h): the OS's, or QTOOL_L2_KB.
  local l2=${QTOOL_L2_KB:-$(( $(getconf LEVEL2_CACHE_SIZE 2>/dev/null || echo 0) / 1024 ))}
  [ "$l2" = 0 ] || echo -n "(L2 $l2 KiB${QTOOL_L2_KB:+, QTOOL_L2_KB}) "
  case ${BENCH_CPUID:-} in
    avx2) echo -n "(every process sees avx2 only: BENCH_CPUID=avx2, scripts/cpuid_avx2.c${CPUID_PATCHED:+ on patched copies of qtool and ONNX Runtime})" ;;
    avx512) echo -n "(every process sees no AMX: BENCH_CPUID=avx512, scripts/cpuid_avx2.c${CPUID_PATCHED:+ on patched copies of qtool and ONNX Runtime})" ;;
  esac
  echo
}

# ---------------------------------------------------------------------------
# qprofile memory: peak RSS must stay flat in the number of samples (DESIGN
# "Profiling memory stays flat"): histograms are updated per sample and never
# keep activations. Profiles 10 and 1000 samples of the digits model and fails
# when the larger run's peak RSS exceeds the smaller's by more than 10%.
# ---------------------------------------------------------------------------
bench_qprofile_memory() {
  echo "== qprofile memory (peak RSS, --limit 10 vs 1000)"
  if [ ! -x /usr/bin/time ]; then
    echo "installing GNU time (/usr/bin/time)" >&2
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq time >/dev/null
  fi
  local data="$work/digits1000"
  mkdir -p "$data"
  # 1000 samples: the 200 calibration digits, each also shifted and scaled, so
  # that later samples keep widening some ranges (the histograms must grow).
  $py - "$repo/samples/digits/calib" "$data" <<'PY'
import glob, os, sys
import numpy as np
src = sorted(glob.glob(os.path.join(sys.argv[1], "*.npy")))
for i in range(1000):
    x = np.load(src[i % len(src)])
    k = i // len(src)
    np.save(os.path.join(sys.argv[2], f"{i:04d}.npy"), (x * (1 + 0.25 * k) + 0.1 * k).astype(np.float32))
PY
  local rss10 rss1000
  rss10=$(/usr/bin/time -f %M "$bin/qprofile" "$repo/samples/digits_cnn.onnx" --data "$data" --limit 10 \
    -o "$work/p10.json" --quiet 2>&1 >/dev/null | tail -n 1)
  rss1000=$(/usr/bin/time -f %M "$bin/qprofile" "$repo/samples/digits_cnn.onnx" --data "$data" --limit 1000 \
    -o "$work/p1000.json" --quiet 2>&1 >/dev/null | tail -n 1)
  local ratio
  ratio=$(awk -v a="$rss10" -v b="$rss1000" 'BEGIN { printf "%.3f", b / a }')
  echo "peak RSS: 10 samples ${rss10} KiB, 1000 samples ${rss1000} KiB, ratio ${ratio}"
  awk -v r="$ratio" 'BEGIN { exit !(r <= 1.10) }' || { echo "FAIL: peak RSS grew more than 10% with 100x the samples" >&2; return 1; }
}

# ---------------------------------------------------------------------------
# speed: qrun vs ONNX Runtime (CPU provider, intraOpNumThreads 1, then 2) on
# the zoo models, per-sample time of the float model and of the same model
# quantized by qconvert (default settings), qprofile's per-sample time vs ORT
# float inference, and the peak RSS of each process. The runs of one model
# and thread count are interleaved (qrun, ORT, qrun, ORT) so that load from
# other jobs on the machine hits both alike; compare the ratios, not the
# absolute times. Times are medians of BENCH_RUNS runs per sample after one
# warm-up run (qrun --bench, scripts/ort_bench.js); "cpu" ratios compare the
# process CPU time per sample (all threads), which other jobs on a shared
# machine disturb much less than wall-clock time. ORT's peak RSS includes the
# Node.js runtime (~50 MiB). Single-thread runs (qrun, ORT and qprofile) are
# pinned to one CPU, the first this script may use (BENCH_PIN=0: not
# pinned): on a shared host one core can run 20-60% slower than the other
# for a while, and unpinned processes landing on either made single runs
# bimodal (mobilenet_v2 int8: 2.4 or 3.9 ms per sample).
# ---------------------------------------------------------------------------

# Runs a command under GNU time; prints "MEDIAN_MS CPU_MS RSS_KIB" from its
# "... ms per sample (median M ms, min m ms, cpu C ms per sample ..." line.
timed_median() {
  local out rss
  out=$(/usr/bin/time -f %M -o "$work/rss" "$@") || { echo "error: failed: $*" >&2; return 1; }
  rss=$(tail -n 1 "$work/rss")
  echo "$out" | sed -n 's/.*ms per sample (median \([0-9.]*\) ms, .*cpu \([0-9.]*\) ms per sample.*/\1 \2/p' | head -n 1 |
    tr '\n' ' '
  echo "$rss"
}

# The command prefix for a run on $1 threads: taskset to one CPU for 1.
pin_for() {
  if [ "$1" = 1 ] && [ "${BENCH_PIN:-1}" != 0 ] && command -v taskset >/dev/null; then
    echo "taskset -c $(taskset -pc $$ | sed 's/.*: //; s/[,-].*//')"
  fi
}

# link_samples DIR W SAMPLES RUNS: W/data links DIR's first SAMPLES inputs,
# W/data_rep each of them RUNS + 1 times (qprofile's timing set).
link_samples() {
  local n=0 f r
  mkdir -p "$2/data" "$2/data_rep"
  for f in "$1"/inputs/*.npy; do
    [ $n -lt "$3" ] || break
    ln -s "$f" "$2/data/$(basename "$f")"
    for ((r = 0; r < $4 + 1; r++)); do ln -s "$f" "$2/data_rep/r${r}_$(basename "$f")"; done
    n=$((n + 1))
  done
}

# default_int8 DIR W: W/int8.onnx, qconvert's default output for
# DIR/model.onnx, calibrated on W/data (its profile in W/profile.json).
default_int8() {
  "$bin/qprofile" "$1/model.onnx" --data "$2/data" -o "$2/profile.json" --quiet
  "$bin/qconvert" "$1/model.onnx" --profile "$2/profile.json" -o "$2/int8.onnx" >/dev/null
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }

# qprofile, 1 thread: per sample, the time one more sample adds (two
# processes, over a quarter of the samples in DATA_REP and over all of them:
# the difference of their wall times over the difference of their sample
# counts), as ORT's per-sample time leaves out creating its session; the
# fixed cost of a process (model loading, planning, writing the profile) is
# printed beside it, and the all-in time per sample too. The pair runs three
# times and the median per-sample time counts: one pair's difference swung by
# 20% between bench runs. Prints "PER_MS FIXED_MS ALL_IN_MS RSS_KIB COUNT
# SMALL CPU_PER_MS", the last the per-sample time from the two processes' CPU
# times (user + system) in place of their wall times, the median pair's; the
# profile of all samples is left in OUT/profile_rep.json.
# Runs CMD...; writes "CPU_SECONDS MAXRSS_KIB" of it (user + system, from
# wait4's rusage: microseconds, where GNU time's %U prints hundredths) to FILE.
cpu_rss() {
  local file=$1
  shift
  $py - "$file" "$@" <<'PY'
import resource, subprocess, sys
before = resource.getrusage(resource.RUSAGE_CHILDREN)
code = subprocess.call(sys.argv[2:])
after = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
with open(sys.argv[1], "w") as f:
    f.write(f"{cpu:.6f} {after.ru_maxrss}\n")
sys.exit(code)
PY
}

qprofile_per_sample() {
  local model=$1 data=$2 out=$3
  local count small wall_small wall rss cpu_small cpu pin pair pers=()
  count=$(find "$data" -name '*.npy' | wc -l)
  small=$((count / 4 > 0 ? count / 4 : 1))
  pin=$(pin_for 1)
  # Wall times from EPOCHREALTIME (microseconds; GNU time's %e counts
  # hundredths, which put the per-sample time on steps of 0.56 ms).
  local t0 t1
  for pair in 1 2 3; do
    t0=$EPOCHREALTIME
    cpu_rss "$work/qp_cpu" $pin "$bin/qprofile" "$model" --data "$data" --threads 1 \
      --limit "$small" -o "$out/profile_small.json" --quiet
    t1=$EPOCHREALTIME
    wall_small=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
    read -r cpu_small _ <"$work/qp_cpu"
    t0=$EPOCHREALTIME
    cpu_rss "$work/qp_rss" $pin "$bin/qprofile" "$model" --data "$data" --threads 1 \
      -o "$out/profile_rep.json" --quiet
    t1=$EPOCHREALTIME
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
    read -r cpu rss <"$work/qp_rss"
    pers+=("$(awk -v a="$wall_small" -v b="$wall" -v m="$small" -v n="$count" -v ca="$cpu_small" -v cb="$cpu" \
      'BEGIN { printf "%.2f %.0f %.2f %.2f", 1000 * (b - a) / (n - m), 1000 * a - 1000 * (b - a) / (n - m) * m, 1000 * b / n, 1000 * (cb - ca) / (n - m) }')")
  done
  local per startup all_in cpu_per
  read -r per startup all_in cpu_per < <(printf '%s\n' "${pers[@]}" | sort -n | sed -n 2p)
  echo "$per $startup $all_in $rss $count $small $cpu_per"
}

# The awk function median(a, n) that paired_rounds and paired_speedups
# prepend to their programs: the median of a[1..n], which it sorts in place.
awk_median() {
  cat <<'AWK'
    function median(a, n,   i, j, x) {
      for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
AWK
}

# paired_rounds T < ROUNDS: the lines "T qrun-f32 ORT-f32 qrun-int8 ORT-int8"
# (each side "MEDIAN_MS CPU_MS RSS_KIB") of thread count T, one per round,
# summed up: per side its best round's median and largest RSS, and for each
# pair the median over the rounds of that round's qrun / ORT ratio, of wall
# and of CPU time. Prints "QF_BEST CPU_RATIO QF_RSS OF_BEST WALL_RATIO OF_RSS"
# and the same six for int8 (QI..., OI...).
paired_rounds() {
  awk -v t="$1" "$(awk_median)"'
    $1 == t {
      n++
      for (f = 0; f < 2; f++) {
        q = 2 + 6 * f; o = q + 3
        if (n == 1 || $q < best[f, 0]) best[f, 0] = $q
        if (n == 1 || $o < best[f, 1]) best[f, 1] = $o
        if ($(q + 2) > rss[f, 0]) rss[f, 0] = $(q + 2)
        if ($(o + 2) > rss[f, 1]) rss[f, 1] = $(o + 2)
        wall[f, n] = $q / $o; cpu[f, n] = $(q + 1) / $(o + 1)
      }
    }
    END {
      for (f = 0; f < 2; f++) {
        for (i = 1; i <= n; i++) { w[i] = wall[f, i]; c[i] = cpu[f, i] }
        printf "%.2f %.2f %d %.2f %.2f %d ", best[f, 0], median(c, n), rss[f, 0], best[f, 1], median(w, n), rss[f, 1]
      }
      print ""
    }'
}

# spread_note F_LO F_HI I_LO I_HI ROUNDS: for the speed-up line, a warning
# when either pair's round-by-round ratios lie more than 0.2 apart over
# fewer than 7 rounds: the host's noise then moves their median by as much.
# On a Zen 5 VM (stop 71) 3 rounds read mobilenet_v2 float's at 0.85 (rounds
# 0.55-1.13) and 7 rounds minutes later 1.01 (0.85-1.17).
spread_note() {
  awk -v flo="$1" -v fhi="$2" -v ilo="$3" -v ihi="$4" -v n="$5" 'BEGIN {
    # In hundredths, as the ratios are printed (1.15 - 0.95 is not 0.2 in binary).
    f = int((fhi - flo) * 100 + 0.5); i = int((ihi - ilo) * 100 + 0.5); d = f > i ? f : i
    if (d > 20 && n < 7) printf "; rounds up to %.2f apart: too noisy to read a speed-up, run BENCH_ROUNDS=7 or more", d / 100
  }'
}

# paired_speedups < ROUNDS: from the lines "T qrun-f32 ORT-f32 qrun-int8 ORT-int8"
# of thread counts 1 and 2, per side the median over the rounds of that
# round's 1-thread / 2-thread median time. A round's two runs of one side
# are seconds apart; the best rounds of each thread count may be minutes
# apart, on a host whose speed moves by 1.5x in that time (stops 41-43).
# Then, f32 and int8, qrun's speed-up over ONNX Runtime's in each round: its
# median, lowest and highest over the rounds ("at least ONNX Runtime's own"
# is a median of 1.00 or more; the range is how far the host's noise moves
# it). Prints "QF OF QI OI F_MED F_LO F_HI I_MED I_LO I_HI".
paired_speedups() {
  awk "$(awk_median)"'
    $1 == 1 { n1++; for (f = 0; f < 4; f++) one[f, n1] = $(2 + 3 * f) }
    $1 == 2 { n2++; for (f = 0; f < 4; f++) two[f, n2] = $(2 + 3 * f) }
    END {
      n = n1 < n2 ? n1 : n2
      for (f = 0; f < 4; f++) {
        for (i = 1; i <= n; i++) r[i] = one[f, i] / two[f, i]
        printf "%.2f ", median(r, n)
      }
      for (p = 0; p < 2; p++) {
        q = 2 * p; o = q + 1
        for (i = 1; i <= n; i++) {
          r[i] = (one[q, i] / two[q, i]) / (one[o, i] / two[o, i])
          if (i == 1 || r[i] < lo) lo = r[i]
          if (i == 1 || r[i] > hi) hi = r[i]
        }
        printf "%.2f %.2f %.2f%s", median(r, n), lo, hi, p < 1 ? " " : "\n"
      }
    }'
}

bench_speed() {
  local zoo=${ZOO_DIR:-$repo/.cache/zoo}
  local models=${BENCH_MODELS:-resnet18 mobilenet_v2} threads_list=${BENCH_THREADS:-1 2}
  local runs=${BENCH_RUNS:-3} samples=${BENCH_SAMPLES:-4} rounds=${BENCH_ROUNDS:-1}
  [[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "error: BENCH_ROUNDS must be a positive integer, not '$rounds'" >&2; return 2; }
  [ -f "$repo/.cache/ort/node_modules/onnxruntime-node/package.json" ] ||
    { echo "error: ONNX Runtime for Node is missing: run scripts/setup_ort.sh" >&2; return 2; }
  echo "== speed: qrun vs ONNX Runtime (the best of $rounds round(s) of median wall ms per sample; ratio = qrun / ORT, lower is better, the median over the rounds of each round's ratio; cpu = the same of CPU time)"
  printf '%-14s %3s | %9s %9s %6s %6s | %9s %9s %6s %6s | %s\n' model thr "qrun f32" "ORT f32" ratio cpu "qrun int8" "ORT int8" \
    ratio cpu "peak RSS MiB (qrun f32 / ORT f32 / qrun int8 / ORT int8)"
  local model t
  local summary=()
  for model in $models; do
    local dir="$zoo/$model" w="$work/$model"
    [ -f "$dir/model.onnx" ] || { echo "error: $dir/model.onnx not found (run scripts/make_zoo.sh)" >&2; return 2; }
    link_samples "$dir" "$w" "$samples" "$runs"
    default_int8 "$dir" "$w"
    if [ -z "${isa_said:-}" ]; then
      # Which ISA each side ran: qrun's from its bench line (QTOOL_ISA caps it),
      # ONNX Runtime's from the host's flags (it picks its own kernels).
      local qisa
      qisa=$("$bin/qrun" "$w/int8.onnx" --data "$w/data" --limit 1 --bench 1 --quiet | sed -n 's/.*, isa \([a-z0-9+-]*\), l2 .*/\1/p')
      echo "ISA: qrun ${qisa:-?}${QTOOL_ISA:+ (QTOOL_ISA=$QTOOL_ISA)}; ONNX Runtime: host $(host_isa)"
      isa_said=1
    fi
    local ort1="" round
    : >"$w/rounds"
    for ((round = 0; round < rounds; round++)); do
      for t in $threads_list; do
        local qf of qi oi pin
        pin=$(pin_for "$t")
        qf=$(timed_median $pin "$bin/qrun" "$dir/model.onnx" --data "$w/data" --bench "$runs" --threads "$t" --quiet)
        of=$(timed_median $pin node "$repo/scripts/ort_bench.js" "$dir/model.onnx" "$w/data" --threads "$t" --runs "$runs")
        qi=$(timed_median $pin "$bin/qrun" "$w/int8.onnx" --data "$w/data" --bench "$runs" --threads "$t" --quiet)
        oi=$(timed_median $pin node "$repo/scripts/ort_bench.js" "$w/int8.onnx" "$w/data" --threads "$t" --runs "$runs")
        echo "$t $qf $of $qi $oi" >>"$w/rounds"
      done
    done
    for t in $threads_list; do
      # Fields: qrun f32 (1 best median, 2 cpu ratio, 3 rss), ORT f32 (4 best, 5 ratio, 6 rss), the same for int8
      # (7-12); ratios are the median over the rounds of each round's qrun / ORT.
      set -- $(paired_rounds "$t" <"$w/rounds")
      printf '%-14s %3s | %9.2f %9.2f %6s %6s | %9.2f %9.2f %6s %6s | %s / %s / %s / %s\n' "$model" "$t" "$1" "$4" \
        "$5" "$2" "$7" "${10}" "${11}" "$8" "$(mib "$3")" "$(mib "$6")" "$(mib "$9")" "$(mib "${12}")"
      eval "qf_$t=$1; of_$t=$4; qi_$t=$7; oi_$t=${10}"
      [ -n "$ort1" ] || ort1=$4
    done
    if [[ " $threads_list " == *" 1 "* && " $threads_list " == *" 2 "* ]]; then
      local pq pof pqi poi rf rflo rfhi ri rilo rihi
      read -r pq pof pqi poi rf rflo rfhi ri rilo rihi < <(paired_speedups <"$w/rounds")
      summary+=("$(printf '%-14s speed-up 2 vs 1 threads, median of the rounds (of best rounds): qrun f32 %sx (%sx), ORT f32 %sx (%sx), qrun int8 %sx (%sx), ORT int8 %sx (%sx)' "$model" \
        "$pq" "$(ratio "$qf_1" "$qf_2")" "$pof" "$(ratio "$of_1" "$of_2")" "$pqi" "$(ratio "$qi_1" "$qi_2")" "$poi" "$(ratio "$oi_1" "$oi_2")")")
      summary+=("$(printf '%-14s qrun speed-up / ORT speed-up, round by round: f32 %s (rounds %s-%s), int8 %s (rounds %s-%s)%s' \
        "$model" "$rf" "$rflo" "$rfhi" "$ri" "$rilo" "$rihi" "$(spread_note "$rflo" "$rfhi" "$rilo" "$rihi" "$rounds")")")
    fi
    # qprofile, 1 thread: per sample (qprofile_per_sample).
    [ "${BENCH_QPROFILE:-1}" != 0 ] || continue
    local per startup all_in rss count small
    read -r per startup all_in rss count small _ < <(qprofile_per_sample "$dir/model.onnx" "$w/data_rep" "$w")
    summary+=("$(printf '%-14s qprofile %s ms per sample (1 thread; %s vs %s samples) vs ORT f32 %s ms: ratio %s; fixed cost %s ms per process, all-in %s ms per sample over %s; peak RSS %s MiB' \
      "$model" "$per" "$count" "$small" "$ort1" "$(ratio "$per" "$ort1")" "$startup" "$all_in" "$count" "$(mib "$rss")")")
  done
  printf '%s\n' "${summary[@]}"
}

# ---------------------------------------------------------------------------
# qprofile: qprofile's time per sample against its budget (issue #22): qrun's
# own unfused float run of the same model (every value computed, the plan
# qprofile runs) plus 0.5 ns per profiled value, PASS or MISS; and PyTorch's
# FX calibration with HistogramObserver on the same samples
# (scripts/torch_fx_calib.py, 1 thread) where python3-torch is importable,
# PASS when qprofile is faster. Both sides of the budget come from one
# process, `qprofile --bench` (apps/qprofile/bench.h): each sample's run with
# and without profiling, BENCH_RUNS times each, alternating, CPU time per
# sample, and the verdict on the median over neighbouring pairs of runs of
# their difference; on this shared host a separate process for each side put
# whole minutes of a slow spell on one side (qrun's unfused resnet18 run moved
# from 39 to 47 ms between two sections an hour apart), and the difference of
# the two sides' sums still moved by +-1 ns per value from one process to the
# next. The histograms' own time is printed beside it. `qrun --no-fuse --bench`,
# the same interpreter and plan in its own process, is printed beside the
# unprofiled run as a check. Everything runs on one pinned thread, once per
# ISA of BENCH_QPROFILE_ISAS (default "host avx2": the host's kernels, then
# QTOOL_ISA=avx2; PyTorch capped alike with ATEN_CPU_CAPABILITY=avx2 and
# ONEDNN_MAX_CPU_ISA=AVX2). PyTorch's figure is CPU time too (one thread,
# pinned; time.process_time). BENCH_MODELS, BENCH_RUNS and BENCH_SAMPLES as
# for speed.
# ---------------------------------------------------------------------------
bench_qprofile() {
  local zoo=${ZOO_DIR:-$repo/.cache/zoo}
  local models=${BENCH_MODELS:-resnet18 mobilenet_v2} runs=${BENCH_RUNS:-3} samples=${BENCH_SAMPLES:-4}
  local torch=0 model isa pin
  $py -c "import torch, torchvision" 2>/dev/null && torch=1
  pin=$(pin_for 1)
  echo "== qprofile: per sample vs budget = unfused float run + 0.5 ns per profiled value, and vs torch FX HistogramObserver calibration (1 thread); host ISA: $(host_isa)"
  printf '%-14s %-11s | %9s %9s %9s %10s %8s %8s %6s | %9s %6s\n' model isa "qprofile" "unprof." "qrun nf" "values" \
    "ns/value" "observer" "" "torch fx" ""
  for model in $models; do
    local dir="$zoo/$model" w="$work/qp_$model"
    [ -f "$dir/model.onnx" ] || { echo "error: $dir/model.onnx not found (run scripts/make_zoo.sh)" >&2; return 2; }
    link_samples "$dir" "$w" "$samples" "$runs"
    for isa in ${BENCH_QPROFILE_ISAS:-host avx2}; do
      (
        [ "$isa" = host ] || export QTOOL_ISA=$isa
        local line profiled plain values per_value observer qrun_ms verdict used torch_ms="-" torch_verdict=""
        line=$($pin "$bin/qprofile" "$dir/model.onnx" --data "$w/data" --bench "$runs" --threads 1 --quiet)
        profiled=$(sed -n 's/^bench: profiled \([0-9.]*\) ms per sample.*/\1/p' <<<"$line")
        plain=$(sed -n 's/.*, unprofiled \([0-9.]*\) ms (cpu.*/\1/p' <<<"$line")
        values=$(sed -n 's/.*(\([0-9]*\) values per sample;.*/\1/p' <<<"$line")
        per_value=$(sed -n 's/.* = \(-\{0,1\}[0-9.]*\) ns per profiled value.*/\1/p' <<<"$line")
        observer=$(sed -n 's/.*; observer alone [0-9.]* ms = \([0-9.]*\) ns).*/\1/p' <<<"$line")
        used=$(sed -n 's/.*, isa \([a-z0-9+-]*\), l2 [0-9]* KiB$/\1/p' <<<"$line")
        qrun_ms=$($pin "$bin/qrun" "$dir/model.onnx" --data "$w/data" --bench "$runs" --threads 1 --no-fuse --quiet |
          sed -n 's/.* cpu \([0-9.]*\) ms per sample.*/\1/p')
        verdict=$(awk -v a="$per_value" 'BEGIN { print (a <= 0.5 ? "PASS" : "MISS") }')
        if [ "$torch" = 1 ]; then
          local cap=()
          [ "$isa" != avx2 ] || cap=(env ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2)
          torch_ms=$("${cap[@]}" $pin $py "$repo/scripts/torch_fx_calib.py" "$model" "$w/data" --runs "$runs" 2>/dev/null |
            sed -n 's/^torch-fx: \([0-9.]*\) ms per sample.*/\1/p')
          torch_verdict=$(awk -v a="$profiled" -v b="$torch_ms" 'BEGIN { print (a < b ? "PASS" : "MISS") }')
        fi
        printf '%-14s %-11s | %9.2f %9.2f %9.2f %10s %8.3f %8.3f %6s | %9s %6s\n' "$model" "$used" "$profiled" "$plain" \
          "$qrun_ms" "$values" "$per_value" "$observer" "$verdict" "$torch_ms" "$torch_verdict"
      )
    done
  done
  echo "(CPU ms per sample, medians; qprofile / unprof. = qprofile --bench's runs with and without profiling, alternating in one process; qrun nf = qrun --no-fuse --bench, its own process, for comparison; values = profiled values per sample; ns/value = the median over neighbouring pairs of runs of their difference, per profiled value, PASS when at most 0.5; observer = the histograms' own time per profiled value; torch fx with kernels capped as qtool's)"
}

# ---------------------------------------------------------------------------
# targets: ONNX Runtime's speed (1 thread, median ms per sample) on each form
# scripts/target_choice.sh compares for the default target: full int8
# (ort-x86-vnni), pair-bound, uint8 weights, uint8 but int8 depthwise
# weights (ort-x86), 7-bit weights, int8
# activations in QOperator form; ratios to full int8. The host's ISA decides
# which kernels ONNX Runtime runs (VNNI or not): it is printed.
# ---------------------------------------------------------------------------
bench_targets() {
  local zoo=${ZOO_DIR:-$repo/.cache/zoo}
  local models=${BENCH_MODELS:-resnet18 mobilenet_v2} runs=${BENCH_RUNS:-3} samples=${BENCH_SAMPLES:-4}
  [ -f "$repo/.cache/ort/node_modules/onnxruntime-node/package.json" ] ||
    { echo "error: ONNX Runtime for Node is missing: run scripts/setup_ort.sh" >&2; return 2; }
  echo "== targets: ONNX Runtime ms per sample (1 thread) of each candidate form; host ISA: $(host_isa)"
  local variants=(full-int8 pair-bound u8u8 u8u8-dw8 7-bit s8s8-qop) model v pin
  pin=$(pin_for 1)
  printf '%-14s' model; printf ' | %-16s' "${variants[@]}"; echo
  for model in $models; do
    local dir="$zoo/$model" w="$work/t_$model" n=0 f
    [ -f "$dir/model.onnx" ] || { echo "error: $dir/model.onnx not found (run scripts/make_zoo.sh)" >&2; return 2; }
    mkdir -p "$w/data"
    for f in "$dir"/inputs/*.npy; do
      [ $n -lt "$samples" ] || break
      ln -s "$f" "$w/data/$(basename "$f")"
      n=$((n + 1))
    done
    "$bin/qprofile" "$dir/model.onnx" --data "$w/data" -o "$w/profile.json" --quiet
    for v in "${variants[@]}"; do
      local t=ort-x86-vnni
      case $v in full-int8) ;; *) t="$repo/scripts/targets/$v.json" ;; esac
      "$bin/qconvert" "$dir/model.onnx" --profile "$w/profile.json" --target "$t" -o "$w/$v.onnx" >/dev/null 2>&1
    done
    # Three rounds over the forms, interleaved so that load from other jobs
    # hits every form alike; the median round counts.
    local round base="" cells=()
    for round in 1 2 3; do
      for v in "${variants[@]}"; do
        set -- $(timed_median $pin node "$repo/scripts/ort_bench.js" "$w/$v.onnx" "$w/data" --threads 1 --runs "$runs")
        echo "$1" >>"$w/$v.ms"
      done
    done
    for v in "${variants[@]}"; do
      local ms
      ms=$(sort -n "$w/$v.ms" | sed -n 2p)
      [ -n "$base" ] || base=$ms
      cells+=("$(printf '%.2f (%sx)' "$ms" "$(ratio "$ms" "$base")")")
    done
    printf '%-14s' "$model"; printf ' | %-16s' "${cells[@]}"; echo
  done
}

# ---------------------------------------------------------------------------
# kernels: kernel throughput against the peak of the instructions they are
# built from, both measured in the same run on this host ($bin/kernel_bench,
# bench/kernel_bench.cpp; one thread, pinned as speed's single-thread runs).
# Sections (BENCH_KERNELS, default all of kernel_bench's):
#   int8-avx2  the AVX2 int8 micro-kernels (VPMADDUBSW pairs, widening, and
#              widened: conv weights or GEMM activations widened to int16
#              when packed)
#              vs a register-only VPMADDUBSW + VPMADDWD + VPADDD loop, and
#              resnet18's convolutions (per layer, % of that peak) with each;
#   float-avx2 the AVX2 float micro-kernel (6 x 16) vs a register-only
#              VFMADD231PS loop (12 chains, the kernel's registers), and per
#              layer resnet18's convolutions and mobilenet_v2's pointwise ones
#              as qrun runs them (im2col packing, bias and Relu included), a
#              summary line per model (layers at >= 75% of that peak, the
#              lowest layer, all layers together);
#              both run under QTOOL_ISA=avx2, so AVX-512 hosts measure them too;
#   float-avx512 where the CPU has AVX-512F (and no BENCH_CPUID view hides
#              it): the same float tables on the AVX-512 kernels (8 x 32 GEMM
#              tile, 14 x 32 lanes tile) vs a register-only zmm VFMADD231PS
#              loop (28 chains, the lanes tile's registers);
#   int8-amx   where the CPU has AMX-INT8 (and no BENCH_CPUID view hides it):
#              resnet18's int8 convolutions on the AMX kernels vs a
#              tiles-only TDPBSUD loop, and their time on the AVX-512 VNNI
#              kernels beside it.
# How it is measured (kernel_bench.cpp, measure_against_peak): every kernel
# and layer gets a warm-up window, then 11 rounds of [peak loop, >= 25 ms of
# calls of the layer, each timed alone, peak loop], all in this thread's CPU
# time (a shared host's other processes' slices do not count); a round's
# efficiency is its fastest call's rate over the mean of the two peaks around
# it (a peak sample is the fastest call, 20 000 iterations, in 2 ms), and each figure
# printed is the median over the rounds, with the lowest and highest round
# beside it. The rounds of a table's layers are interleaved (round r of every
# layer, then round r + 1), so a stretch of load hits a few rounds of each
# layer, not all of a few. The peak is thus measured within milliseconds of each layer:
# clock changes between layers cancel. About 10 s per section. What thread
# CPU time cannot remove is other processes evicting the layer's data from
# the caches between time slices: with a load average above the core count
# every multi-ms layer call is cut, and figures drop by 10-20 points and move
# from run to run; the load before and after each section is printed, and
# figures are comparable only from runs at a load below 1.
# A new section is a function in kernel_bench.cpp, its name below, and (for
# another ISA) its QTOOL_ISA in the case.
# ---------------------------------------------------------------------------
bench_kernels() {
  local default="int8-avx2 float-avx2" s pin
  if grep -qw avx512f /proc/cpuinfo && [ -z "${BENCH_CPUID:-}" ]; then default="$default float-avx512"; fi
  if grep -qw amx_int8 /proc/cpuinfo && [ -z "${BENCH_CPUID:-}" ]; then default="$default int8-amx"; fi
  local sections=${BENCH_KERNELS:-$default}
  [ -x "$bin/kernel_bench" ] || { echo "error: $bin/kernel_bench not found (run scripts/setup.sh)" >&2; return 2; }
  echo "== kernels: throughput vs the instructions' peak (1 thread); host ISA: $(host_isa)"
  pin=$(pin_for 1)
  for s in $sections; do
    echo "$s: load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    case $s in
      *-avx2) QTOOL_ISA=avx2 $pin "$bin/kernel_bench" "$s" ;;
      *) $pin "$bin/kernel_bench" "$s" ;;
    esac
    echo "$s: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  done
}

# ---------------------------------------------------------------------------
# steps: where the second thread goes, step by step (bench/step_bench.cpp):
# each model of BENCH_MODELS, float and int8 (qconvert's default output,
# calibrated on BENCH_SAMPLES samples), on its first sample, per-step medians
# of BENCH_STEP_RUNS rounds (default 30) on 1 and 2 threads in one process,
# runs of the two alternating; QTOOL_ISA and BENCH_CPUID apply as above.
# ---------------------------------------------------------------------------
bench_steps() {
  local zoo=${ZOO_DIR:-$repo/.cache/zoo} runs=${BENCH_STEP_RUNS:-30} model dir w first=()
  [ -x "$bin/step_bench" ] || { echo "error: $bin/step_bench not found (run scripts/setup.sh)" >&2; return 2; }
  echo "== steps: qrun's fused plan, per-step medians on 1 and 2 threads; host ISA: $(host_isa)"
  for model in ${BENCH_MODELS:-resnet18 mobilenet_v2}; do
    dir="$zoo/$model" w="$work/steps_$model"
    [ -f "$dir/model.onnx" ] || { echo "error: $dir/model.onnx not found (run scripts/make_zoo.sh)" >&2; return 2; }
    link_samples "$dir" "$w" "${BENCH_SAMPLES:-4}" 0
    first=("$w"/data/*.npy)  # sorted, as globs are (no pipe into head under pipefail)
    [ -e "${first[0]}" ] || { echo "error: no samples in $dir/inputs" >&2; return 2; }
    default_int8 "$dir" "$w"
    "$bin/step_bench" "$dir/model.onnx" "${first[0]}" "$runs"
    "$bin/step_bench" "$w/int8.onnx" "${first[0]}" "$runs"
  done
}

# ---------------------------------------------------------------------------
# scale: qconvert on synthetic decoder-shaped models (scripts/make_decoder.py:
# embedding, attention and MLP MatMuls, LayerNorm) whose float32 weights are
# BENCH_SCALE_GIB GiB (default "1 4 12"), in external data. For each: the time
# to read the weights once (cat to /dev/null, same run), then time, peak RSS
# and output size of qconvert --dynamic --weights int4 and --dynamic (int8),
# against DESIGN "Large models"' targets: peak RSS <= 1.5 GiB + the largest
# tensor, time <= 1.5x the read. Both meanings of "the read" are measured:
#   warm: the data file in the page cache (a cat just before), the read a
#         memory copy;
#   cold: the data file evicted from the page cache (posix_fadvise
#         POSIX_FADV_DONTNEED, which needs no root for a file's clean pages;
#         fincore, where util-linux has it, shows what stayed) before the cat
#         and before each conversion: both read it from disk.
# Each time is the median of BENCH_SCALE_RUNS runs (default 3), runs of the
# read and of the conversions alternating. qprofile then profiles the float
# model (peak RSS: weights mapped, not copied), qrun runs the int8 output (one
# sample), and ONNX Runtime loads and runs it when scripts/setup_ort.sh has
# installed it. Needs about 1.6x the largest size free in TMPDIR; models are
# removed after use.
# ---------------------------------------------------------------------------
# evict FILE: drop FILE's pages from the page cache (clean pages only: sync first).
evict() {
  sync "$1"
  $py -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}

# resident FILE: the share of FILE in the page cache, where fincore exists.
resident() {
  command -v fincore >/dev/null || { echo "?"; return; }
  fincore -b -n -o PAGES,SIZE "$1" | awk '{ printf "%.0f%%", 100 * $1 * 4096 / ($2 > 0 ? $2 : 1) }'
}

# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

bench_scale() {
  echo "== scale: streaming conversion of large models; host ISA: $(host_isa)"
  local gib dir t0 largest ort_js="$repo/tests/interop/ort_run.js" runs=${BENCH_SCALE_RUNS:-3}
  for gib in ${BENCH_SCALE_GIB:-1 4 12}; do
    dir="$work/scale$gib"
    mkdir -p "$dir"
    $py "$repo/scripts/make_decoder.py" "$dir/m.onnx" --gib "$gib" --inputs "$dir/ids"
    largest=$($py - "$dir/m.onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
print(max(int(dict((e.key, e.value) for e in t.external_data)["length"]) for t in m.graph.initializer))
PY
)
    local data="$dir/m.onnx.data" cache r mode out usage secs rss
    declare -A read_s=() conv_s=() conv_cpu=() conv_rss=() out_bytes=()
    # One timed run: "seconds" of the command, its stdout discarded.
    timed() { t0=$EPOCHREALTIME; "$@" >/dev/null; awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }
    for ((r = 1; r <= runs; ++r)); do
      for cache in warm cold; do
        if [ $cache = warm ]; then cat "$data" >/dev/null; else evict "$data"; fi
        [ $r = 1 ] && echo "$gib GiB $cache: $(resident "$data") of the data file in the page cache before the read"
        read_s[$cache]+="$(timed cat "$data") "
        for mode in int4 int8; do
          out="$dir/q_$mode.onnx"
          rm -f "$out" "$out.data"
          if [ $cache = warm ]; then cat "$data" >/dev/null; else evict "$data"; fi
          t0=$EPOCHREALTIME
          # Peak RSS (KiB), user and system CPU seconds: on a shared host the CPU
          # time says what the conversion costs when the wall time has waited.
          usage=$(/usr/bin/time -f "%M %U %S" "$bin/qconvert" "$dir/m.onnx" --dynamic --weights "$mode" -o "$out" 2>&1 >/dev/null | tail -n 1)
          conv_s[$cache.$mode]+="$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }') "
          conv_cpu[$cache.$mode]+="$(awk -v u="$usage" 'BEGIN { split(u, f, " "); printf "%.3f", f[2] + f[3] }') "
          conv_rss[$cache.$mode]+="${usage%% *} "
          out_bytes[$mode]=$(du -cb "$out"* | tail -n 1 | cut -f1)
        done
      done
    done
    echo "$gib GiB: largest tensor $((largest >> 20)) MiB; medians of $runs runs"
    for cache in warm cold; do
      local rd
      rd=$(tr ' ' '\n' <<<"${read_s[$cache]}" | grep . | median)
      echo "  $cache read once (cat): ${rd} s"
      for mode in int4 int8; do
        awk -v g="$gib" -v c="$cache" -v m="$mode" -v r="$rd" -v l="$largest" -v o="${out_bytes[$mode]}" \
          -v s="$(tr ' ' '\n' <<<"${conv_s[$cache.$mode]}" | grep . | median)" \
          -v cpu="$(tr ' ' '\n' <<<"${conv_cpu[$cache.$mode]}" | grep . | median)" \
          -v k="$(tr ' ' '\n' <<<"${conv_rss[$cache.$mode]}" | grep . | sort -g | tail -n 1)" 'BEGIN {
            bound = 1.5 * 1024 * 1024 + l / 1024; ratio = s / (r > 0 ? r : 1)
            printf "  %s GiB %s %s: %.2f s (%.2fx the %s read: %s; CPU %.2f s), peak RSS %.2f GiB (bound %.2f GiB: %s), output %.2f GiB\n",
              g, c, m, s, ratio, c, ratio <= 1.5 ? "within 1.5x" : "OVER 1.5x", cpu, k / 1048576, bound / 1048576,
              k <= bound ? "met" : "MISSED", o / 2^30 }'
      done
    done
    t0=$EPOCHREALTIME
    rss=$(/usr/bin/time -f %M "$bin/qprofile" "$dir/m.onnx" --data "$dir/ids" -o "$dir/profile.json" 2>&1 >/dev/null | tail -n 1)
    secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    echo "  qprofile profiles the float model (2 samples): ${secs} s, peak RSS $(awk -v k="$rss" 'BEGIN { printf "%.2f", k / 1048576 }') GiB"
    rss=$(/usr/bin/time -f %M "$bin/qrun" "$dir/q_int8.onnx" --data "$dir/ids" --limit 1 -o "$dir/run" --quiet 2>&1 >/dev/null | tail -n 1)
    echo "  qrun runs the int8 output: peak RSS $(awk -v k="$rss" 'BEGIN { printf "%.2f", k / 1048576 }') GiB"
    if [ -d "$repo/.cache/ort/node_modules/onnxruntime-node" ]; then
      node "$ort_js" "$dir/q_int8.onnx" "$dir/ids" "$dir/ort" >/dev/null &&
        echo "  ONNX Runtime loads and runs the int8 output" || echo "  ONNX Runtime FAILED on the int8 output"
    fi
    rm -rf "$dir"
  done
}

# ---------------------------------------------------------------------------
# gptq: time and peak RSS of qconvert --weight-rounding gptq on the zoo's
# byte-level LM (scripts/make_zoo.sh --only byte_lm, in QTOOL_ZOO, default
# .cache/zoo) with only its largest MatMul quantized (by K x N, then K: GPTQ
# costs K^2 memory and K^3 work per layer; every other MatMul/Gemm is
# --exclude-node), int4 g128 --dynamic, calibrated on its calib/ split; the
# same conversion with rtn beside it, so the difference is GPTQ's own cost
# (gathering the layer's K x K Hessian over the data, the Cholesky, the
# column sweep). Wall-clock times are medians of BENCH_GPTQ_RUNS (3) runs,
# pinned to one CPU as speed's single-thread runs; peak RSS the largest.
# ---------------------------------------------------------------------------
bench_gptq() {
  local lm=${QTOOL_ZOO:-$repo/.cache/zoo}/byte_lm runs=${BENCH_GPTQ_RUNS:-3} pin layer
  echo "== gptq: GPTQ on the byte LM's largest MatMul (int4 g128); host ISA: $(host_isa)"
  [ -f "$lm/DONE" ] || { echo "error: $lm not found (scripts/make_zoo.sh --only byte_lm)" >&2; return 2; }
  # "NAME K N" of the largest MatMul, then one --exclude-node per other MatMul/Gemm with a constant weight.
  mapfile -t layer < <($py - "$lm/model.onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1])
inits = {i.name: list(i.dims) for i in m.graph.initializer}
layers = [(n.name, inits[n.input[1]]) for n in m.graph.node
          if n.op_type in ("MatMul", "Gemm") and n.input[1] in inits and len(inits[n.input[1]]) == 2]
name, (k, n) = max(layers, key=lambda l: (l[1][0] * l[1][1], l[1][0]))
print(name, k, n)
for other, _ in layers:
    if other != name:
        print(other)
PY
)
  local target=(${layer[0]}) excludes=() other
  for other in "${layer[@]:1}"; do excludes+=(--exclude-node "$other"); done
  echo "layer ${target[0]}: K ${target[1]} x N ${target[2]} (Hessian $(( target[1] * target[1] * 8 / 1024 )) KiB in double); data: $(ls "$lm/calib" | wc -l) samples of $lm/calib"
  pin=$(pin_for 1)
  local rounding i t0 ms rss times max_rss line rtn_ms="" data
  for rounding in rtn gptq; do
    times=() max_rss=0
    for ((i = 0; i < runs; i++)); do
      t0=$EPOCHREALTIME
      data=()
      [ "$rounding" = rtn ] || data=(--data "$lm/calib")
      /usr/bin/time -f %M -o "$work/gptq_rss" $pin "$bin/qconvert" "$lm/model.onnx" --dynamic --weights int4 \
        --group-size 128 --weight-rounding "$rounding" "${data[@]}" "${excludes[@]}" -o "$work/gptq_$rounding.onnx" \
        --report "$work/gptq_$rounding.json" >/dev/null 2>"$work/gptq_err" ||
        { echo "error: qconvert --weight-rounding $rounding failed: $(head -c 300 "$work/gptq_err")" >&2; return 1; }
      rss=$(tail -n 1 "$work/gptq_rss")
      times+=("$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", (b - a) * 1000 }')")
      if ((rss > max_rss)); then max_rss=$rss; fi
    done
    ms=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    line="  $rounding: ${ms} ms (median of $runs: ${times[*]}), peak RSS $(awk -v k="$max_rss" 'BEGIN { printf "%.1f", k / 1024 }') MiB"
    [ -z "$rtn_ms" ] || line+="; GPTQ's own cost $(awk -v a="$ms" -v b="$rtn_ms" 'BEGIN { printf "%.1f", a - b }') ms"
    echo "$line"
    rtn_ms=${rtn_ms:-$ms}
  done
  # Only the named layer was quantized, with the method asked for.
  $py - "$work/gptq_gptq.json" "${target[0]}" <<'PY' || { echo "FAIL: the gptq run did not quantize only the largest MatMul with gptq" >&2; return 1; }
import json, sys
r = json.load(open(sys.argv[1]))
done = [n["node"] for n in r["nodes"] if n["quantized"]]
assert done == [sys.argv[2]], done
assert any("gptq" in t["method"] for t in r["tensors"]), [t["method"] for t in r["tensors"]]
PY
}

sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(qprofile-memory speed)
for s in "${sections[@]}"; do
  case $s in
    qprofile-memory) bench_qprofile_memory ;;
    speed) bench_speed ;;
    qprofile) bench_qprofile ;;
    targets) bench_targets ;;
    kernels) bench_kernels ;;
    steps) bench_steps ;;
    scale) bench_scale ;;
    gptq) bench_gptq ;;
    *) echo "error: unknown bench section '$s' (known: qprofile-memory, speed, qprofile, targets, kernels, steps, scale, gptq)" >&2; exit 2 ;;
  esac
done
