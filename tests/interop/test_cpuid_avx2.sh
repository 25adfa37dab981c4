#!/usr/bin/env bash
# scripts/cpuid_avx2.c (BENCH_CPUID=avx2 of scripts/bench.sh) shows a process
# an AVX2-only CPU, in either of its ways (tests/interop/avx2_view.sh): CPUID
# faulting where the host has cpuid_fault, and on every x86-64 host copies
# patched by scripts/cpuid_patch.py (CPUID_PATCHED=1). In each, checked where
# it counts, in ONNX Runtime: it computes every case of tests/fixtures/ort-avx2
# (what it computed on an AVX2-only AMD EPYC) bit for bit, so it runs the
# kernels such a CPU runs. On a host with VNNI the same runs without the view
# must differ on the saturating cases, or the check proves nothing. qrun, free
# of QTOOL_ISA, picks its AVX2 kernels in the view, and the tests' choice of
# ONNX Runtime target follows. A fault that is not a CPUID still ends the
# process by SIGSEGV, a handler the program installs still gets it, and a
# sent SIGSEGV the program ignores stays ignored.
# Where CPUID cannot fault (no cpuid_fault) and CPUID_PATCHED is not set, the
# library must refuse: exit 2 and one `error:` line, before the program runs;
# so must it refuse an unknown CPUID_VIEW or CPUID_PATCHED, and
# cpuid_patch.py a file that is not an x86-64 ELF (OUT left unwritten).
# CPUID_VIEW=avx512 hides AMX alone: a probe of CPUID leaf 7 then sees the
# host's AVX2, AVX-512F and AVX-512 VNNI bits and no AMX, where the default
# view sees AVX2 only.
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"
source "$src/tests/interop/avx2_view.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

# refused ERROR_PATTERN CMD...: CMD must exit 2 with one `error:` line matching the pattern.
refused() {
  local pattern=$1 code=0
  shift
  "$@" >/dev/null 2>"$tmp/err" || code=$?
  [ "$code" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "$pattern" "$tmp/err" ||
    fail "$* was not refused as expected (exit $code): $(cat "$tmp/err")"
}
if ! grep -qw cpuid_fault /proc/cpuinfo; then
  refused '^error: cpuid_avx2: CPUID cannot' env LD_PRELOAD="$shim" /usr/bin/true
fi
refused '^error: cpuid_avx2: CPUID_VIEW must be' env CPUID_VIEW=avx10 LD_PRELOAD="$shim" /usr/bin/true
refused '^error: cpuid_avx2: CPUID_PATCHED must be' env CPUID_PATCHED=yes LD_PRELOAD="$shim" /usr/bin/true
refused "^error: cpuid_patch: $src/README.md: not an ELF file" \
  /usr/bin/python3 "$src/scripts/cpuid_patch.py" "$src/README.md" "$tmp/not_written"
[ ! -e "$tmp/not_written" ] || fail "cpuid_patch.py wrote its output for a file it refused"
refused "^error: BENCH_CPUID must be avx2, avx512 or unset, not 'avx10'" \
  env BENCH_CPUID=avx10 QTOOL_BIN="$bin" bash "$src/scripts/bench.sh" speed

source "$src/tests/interop/ort_fixtures.sh"
fixtures="$src/tests/fixtures/ort-avx2"
# ort_exact MODE: ort_fixtures_exact in MODE (host: without a view), the
# comparison in $tmp/cmp.MODE.log; status 0 when all are equal, 1 when some
# differ; anything else (ONNX Runtime failed, bad input) fails the test.
ort_exact() {
  local mode=$1 code=0 run=(node)
  [ "$mode" = host ] || run=(in_view "$mode" node)
  ort_fixtures_exact "$src" "$tmp/ort.$mode" "$tmp/cmp.$mode.log" "${run[@]}" || code=$?
  [ "$code" -ne 3 ] || fail "ONNX Runtime failed on the fixtures ($mode)"
  [ "$code" -le 1 ] || fail "compare_outputs.py --each (ONNX Runtime, $mode) exited $code: $(cat "$tmp/cmp.$mode.log")"
  return "$code"
}
# The cases whose outputs differ in a log of ort_exact.
differing() { awk '/: exact: / { split($3, n, "/"); if (n[1] != n[2]) print $1 }' "$1" | tr -d :; }
if grep -qw -e avx512_vnni -e avx_vnni /proc/cpuinfo; then
  ort_exact host || true
  saturating=$(differing "$tmp/cmp.host.log" | wc -l)
  # The fixture README lists 17 cases whose AVX2 outputs saturate.
  [ "$saturating" -ge 10 ] || fail "only $saturating fixture cases differ on this VNNI host without the view"
fi

# What CPUID leaf 7 says, as the processes in the view ask it; the patched
# view's probe and qrun are patched copies.
"$src/tests/cpuid_flags.sh" "$tmp/probe.fault"
host=$("$tmp/probe.fault")
CPUID_PATCHED=1 "$src/tests/cpuid_flags.sh" "$tmp/probe.patched"
view_patch "$bin/qrun" "$tmp/qrun.patched"
flag() { sed -n "s/.*\b$1=\([01]\).*/\1/p" <<<"$2"; }
[ "$(flag avx2 "$host")" = 1 ] || fail "the CPUID probe does not see AVX2 on this host: $host"
avx512_want="avx2=1 avx512f=$(flag avx512f "$host") avx512_vnni=$(flag avx512_vnni "$host")"
avx512_want="$avx512_want avx_vnni=$(flag avx_vnni "$host") amx_tile=0 amx_int8=0"
isa_of() { sed -n 's/.*, isa \([a-z0-9+-]*\), l2 .*/\1/p'; }
modes=$(view_modes)
for mode in $modes; do
  qrun=$bin/qrun
  [ "$mode" = fault ] || qrun=$tmp/qrun.patched
  ort_exact "$mode" || fail "ONNX Runtime in the $mode view differs from its AVX2-only outputs in" \
    "$(differing "$tmp/cmp.$mode.log" | paste -sd ' '): $(grep ': output ' "$tmp/cmp.$mode.log" | head -n 3)"
  view=$(in_view "$mode" "$tmp/probe.$mode")
  [ "$view" = "avx2=1 avx512f=0 avx512_vnni=0 avx_vnni=0 amx_tile=0 amx_int8=0" ] ||
    fail "in the $mode view the probe saw: $view"
  view=$(CPUID_VIEW=avx512 in_view "$mode" "$tmp/probe.$mode")
  [ "$view" = "$avx512_want" ] ||
    fail "in the $mode view under CPUID_VIEW=avx512 the probe saw '$view', not '$avx512_want' (host: $host)"

  isa=$(in_view "$mode" env -u QTOOL_ISA "$qrun" "$src/samples/digits_cnn.onnx" --data "$src/samples/digits/test" \
    --limit 1 --bench 1 --quiet | isa_of)
  [ "$isa" = avx2 ] || fail "qrun in the $mode view ran its '$isa' kernels"
  # Under CPUID_VIEW=avx512 qrun keeps what the host has but AMX.
  isa=$(CPUID_VIEW=avx512 in_view "$mode" env -u QTOOL_ISA "$qrun" "$src/samples/digits_cnn.onnx" \
    --data "$src/samples/digits/test" --limit 1 --bench 1 --quiet | isa_of)
  [[ -n "$isa" && "$isa" != *amx* ]] || fail "qrun in the $mode view under CPUID_VIEW=avx512 ran its '$isa' kernels"

  # The tests' choice of ONNX Runtime target follows CPUID as MLAS does, so the
  # suite in the view compares qrun with ONNX Runtime's AVX2 arithmetic.
  target=$(in_view "$mode" env QTOOL_ORT_TARGET= bash "$src/tests/interop/ort_host_target.sh")
  [ "$target" = ort-x86-avx2 ] || fail "tests/interop/ort_host_target.sh in the $mode view chose '$target'"

  # Faults other than CPUID keep their meaning.
  code=0
  in_view "$mode" /usr/bin/python3 -c 'import ctypes; ctypes.string_at(0)' 2>/dev/null || code=$?
  [ "$code" -eq 139 ] || fail "a null read in the $mode view exited $code, not by SIGSEGV (139)"
  code=0
  in_view "$mode" /usr/bin/python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)' 2>/dev/null || code=$?
  [ "$code" -eq 139 ] || fail "kill -SEGV in the $mode view exited $code, not by SIGSEGV (139)"
  in_view "$mode" /usr/bin/python3 -c \
    'import os, signal; signal.signal(signal.SIGSEGV, signal.SIG_IGN); os.kill(os.getpid(), signal.SIGSEGV)' ||
    fail "kill -SEGV with SIGSEGV ignored ended the process in the $mode view"
  out=$(in_view "$mode" /usr/bin/python3 -X faulthandler -c 'import ctypes; ctypes.string_at(0)' 2>&1 || true)
  grep -q 'Fatal Python error: Segmentation fault' <<<"$out" ||
    fail "Python's own SIGSEGV handler (faulthandler) was not called in the $mode view: $out"
done
echo "ONNX Runtime computed all $(ls -d "$fixtures"/*/ | wc -l) AVX2 fixtures exactly in the views: $modes" \
  "(${saturating:-no VNNI here, so none} differ without); qrun chose avx2; CPUID_VIEW=avx512 hid AMX alone (host: $host)"
