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
    # follows the CPU ONNX Runtime sees; patched too under CPUID_PATCHED=1).
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    "$(dirname "${BASH_SOURCE[0]}")/../cpuid_flags.sh" "$dir/cpuid_flags"
    if grep -q -e 'avx512_vnni=1' -e 'avx_vnni=1' <<<"$("$dir/cpuid_flags")"; then echo ort-x86-vnni; else echo ort-x86-avx2; fi ;;
  aarch64 | arm64) echo ort-arm64 ;;
  *) echo "ort_host_target: no ONNX Runtime target for $(uname -m)" >&2; exit 1 ;;
esac
