#!/usr/bin/env bash
# scripts/cpuid_avx2.c (BENCH_CPUID=avx2 of scripts/bench.sh) shows a process
# an AVX2-only CPU. Checked where it counts, in ONNX Runtime: under it, ONNX
# Runtime computes every case of tests/fixtures/ort-avx2 (what it computed on
# an AVX2-only AMD EPYC) bit for bit, so it runs the kernels such a CPU runs.
# On a host with VNNI the same runs without the library must differ on the
# saturating cases, or the check proves nothing. qrun, free of QTOOL_ISA,
# picks its AVX2 kernels under it. A fault that is not a CPUID still ends the
# process by SIGSEGV, and a handler the program installs still gets it.
# Where CPUID cannot fault (no cpuid_fault), the library must refuse: exit 2
# and one `error:` line, before the program runs.
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

# differing DIR_A DIR_B: how many of DIR_B's .npy files DIR_A holds with other bits.
differing() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import glob, os, sys
import numpy as np
a_dir, b_dir = sys.argv[1:]
files = sorted(glob.glob(os.path.join(b_dir, "*.npy")))
assert files, "no outputs in " + b_dir
print(sum(not np.array_equal(np.load(os.path.join(a_dir, os.path.basename(f))), np.load(f), equal_nan=True) for f in files))
PY
}

fixtures="$src/tests/fixtures/ort-avx2"
saturating=0
for d in "$fixtures"/*/; do
  c=$(basename "$d")
  LD_PRELOAD=$shim node "$src/tests/interop/ort_run.js" "$d/model.onnx" "$d/inputs" "$tmp/$c.hidden" >/dev/null
  n=$(differing "$tmp/$c.hidden" "$d/ort")
  [ "$n" -eq 0 ] || fail "$c: ONNX Runtime under cpuid_avx2 differs from its AVX2-only outputs on $n samples"
  if grep -qw -e avx512_vnni -e avx_vnni /proc/cpuinfo; then
    node "$src/tests/interop/ort_run.js" "$d/model.onnx" "$d/inputs" "$tmp/$c.host" >/dev/null
    [ "$(differing "$tmp/$c.host" "$d/ort")" -eq 0 ] || saturating=$((saturating + 1))
  fi
done
if grep -qw -e avx512_vnni -e avx_vnni /proc/cpuinfo; then
  # The fixture README lists 17 cases whose AVX2 outputs saturate.
  [ "$saturating" -ge 10 ] || fail "only $saturating fixture cases differ on this VNNI host without the library"
fi

isa=$(LD_PRELOAD=$shim env -u QTOOL_ISA "$bin/qrun" "$src/samples/digits_cnn.onnx" --data "$src/samples/digits/test" \
  --limit 1 --bench 1 --quiet | sed -n 's/.*, isa \([a-z0-9+-]*\)).*/\1/p')
[ "$isa" = avx2 ] || fail "qrun under cpuid_avx2 ran its '$isa' kernels"

# Faults other than CPUID keep their meaning.
code=0
LD_PRELOAD=$shim /usr/bin/python3 -c 'import ctypes; ctypes.string_at(0)' 2>/dev/null || code=$?
[ "$code" -eq 139 ] || fail "a null read under cpuid_avx2 exited $code, not by SIGSEGV (139)"
code=0
LD_PRELOAD=$shim /usr/bin/python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)' 2>/dev/null || code=$?
[ "$code" -eq 139 ] || fail "kill -SEGV under cpuid_avx2 exited $code, not by SIGSEGV (139)"
out=$(LD_PRELOAD=$shim /usr/bin/python3 -X faulthandler -c 'import ctypes; ctypes.string_at(0)' 2>&1 || true)
grep -q 'Fatal Python error: Segmentation fault' <<<"$out" ||
  fail "Python's own SIGSEGV handler (faulthandler) was not called under cpuid_avx2: $out"
echo "ONNX Runtime under cpuid_avx2 computed all $(ls -d "$fixtures"/*/ | wc -l) AVX2 fixtures exactly ($saturating differ without it); qrun chose avx2"
