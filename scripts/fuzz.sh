#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.cpp) with clang-14 into
# build-fuzz/ (QTOOL_FUZZ_BUILD_DIR overrides) and runs each one for SECONDS
# (default 60) from its seed corpus tests/fuzz/corpus/<name>/. Exits non-zero
# when any target finds a crash, a sanitizer report, a leak, an out-of-memory
# or a timeout; the reproducer is kept in build-fuzz/artifacts/<name>/ (never in
# the repository). Inputs the fuzzer generates go to build-fuzz/corpus/<name>/.
#   scripts/fuzz.sh 300            # every target, 300 s each
#   scripts/fuzz.sh 20 fuzz_npy    # one target
# Reproduce a finding: build-fuzz/fuzz_npy build-fuzz/artifacts/fuzz_npy/crash-...
# QTOOL_FUZZ_SEED=N fixes libFuzzer's random seed (default: a new one per run)
# and QTOOL_FUZZ_RUNS=N stops a target after N inputs (SECONDS still bounds it).
# CI sets both, so its brief run repeats (up to libFuzzer's timing-dependent
# choices) the inputs a local run of the same command checked, however fast the
# machine; finding new bugs is the job of long local runs with a fresh seed.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${QTOOL_FUZZ_BUILD_DIR:-$repo/build-fuzz}
seconds=${1:-60}
shift || true

# clang + the libFuzzer runtime (Debian packages); the project's own
# dependencies come from scripts/setup.sh.
if ! command -v clang++-14 >/dev/null || ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz: installing clang-14 libclang-rt-14-dev" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang-14 libclang-rt-14-dev >/dev/null
fi

mkdir -p "$build"
log="$build/build.log"
# Ninja where it is there (scripts/setup.sh installs it): it keeps a compilation
# on every core, where Make finishes one CMake target before the next.
generator=()
[ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null && generator=(-G Ninja)
# Debug with -O1: assertions stay on (they are invariants hostile input must not break);
# -g1, line tables: reports name files and lines, and it compiles faster than -g.
# CI builds the rest of this tree too and runs the unit and e2e suite in it
# (.ci/run's sanitizer job).
if ! { CC=clang-14 CXX=clang++-14 cmake -S "$repo" -B "$build" "${generator[@]}" -DQTOOL_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
         -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" &&
       cmake --build "$build" -j"$(nproc)" --target $(cd "$repo/tests/fuzz" && ls fuzz_*.cpp | sed 's/\.cpp$//'); } >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "error: fuzz build failed; full log in $log (run scripts/setup.sh first for the dependencies)" >&2
  exit 1
fi

targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in "$repo"/tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
failed=()
for t in "${targets[@]}"; do
  name=${t#fuzz_}
  corpus="$build/corpus/$name"
  if [ -n "${QTOOL_FUZZ_RUNS:-}" ]; then
    # A fixed run starts from the committed seeds alone, as in a fresh clone.
    corpus="$build/corpus-fixed/$name"
    rm -rf "$corpus"
  fi
  artifacts="$build/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  seeds="$repo/tests/fuzz/corpus/$name"
  [ -d "$seeds" ] || seeds=""
  echo "== $t: ${seconds}s"
  # -rss_limit_mb: a hostile input must be refused before allocating, not fill memory.
  # -timeout: nor may it make one input run for long.
  if "$build/$t" -seed="${QTOOL_FUZZ_SEED:-0}" -runs="${QTOOL_FUZZ_RUNS:--1}" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=65536 -print_final_stats=1 \
       -artifact_prefix="$artifacts/" "$corpus" $seeds >"$build/$t.log" 2>&1; then
    grep -E '^stat::number_of_executed_units|^stat::new_units_added|^Done' "$build/$t.log" | tr '\n' ' '
    echo
  else
    tail -n 60 "$build/$t.log" >&2
    echo "FAIL: $t (log $build/$t.log, reproducer in $artifacts/)" >&2
    failed+=("$t")
  fi
done
if ((${#failed[@]})); then
  echo "error: fuzzing found problems in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: no findings in ${targets[*]} (${seconds}s each)"
