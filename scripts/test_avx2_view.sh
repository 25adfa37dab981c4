#!/usr/bin/env bash
# Runs the unit, e2e and interop tests as an AVX2-only x86 host runs them
# (issue #22): scripts/cpuid_avx2.c hides AVX-512, AVX-VNNI and AMX from
# CPUID, so qrun takes its AVX2 kernels, ONNX Runtime its saturating u8 x s8
# ones, and the tests' choice of ONNX Runtime target follows. Extra arguments
# go to ctest. The build must exist (scripts/setup.sh); QTOOL_BUILD_DIR as in
# scripts/test.sh.
#  - Host with cpuid_fault: CPUID faults in every process of the suite.
#  - Host without it: qtool's programs in the build directory are patched in
#    place for the run (scripts/cpuid_patch.py; the originals wait in
#    BUILD/unpatched and are put back after it, whatever the result), ONNX
#    Runtime's library is found patched in BUILD/ort-view (LD_LIBRARY_PATH),
#    and CPUID_PATCHED=1 tells the library so. Other programs (Python, Node
#    itself) see the host as it is.
#  - Host without AVX-512 and AVX-VNNI: an AVX2 host already; nothing to hide.
# test_cpuid_avx2 is left out: it compares the view with the host.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${QTOOL_BUILD_DIR:-$repo/build}
[ -x "$build/qrun" ] || { echo "error: $build/qrun not found (run scripts/setup.sh)" >&2; exit 2; }
if ! grep -qw -e avx512f -e avx_vnni /proc/cpuinfo; then
  echo "this host has no AVX-512 or AVX-VNNI: the suite as it runs here is the AVX2 host's"
  exit 0
fi
"$repo/scripts/setup_ort.sh"
cc -O2 -shared -fPIC -o "$build/cpuid_avx2.so" "$repo/scripts/cpuid_avx2.c" -ldl
run_ctest() {
  LD_PRELOAD="$build/cpuid_avx2.so" CPUID_VIEW=avx2 ctest --test-dir "$build" --output-on-failure \
    -j"$(nproc)" -L 'unit|e2e|interop' -E '^interop\.test_cpuid_avx2$' "$@"
}
if grep -qw cpuid_fault /proc/cpuinfo; then
  echo "CPUID faults on this host: every process of the suite sees an AVX2-only CPU"
  run_ctest "$@"
  exit
fi

echo "no cpuid_fault on this host: qtool's programs and ONNX Runtime's library run patched (scripts/cpuid_patch.py)"
keep="$build/unpatched"
# Puts every original back (also after an interrupted run: the next run starts with it).
restore() {
  local f
  for f in "$keep"/*; do [ ! -f "$f" ] || mv -f "$f" "$build/"; done
}
restore
mkdir -p "$keep"
trap restore EXIT
patched=()
for f in "$build"/*; do
  [[ -f "$f" && -x "$f" && "$f" != *.so && "$(head -c 4 "$f")" == $'\x7fELF' ]] || continue
  mv "$f" "$keep/"
  /usr/bin/python3 "$repo/scripts/cpuid_patch.py" "$keep/${f##*/}" "$f" >/dev/null
  patched+=("${f##*/}")
done
echo "patched: ${patched[*]} and libonnxruntime.so.1"
"$repo/scripts/ort_lib_patched.sh" "$build/ort-view"
CPUID_PATCHED=1 LD_LIBRARY_PATH="$build/ort-view${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" run_ctest "$@"
