#!/usr/bin/env bash
# Builds tests/cpuid_flags.c into OUT (cpuid_flags.sh OUT). Under
# CPUID_PATCHED=1 (the AVX2 view on a host where CPUID cannot fault:
# scripts/cpuid_patch.py, scripts/cpuid_avx2.c) OUT's CPUIDs are patched as
# well, so that it sees the CPU the patched programs see.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
cc -O0 -o "$1" "$here/cpuid_flags.c"
if [ -n "${CPUID_PATCHED:-}" ]; then
  /usr/bin/python3 "$here/../scripts/cpuid_patch.py" "$1" "$1" >/dev/null
fi
