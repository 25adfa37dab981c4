#!/usr/bin/env bash
# Builds the model zoo for tests/zoo/test_zoo.sh: torchvision resnet18,
# mobilenet_v2, shufflenet_v2_x0_5, efficientnet_b0, squeezenet1_1 and a
# 2-layer transformer encoder, random weights (fixed seed), exported to ONNX
# with 8 random inputs and PyTorch's outputs as .npy (scripts/make_zoo.py).
# The models are too big to commit: they go to ${ZOO_DIR:-.cache/zoo}
# (gitignored). Installs Debian's python3-torch and python3-torchvision when
# missing (a fresh CI machine): several hundred MB. Idempotent: models
# already exported are skipped. Extra arguments go to make_zoo.py
# (--only NAME,..., --force).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
zoo=${ZOO_DIR:-$repo/.cache/zoo}

pkgs=(python3-torch python3-torchvision python3-numpy python3-onnx)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "make_zoo: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  start=$SECONDS
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "make_zoo: installed in $((SECONDS - start)) s" >&2
fi

mkdir -p "$zoo"
start=$SECONDS
/usr/bin/python3 "$repo/scripts/make_zoo.py" --out "$zoo" "$@"
echo "make_zoo: zoo ready in $zoo ($((SECONDS - start)) s)" >&2
