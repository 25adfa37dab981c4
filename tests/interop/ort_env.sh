# Sourced by the tests that run ONNX Runtime: `bin` (the built tools, QTOOL_BIN),
# `src` (the repository, QTOOL_SOURCE_DIR), `tmp` (a scratch directory removed
# on exit), and onnxruntime-node installed (scripts/setup_ort.sh) if it is not.
bin=${QTOOL_BIN:?QTOOL_BIN must point at the build directory}
src=${QTOOL_SOURCE_DIR:?QTOOL_SOURCE_DIR must point at the repository}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -f "$src/.cache/ort/node_modules/onnxruntime-node/package.json" ] || "$src/scripts/setup_ort.sh"
# The target under which qrun computes as this host's ONNX Runtime does
# (tests comparing qrun with ONNX Runtime pass it as qrun --target).
ort_target=$("$src/tests/interop/ort_host_target.sh")
# snr NAME REF_DIR GOT_DIR MIN_DB: pooled SNR of two output directories (tests/zoo/snr_table.py).
snr() { /usr/bin/python3 "$src/tests/zoo/snr_table.py" "$@"; }
# both MODEL DATA NAME: qrun (computing as this host's ONNX Runtime) and ONNX
# Runtime outputs of MODEL on DATA into $tmp/{qrun,ort}_NAME.
both() {
  "$bin/qrun" "$1" --data "$2" -o "$tmp/qrun_$3" --target "$ort_target" --quiet
  node "$src/tests/interop/ort_run.js" "$1" "$2" "$tmp/ort_$3" >/dev/null
}
