#!/usr/bin/env bash
# Prints the qtool target that computes as ONNX Runtime does on this host,
# chosen as MLAS chooses its u8 x s8 kernels (onnxruntime/core/mlas/lib/
# platform.cpp): VPDPBUSD (AVX512-VNNI or AVX-VNNI) accumulates exactly in
# int32 -> ort-x86-vnni; AVX2 / AVX-512 without VNNI saturates pairs to int16
# -> ort-x86-avx2; ARM64 computes exactly -> ort-arm64. QTOOL_ORT_TARGET
# overrides the choice (e.g. to test the AVX2 emulation's wiring on any host).
set -euo pipefail
if [ -n "${QTOOL_ORT_TARGET:-}" ]; then
  echo "$QTOOL_ORT_TARGET"
  exit 0
fi
case "$(uname -m)" in
  x86_64 | amd64)
    # What CPUID says, as MLAS asks it (so that under scripts/cpuid_avx2.c,
    # which hides VNNI from CPUID but not from /proc/cpuinfo, the choice
    # follows the CPU ONNX Runtime sees): leaf 7 ECX bit 11 AVX512_VNNI,
    # leaf 7 subleaf 1 EAX bit 4 AVX_VNNI.
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    cat >"$dir/vnni.c" <<'C'
#include <cpuid.h>
#include <stdio.h>
int main(void) {
  unsigned a, b, c, d, a1, b1, c1, d1;
  if (__get_cpuid_max(0, 0) < 7) return puts("0"), 0;
  __cpuid_count(7, 0, a, b, c, d);
  __cpuid_count(7, 1, a1, b1, c1, d1);
  printf("%u\n", ((c >> 11) & 1) | ((a1 >> 4) & 1));
  return 0;
}
C
    cc -O0 -o "$dir/vnni" "$dir/vnni.c"
    if [ "$("$dir/vnni")" = 1 ]; then echo ort-x86-vnni; else echo ort-x86-avx2; fi ;;
  aarch64 | arm64) echo ort-arm64 ;;
  *) echo "ort_host_target: no ONNX Runtime target for $(uname -m)" >&2; exit 1 ;;
esac
