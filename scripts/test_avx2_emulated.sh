#!/usr/bin/env bash
# Runs the unit suite, the end-to-end tests of the main job and ONNX
# Runtime's interop on an emulated AVX2-only x86 CPU (issue #22): QEMU's
# user-mode emulator (qemu-x86_64, TCG, `-cpu max`) executes AVX2, FMA and the
# rest of x86-64 but no AVX-512 instruction at all, so an EVEX instruction that
# leaked into a path taken on an AVX2 host faults (SIGILL) here, where
# scripts/test_avx2_view.sh, which only hides AVX-512 from CPUID on a host
# that has it, would run it and pass. The emulated CPU also reports its own
# caches (a 512 KiB L2), so the cache blocks are those of a smaller CPU.
# ONNX Runtime (Node.js and its library) runs on the same CPU: it must compute
# every case of tests/fixtures/ort-avx2 (what it computed on an AVX2-only AMD
# EPYC) bit for bit, and tests/interop/test_ort_avx2_view.sh then compares
# qrun with it there. Slower than the host by 10-50x: about 2.5 minutes on
# 2 cores in all. The build must exist (scripts/setup.sh); QTOOL_BUILD_DIR as
# in scripts/test.sh. Extra arguments go to unit_tests.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${QTOOL_BUILD_DIR:-$repo/build}
[ -x "$build/unit_tests" ] || { echo "error: $build/unit_tests not found (run scripts/setup.sh)" >&2; exit 2; }
build=$(cd "$build" && pwd)  # the wrappers below name its programs from any directory
command -v qemu-x86_64 >/dev/null || { echo "error: qemu-x86_64 not found (Debian's qemu-user; scripts/setup.sh installs it)" >&2; exit 2; }
emu=(qemu-x86_64 -cpu max)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# wrap PROGRAM SCRIPT: SCRIPT runs PROGRAM (an absolute path) under the emulator.
wrap() {
  printf '#!/bin/sh\nexec %s "%s" "$@"\n' "${emu[*]}" "$1" >"$2"
  chmod +x "$2"
}

# The harness can fail: an AVX-512 instruction must fault under the emulator
# and AVX2 must not, or the runs below would prove nothing.
printf 'int main(void) { __asm__ volatile("vpxord %%zmm1, %%zmm1, %%zmm1"); return 0; }\n' >"$work/evex.c"
printf 'int main(void) { __asm__ volatile("vpxor %%ymm1, %%ymm1, %%ymm1"); return 0; }\n' >"$work/vex.c"
cc -O0 -o "$work/evex" "$work/evex.c" && cc -O0 -o "$work/vex" "$work/vex.c"
"${emu[@]}" "$work/vex" || { echo "error: the emulator does not run AVX2" >&2; exit 1; }
code=0
{ "${emu[@]}" "$work/evex"; } 2>/dev/null || code=$?
[ "$code" -eq 132 ] || { echo "error: an AVX-512 instruction did not fault (SIGILL) under the emulator: exit $code" >&2; exit 1; }
# And qtool sees that CPU: its AVX2 kernels, not the portable ones.
isa=$("${emu[@]}" "$build/step_bench" "$repo/samples/digits_cnn.onnx" "$repo/samples/digits/test/0000.npy" 2 | head -n 1)
grep -q 'isa avx2,' <<<"$isa" || { echo "error: qtool under the emulator does not take its AVX2 kernels: $isa" >&2; exit 1; }
echo "emulated CPU (qemu-x86_64 -cpu max): AVX2 runs, an AVX-512 instruction faults; qtool: ${isa#*, }"

# [huge_pages] is left out: the emulator takes madvise(MADV_HUGEPAGE) as a
# hint it ignores, so the pages are never advised, whatever the library does.
echo "== unit suite"
"${emu[@]}" "$build/unit_tests" '~[huge_pages]' "$@"

# The main job's end-to-end tests, with qtool's programs under the emulator:
# QTOOL_BIN points at wrappers of every program in the build directory.
echo "== end-to-end tests"
mkdir -p "$work/bin" "$work/path"
for f in "$build"/*; do
  if [[ -f "$f" && -x "$f" && "$(head -c 4 "$f")" == $'\x7fELF' ]]; then
    wrap "$f" "$work/bin/${f##*/}"
  else
    ln -s "$f" "$work/bin/${f##*/}"
  fi
done
for t in test_pipeline test_ort_x86_int8_activations test_target_ort_avx2 test_gates_nonfinite test_dynamic; do
  start=$SECONDS
  QTOOL_BIN="$work/bin" QTOOL_SOURCE_DIR="$repo" bash "$repo/tests/e2e/$t.sh" >"$work/$t.log" 2>&1 ||
    { cat "$work/$t.log"; echo "error: $t failed on the emulated AVX2 CPU" >&2; exit 1; }
  echo "$t passed ($((SECONDS - start)) s)"
done

# The zoo's models at full size (paths the unit suite's small shapes may not
# take: weights beyond the L2, other blocks): one sample each, float and, for
# resnet18 and mobilenet_v2, int8 (the default target's model, made on the
# host), on the emulated CPU; the outputs must equal the host's under
# QTOOL_ISA=avx2 bit for bit (the same kernels; blocks for another L2 change
# no result), which tests/zoo/test_zoo.sh holds to PyTorch's. Needs the zoo
# (scripts/make_zoo.sh, which scripts/test.sh runs); under QTOOL_CI=1 a
# missing zoo fails.
echo "== zoo models"
zoo=${ZOO_DIR:-$repo/.cache/zoo}
if [ ! -f "$zoo/resnet18/DONE" ]; then
  [ "${QTOOL_CI:-0}" != 1 ] || { echo "error: the zoo is not built in $zoo (scripts/make_zoo.sh)" >&2; exit 1; }
  echo "the zoo is not built in $zoo (scripts/make_zoo.sh): its models skipped"
else
  for name in resnet18 mobilenet_v2 shufflenet_v2_x0_5 efficientnet_b0 squeezenet1_1 transformer_encoder; do
    d="$zoo/$name"
    mkdir -p "$work/zoo/$name/data"
    ln -s "$d/inputs/sample_0.npy" "$work/zoo/$name/data/"
    models=("$d/model.onnx")
    if [ "$name" = resnet18 ] || [ "$name" = mobilenet_v2 ]; then
      "$build/qprofile" "$d/model.onnx" --data "$d/inputs" -o "$work/zoo/$name/p.json" --quiet
      "$build/qconvert" "$d/model.onnx" --profile "$work/zoo/$name/p.json" -o "$work/zoo/$name/int8.onnx" >/dev/null
      models+=("$work/zoo/$name/int8.onnx")
    fi
    for m in "${models[@]}"; do
      out="$work/zoo/$name/$(basename "$m" .onnx)"
      start=$SECONDS
      QTOOL_ISA=avx2 "$build/qrun" "$m" --data "$work/zoo/$name/data" -o "$out.host" --quiet >/dev/null
      "$work/bin/qrun" "$m" --data "$work/zoo/$name/data" -o "$out.emulated" --quiet >/dev/null
      /usr/bin/python3 "$repo/tests/interop/compare_outputs.py" "$out.host" "$out.emulated" --exact >"$out.log" 2>&1 ||
        { cat "$out.log"; echo "error: $name ($(basename "$m")) differs on the emulated AVX2 CPU" >&2; exit 1; }
      echo "$name $(basename "$m"): the host's AVX2 bits ($((SECONDS - start)) s)"
    done
  done
fi

# ONNX Runtime on the same CPU: node on PATH runs under the emulator.
echo "== ONNX Runtime on the emulated CPU"
"$repo/scripts/setup_ort.sh"
wrap "$(command -v node)" "$work/path/node"
source "$repo/tests/interop/ort_fixtures.sh"
code=0
ort_fixtures_exact "$repo" "$work/ort" "$work/cmp.log" "$work/path/node" || code=$?
[ "$code" -eq 0 ] ||
  { cat "$work/cmp.log"; echo "error: ONNX Runtime on the emulated CPU differs from tests/fixtures/ort-avx2 ($code)" >&2; exit 1; }
echo "ONNX Runtime computed all $(grep -c ': exact: ' "$work/cmp.log") fixture cases bit for bit"
start=$SECONDS
PATH="$work/path:$PATH" QTOOL_AVX2_EMULATED=1 QTOOL_ORT_TARGET=ort-x86-avx2 QTOOL_BIN="$work/bin" QTOOL_SOURCE_DIR="$repo" \
  bash "$repo/tests/interop/test_ort_avx2_view.sh" >"$work/ort_view.log" 2>&1 ||
  { cat "$work/ort_view.log"; echo "error: test_ort_avx2_view failed on the emulated AVX2 CPU" >&2; exit 1; }
echo "test_ort_avx2_view passed ($((SECONDS - start)) s)"
