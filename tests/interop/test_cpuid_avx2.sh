#!/usr/bin/env bash
# scripts/cpuid_avx2.c (BENCH_CPUID=avx2 of scripts/bench.sh) shows a process
# an AVX2-only CPU. Checked where it counts, in ONNX Runtime: under it, ONNX
# Runtime computes every case of tests/fixtures/ort-avx2 (what it computed on
# an AVX2-only AMD EPYC) bit for bit, so it runs the kernels such a CPU runs.
# On a host with VNNI the same runs without the library must differ on the
# saturating cases, or the check proves nothing. qrun, free of QTOOL_ISA,
# picks its AVX2 kernels under it. A fault that is not a CPUID still ends the
# process by SIGSEGV, a handler the program installs still gets it, and a sent
# SIGSEGV the program ignores stays ignored.
# Where CPUID cannot fault (no cpuid_fault), the library must refuse: exit 2
# and one `error:` line, before the program runs.
# CPUID_VIEW=avx512 hides AMX alone: a probe of CPUID leaf 7 then sees the
# host's AVX2, AVX-512F and AVX-512 VNNI bits and no AMX, where the default
# view sees AVX2 only; an unknown view is refused like a host without
# cpuid_fault.
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$tmp/cpuid_avx2.so" "$src/scripts/cpuid_avx2.c" -ldl
shim="$tmp/cpuid_avx2.so"

if ! grep -qw cpuid_fault /proc/cpuinfo; then
  code=0
  LD_PRELOAD=$shim /usr/bin/true 2>"$tmp/err" || code=$?
  [ "$code" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q '^error: cpuid_avx2: CPUID cannot' "$tmp/err" ||
    fail "no cpuid_fault here, yet the library did not refuse (exit $code): $(cat "$tmp/err")"
  echo "no cpuid_fault on this host: checked that the library refuses"
  exit 0
fi

# same DIR_A DIR_B: status 0 when the outputs hold the same bits (compare_outputs.py --exact), 1 when they
# differ; anything else (bad input) fails the test.
same() {
  local code=0
  /usr/bin/python3 "$src/tests/interop/compare_outputs.py" "$1" "$2" --exact >"$tmp/cmp.log" 2>&1 || code=$?
  [ "$code" -le 1 ] || fail "compare_outputs.py $1 $2 exited $code: $(cat "$tmp/cmp.log")"
  return "$code"
}

fixtures="$src/tests/fixtures/ort-avx2"
saturating=0
for d in "$fixtures"/*/; do
  c=$(basename "$d")
  LD_PRELOAD=$shim node "$src/tests/interop/ort_run.js" "$d/model.onnx" "$d/inputs" "$tmp/$c.hidden" >/dev/null
  same "$tmp/$c.hidden" "$d/ort" ||
    fail "$c: ONNX Runtime under cpuid_avx2 differs from its AVX2-only outputs: $(tail -n 3 "$tmp/cmp.log")"
  if grep -qw -e avx512_vnni -e avx_vnni /proc/cpuinfo; then
    node "$src/tests/interop/ort_run.js" "$d/model.onnx" "$d/inputs" "$tmp/$c.host" >/dev/null
    same "$tmp/$c.host" "$d/ort" || saturating=$((saturating + 1))
  fi
done
if grep -qw -e avx512_vnni -e avx_vnni /proc/cpuinfo; then
  # The fixture README lists 17 cases whose AVX2 outputs saturate.
  [ "$saturating" -ge 10 ] || fail "only $saturating fixture cases differ on this VNNI host without the library"
fi

# What CPUID leaf 7 says, as the processes under the library ask it.
cc -O2 -o "$tmp/probe" "$src/tests/cpuid_flags.c"
host=$("$tmp/probe")
flag() { sed -n "s/.*\b$1=\([01]\).*/\1/p" <<<"$2"; }
[ "$(flag avx2 "$host")" = 1 ] || fail "the CPUID probe does not see AVX2 on this host: $host"
view=$(LD_PRELOAD=$shim "$tmp/probe")
[ "$view" = "avx2=1 avx512f=0 avx512_vnni=0 avx_vnni=0 amx_tile=0 amx_int8=0" ] || fail "under cpuid_avx2 the probe saw: $view"
view=$(CPUID_VIEW=avx512 LD_PRELOAD=$shim "$tmp/probe")
want="avx2=1 avx512f=$(flag avx512f "$host") avx512_vnni=$(flag avx512_vnni "$host") avx_vnni=$(flag avx_vnni "$host")"
want="$want amx_tile=0 amx_int8=0"
[ "$view" = "$want" ] || fail "under CPUID_VIEW=avx512 the probe saw '$view', not '$want' (host: $host)"
code=0
CPUID_VIEW=avx10 LD_PRELOAD=$shim /usr/bin/true 2>"$tmp/err" || code=$?
[ "$code" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^error: cpuid_avx2: CPUID_VIEW must be" "$tmp/err" ||
  fail "an unknown CPUID_VIEW was not refused (exit $code): $(cat "$tmp/err")"

code=0
BENCH_CPUID=avx10 QTOOL_BIN="$bin" bash "$src/scripts/bench.sh" speed >/dev/null 2>"$tmp/err" || code=$?
[ "$code" -eq 2 ] && grep -q "^error: BENCH_CPUID must be avx2, avx512 or unset, not 'avx10'" "$tmp/err" ||
  fail "scripts/bench.sh took BENCH_CPUID=avx10 (exit $code): $(cat "$tmp/err")"

isa=$(LD_PRELOAD=$shim env -u QTOOL_ISA "$bin/qrun" "$src/samples/digits_cnn.onnx" --data "$src/samples/digits/test" \
  --limit 1 --bench 1 --quiet | sed -n 's/.*, isa \([a-z0-9+-]*\), l2 .*/\1/p')
[ "$isa" = avx2 ] || fail "qrun under cpuid_avx2 ran its '$isa' kernels"
# Under CPUID_VIEW=avx512 qrun keeps what the host has but AMX.
isa=$(CPUID_VIEW=avx512 LD_PRELOAD=$shim env -u QTOOL_ISA "$bin/qrun" "$src/samples/digits_cnn.onnx" \
  --data "$src/samples/digits/test" --limit 1 --bench 1 --quiet | sed -n 's/.*, isa \([a-z0-9+-]*\), l2 .*/\1/p')
[[ -n "$isa" && "$isa" != *amx* ]] || fail "qrun under CPUID_VIEW=avx512 ran its '$isa' kernels"

# The tests' choice of ONNX Runtime target follows CPUID as MLAS does, so the
# suite under the library compares qrun with ONNX Runtime's AVX2 arithmetic.
target=$(LD_PRELOAD=$shim QTOOL_ORT_TARGET= bash "$src/tests/interop/ort_host_target.sh")
[ "$target" = ort-x86-avx2 ] || fail "tests/interop/ort_host_target.sh under cpuid_avx2 chose '$target'"

# Faults other than CPUID keep their meaning.
code=0
LD_PRELOAD=$shim /usr/bin/python3 -c 'import ctypes; ctypes.string_at(0)' 2>/dev/null || code=$?
[ "$code" -eq 139 ] || fail "a null read under cpuid_avx2 exited $code, not by SIGSEGV (139)"
code=0
LD_PRELOAD=$shim /usr/bin/python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)' 2>/dev/null || code=$?
[ "$code" -eq 139 ] || fail "kill -SEGV under cpuid_avx2 exited $code, not by SIGSEGV (139)"
LD_PRELOAD=$shim /usr/bin/python3 -c 'import os, signal; signal.signal(signal.SIGSEGV, signal.SIG_IGN); os.kill(os.getpid(), signal.SIGSEGV)' ||
  fail "kill -SEGV with SIGSEGV ignored ended the process under cpuid_avx2"
out=$(LD_PRELOAD=$shim /usr/bin/python3 -X faulthandler -c 'import ctypes; ctypes.string_at(0)' 2>&1 || true)
grep -q 'Fatal Python error: Segmentation fault' <<<"$out" ||
  fail "Python's own SIGSEGV handler (faulthandler) was not called under cpuid_avx2: $out"
echo "ONNX Runtime under cpuid_avx2 computed all $(ls -d "$fixtures"/*/ | wc -l) AVX2 fixtures exactly ($saturating differ without it); qrun chose avx2; CPUID_VIEW=avx512 hid AMX alone (host: $host)"
