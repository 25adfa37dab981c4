#!/usr/bin/env bash
# Writes DIR/libonnxruntime.so.1 (ort_lib_patched.sh DIR): the library of ONNX
# Runtime for Node (scripts/setup_ort.sh) with its CPUIDs patched by
# scripts/cpuid_patch.py, for the AVX2 view on hosts where CPUID cannot fault
# (scripts/cpuid_avx2.c, CPUID_PATCHED=1). The Node binding loads it instead
# of the installed one when DIR leads LD_LIBRARY_PATH (the binding's RUNPATH,
# $ORIGIN, is searched after it). ONNX Runtime not installed: one `error:`
# line, exit 2.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lib=$repo/.cache/ort/node_modules/onnxruntime-node/bin/napi-v3/linux/x64/libonnxruntime.so.1
[ -f "$lib" ] || { echo "error: $lib not found (run scripts/setup_ort.sh)" >&2; exit 2; }
mkdir -p "$1"
/usr/bin/python3 "$repo/scripts/cpuid_patch.py" "$lib" "$1/libonnxruntime.so.1" >/dev/null
