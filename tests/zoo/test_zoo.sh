#!/usr/bin/env bash
# Zoo test: runs `qrun MODEL --data INPUTS -o OUT` for every model of the zoo
# (scripts/make_zoo.sh: torchvision CNNs and a transformer encoder exported
# from PyTorch) and checks SNR >= 80 dB against PyTorch's outputs. Builds the
# zoo first when it is missing, which on a fresh machine installs torch and
# takes a few minutes (see make_zoo.sh).
set -euo pipefail
bin=${QTOOL_BIN:?QTOOL_BIN must point at the build directory}
src=${QTOOL_SOURCE_DIR:?QTOOL_SOURCE_DIR must point at the repository}
export ZOO_DIR=${ZOO_DIR:-$src/.cache/zoo}
min_snr=80
models=(resnet18 mobilenet_v2 shufflenet_v2_x0_5 efficientnet_b0 squeezenet1_1 transformer_encoder)

bash "$src/scripts/make_zoo.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=()
for name in "${models[@]}"; do
  d="$ZOO_DIR/$name"
  if [ ! -f "$d/DONE" ]; then
    echo "FAIL $name: not in the zoo ($d)"
    failed+=("$name")
    continue
  fi
  start=$SECONDS
  if ! "$bin/qrun" "$d/model.onnx" --data "$d/inputs" -o "$tmp/$name" --quiet >"$tmp/$name.log" 2>&1; then
    echo "FAIL $name: qrun: $(grep -m1 '^error:' "$tmp/$name.log" || tail -n1 "$tmp/$name.log")"
    failed+=("$name")
    continue
  fi
  /usr/bin/python3 "$src/tests/zoo/compare_snr.py" --expected "$d/expected" --got "$tmp/$name" \
    --min-snr "$min_snr" --name "$name ($((SECONDS - start)) s)" || failed+=("$name")
done
if ((${#failed[@]})); then
  echo "zoo: ${#failed[@]} of ${#models[@]} models failed: ${failed[*]}" >&2
  exit 1
fi
echo "zoo: all ${#models[@]} models pass"
