#!/usr/bin/env bash
# Builds the model zoo for tests/zoo/test_zoo.sh: torchvision resnet18,
# mobilenet_v2, shufflenet_v2_x0_5, efficientnet_b0, squeezenet1_1 and a
# 2-layer transformer encoder, random weights (fixed seed), exported to ONNX
# with 8 random inputs and PyTorch's outputs as .npy; and the same
# architectures trained within minutes of CPU on scikit-learn's digits (NAME_digits:
# calibration and test images, labels; see scripts/make_zoo.py), and a
# DBNet-style segmentation model trained on canvases of digits
# (fpn_text_digits: ground-truth masks instead of labels); and, only with
# --only byte_lm, a byte-level language model trained on Python's standard
# library sources (byte_lm, scripts/make_byte_lm.py: next-byte targets, bits
# per byte; scripts/weight_rounding_table.sh measures it).
# The models are too big to commit: they go to ${ZOO_DIR:-.cache/zoo}
# (gitignored). Installs Debian's python3-torch, python3-torchvision and
# python3-sklearn when missing (a fresh CI machine): several hundred MB; and
# libopenblas0-pthread: torch's libblas.so.3 is otherwise Debian's unoptimised
# reference BLAS (libblas3), since OpenBLAS is only a recommendation of
# python3-torch and the install below skips recommendations. Idempotent: models
# already exported are skipped. Extra arguments go to make_zoo.py
# (--only NAME,..., --force). Runs that overlap (zoo tests under ctest -j)
# take turns on a lock in the zoo directory for the packages, then share the
# models (a lock each, make_zoo.py), so a model is exported once and two runs
# train two models at a time.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
zoo=${ZOO_DIR:-$repo/.cache/zoo}

# Held while the packages install: overlapping runs do not install at once.
mkdir -p "$zoo"
exec 9>"$zoo/.lock"
flock 9

pkgs=(python3-torch python3-torchvision python3-sklearn python3-numpy python3-onnx libopenblas0-pthread)
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

exec 9>&-  # the packages are in; make_zoo.py locks each model

start=$SECONDS
/usr/bin/python3 "$repo/scripts/make_zoo.py" --out "$zoo" "$@"
echo "make_zoo: zoo ready in $zoo ($((SECONDS - start)) s)" >&2
