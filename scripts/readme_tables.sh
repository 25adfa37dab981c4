#!/usr/bin/env bash
# The accuracy and speed tables of README.md, measured on the embedded digits
# sample with the built tools and printed as Markdown, with the date, the CPU
# and its vector ISA, so that every figure in the README says where it came
# from. Paste the output into README.md after a change that moves the figures.
#   scripts/readme_tables.sh
# Accuracy: qprofile on samples/digits/calib, qconvert per calibration method
# (default target ort-x86 otherwise: uint8 activations, 8-bit per-channel weights, QDQ), qrun on the 360 test digits
# against the float model and the labels. Speed: qrun --bench (median ms per
# sample of the whole model, single thread pinned to one CPU when taskset
# exists, then every CPU), float and int8.
#
#   scripts/readme_tables.sh --targets [TARGET...]
# instead prints the backend-target table: scripts/accuracy_table.sh --target
# for each TARGET (default: every built-in target, qconvert --list-targets) on
# the digits CNN and the zoo ($QTOOL_ZOO, default .cache/zoo), one row per
# target and one column per model, each cell "SNR vs float in dB / top-1
# agreement with float" as qrun computes with the target's arithmetic (a
# segmentation model: "IoU 0.953", its thresholded map's IoU with float's); "-"
# where qconvert or qrun could not handle the target.
set -euo pipefail
export LC_ALL=C
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${QTOOL_BIN:-$repo/build}
py=/usr/bin/python3
for tool in qprofile qconvert qrun; do
  [ -x "$bin/$tool" ] || { echo "error: $bin/$tool not found (build with scripts/setup.sh or set QTOOL_BIN)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model="$repo/samples/digits_cnn.onnx"
calib="$repo/samples/digits/calib"
test="$repo/samples/digits/test"
labels="$repo/samples/digits/test_labels.npy"

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
isa=$(grep -o -E 'avx512[a-z_0-9]*|avx_vnni|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ' | sed 's/ $//')
# Speed figures move with other work on the machine: the load is part of the record.
load=$(cut -d' ' -f1 /proc/loadavg)
cores=$(nproc)
if [ "${1:-}" = --targets ]; then
  shift
  targets=("$@")
  ((${#targets[@]})) || mapfile -t targets < <("$bin/qconvert" --list-targets | awk '{print $1}')
  args=()
  for t in "${targets[@]}"; do args+=(--target "$t"); done
  # The targets' arithmetic is emulated by qrun, so the figures do not depend on the host.
  echo "Measured $(date -u +%Y-%m-%d) by \`scripts/readme_tables.sh --targets\` (qrun emulates each target's arithmetic)."
  echo
  QTOOL_BUILD_DIR="$bin" "$repo/scripts/accuracy_table.sh" "${args[@]}" >"$tmp/targets.txt"
  $py - "$tmp/targets.txt" <<'PY'
import sys
rows, models, cells = [], [], {}
for line in open(sys.argv[1]).read().splitlines()[1:]:
    f = line.split()
    if len(f) < 4:
        continue
    target, model, snr = f[:3]
    ort = f[-1] if len(f) > 4 and f[-1] in ("ok", "fail") else "?"
    # A segmentation model's agreement is two words ("IoU 0.953").
    agree = " ".join(f[3:-1] if ort != "?" else f[3:4])
    if target not in rows:
        rows.append(target)
    if model not in models:
        models.append(model)
    cells[target, model] = "-" if snr == "-" else f"{snr} dB / {agree}" + ("" if ort == "ok" else " (ONNX Runtime: fails)")
print("| target | " + " | ".join(models) + " |")
print("|---|" + "---|" * len(models))
for t in rows:
    print(f"| `{t}` | " + " | ".join(cells.get((t, m), "-") for m in models) + " |")
PY
  exit 0
fi

echo "Measured $(date -u +%Y-%m-%d) by \`scripts/readme_tables.sh\` on $cpu, $cores cores ($isa), load average $load."
echo

"$bin/qprofile" "$model" --data "$calib" -o "$tmp/profile.json" --quiet
echo "| calibration | SNR vs float | top-1 agreement | accuracy float | accuracy int8 |"
echo "|---|---|---|---|---|"
for calib_method in minmax percentile kl mse; do
  "$bin/qconvert" "$model" --profile "$tmp/profile.json" -o "$tmp/$calib_method.onnx" --calibration "$calib_method"
  "$bin/qrun" "$tmp/$calib_method.onnx" --data "$test" --reference "$model" --labels "$labels" --json --quiet \
    >"$tmp/$calib_method.json"
  $py - "$calib_method" "$tmp/$calib_method.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[2]))
print(f"| {sys.argv[1]} | {d['snr_db']:.1f} dB | {100 * d['top1_agreement']:.2f}% "
      f"| {d['reference_accuracy']['top1']:.2f}% | {d['accuracy']['top1']:.2f}% |")
PY
done
echo

# One thread pinned to the first CPU this process may run on (CPU 0 may be
# outside a container's cpuset).
pin=()
command -v taskset >/dev/null && pin=(taskset -c "$($py -c 'import os; print(min(os.sched_getaffinity(0)))')")
median() { sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'; }
echo "| model | --threads 1 | --threads $cores |"
echo "|---|---|---|"
for m in float int8; do
  f=$model
  [ "$m" = int8 ] && f="$tmp/minmax.onnx"
  one=$("${pin[@]}" "$bin/qrun" "$f" --data "$test" --limit 100 --threads 1 --bench 10 --quiet | median)
  all=$("$bin/qrun" "$f" --data "$test" --limit 100 --threads "$cores" --bench 10 --quiet | median)
  echo "| digits_cnn $m | $one ms | $all ms |"
done
