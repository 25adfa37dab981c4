#!/usr/bin/env bash
# Benchmarks of qtool. Each section is independent; run all, or name sections:
#   scripts/bench.sh [qprofile-memory ...]
# Builds are not triggered here: run scripts/setup.sh first.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${QTOOL_BIN:-$repo/build}
py=/usr/bin/python3
work=$(mktemp -d "${TMPDIR:-/tmp}/qtool_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# ---------------------------------------------------------------------------
# qprofile memory: peak RSS must stay flat in the number of samples (DESIGN
# "Profiling memory stays flat"): histograms are updated per sample and never
# keep activations. Profiles 10 and 1000 samples of the digits model and fails
# when the larger run's peak RSS exceeds the smaller's by more than 10%.
# ---------------------------------------------------------------------------
bench_qprofile_memory() {
  echo "== qprofile memory (peak RSS, --limit 10 vs 1000)"
  if [ ! -x /usr/bin/time ]; then
    echo "installing GNU time (/usr/bin/time)" >&2
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq time >/dev/null
  fi
  local data="$work/digits1000"
  mkdir -p "$data"
  # 1000 samples: the 200 calibration digits, each also shifted and scaled, so
  # that later samples keep widening some ranges (the histograms must grow).
  $py - "$repo/samples/digits/calib" "$data" <<'PY'
import glob, os, sys
import numpy as np
src = sorted(glob.glob(os.path.join(sys.argv[1], "*.npy")))
for i in range(1000):
    x = np.load(src[i % len(src)])
    k = i // len(src)
    np.save(os.path.join(sys.argv[2], f"{i:04d}.npy"), (x * (1 + 0.25 * k) + 0.1 * k).astype(np.float32))
PY
  local rss10 rss1000
  rss10=$(/usr/bin/time -f %M "$bin/qprofile" "$repo/samples/digits_cnn.onnx" --data "$data" --limit 10 \
    -o "$work/p10.json" --quiet 2>&1 >/dev/null | tail -n 1)
  rss1000=$(/usr/bin/time -f %M "$bin/qprofile" "$repo/samples/digits_cnn.onnx" --data "$data" --limit 1000 \
    -o "$work/p1000.json" --quiet 2>&1 >/dev/null | tail -n 1)
  local ratio
  ratio=$(awk -v a="$rss10" -v b="$rss1000" 'BEGIN { printf "%.3f", b / a }')
  echo "peak RSS: 10 samples ${rss10} KiB, 1000 samples ${rss1000} KiB, ratio ${ratio}"
  awk -v r="$ratio" 'BEGIN { exit !(r <= 1.10) }' || { echo "FAIL: peak RSS grew more than 10% with 100x the samples" >&2; return 1; }
}

sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(qprofile-memory)
for s in "${sections[@]}"; do
  case $s in
    qprofile-memory) bench_qprofile_memory ;;
    *) echo "error: unknown bench section '$s' (known: qprofile-memory)" >&2; exit 2 ;;
  esac
done
