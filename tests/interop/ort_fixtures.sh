# Sourced: ort_fixtures_exact, ONNX Runtime over every case of
# tests/fixtures/ort-avx2 (what it computed on an AVX2-only AMD EPYC),
# compared with them bit for bit. Used by tests/interop/test_cpuid_avx2.sh
# (in each CPUID view) and scripts/test_avx2_emulated.sh (on an emulated CPU).

# ort_fixtures_exact SRC OUT LOG NODE...: runs `NODE... ort_run.js` (node, or
# a command that runs it: a view, an emulator) once over every fixture, the
# outputs into OUT/CASE, then compare_outputs.py --each compares each with
# the fixture's outputs (--exact), one line per output set (`CASE: exact:
# E/N outputs equal`) in LOG. Status: 0 when all are equal, 1 when some
# differ, 2 on bad input (compare_outputs.py's), 3 when ONNX Runtime failed.
ort_fixtures_exact() {
  local src=$1 out=$2 log=$3 d c code=0 runs=()
  shift 3
  mkdir -p "$out"
  : >"$out/checks.tsv"
  for d in "$src/tests/fixtures/ort-avx2"/*/; do
    c=$(basename "$d")
    runs+=("$d/model.onnx" "$d/inputs" "$out/$c")
    printf '%s\t%q %q --exact\n' "$c" "$out/$c" "$d/ort" >>"$out/checks.tsv"
  done
  "$@" "$src/tests/interop/ort_run.js" "${runs[@]}" >/dev/null || return 3
  /usr/bin/python3 "$src/tests/interop/compare_outputs.py" --each "$out/checks.tsv" >"$log" 2>&1 || code=$?
  return "$code"
}
