#!/usr/bin/env bash
# The main job on the embedded sample: profile the float digits CNN on its
# calibration set, quantize it (uint8 activations, int8 per-channel weights,
# QDQ), then run the quantized model against the float one on the test set.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${QTOOL_BUILD_DIR:-$repo/build}
# Builds the three tools only (the tests are scripts/test.sh's business),
# without debug information (a quarter of the compile time; scripts/setup.sh
# -DQTOOL_DEBUG_INFO=ON brings it back) and with precompiled headers
# (QTOOL_PCH, docs/development.md: about a tenth less CPU). Measured on a
# 2-core Xeon (AVX-512 VNNI), GCC 12, no ccache: about 360 CPU-seconds of
# compiling; from a fresh clone on an idle machine without the packages,
# 3 min 26 s to the printed result, installing them included (README, Start here).
[ -x "$build/qrun" ] && [ -x "$build/qconvert" ] && [ -x "$build/qprofile" ] ||
  QTOOL_BUILD_TARGETS="qprofile qconvert qrun" "$repo/scripts/setup.sh" -DQTOOL_DEBUG_INFO=OFF -DQTOOL_PCH=ON
out="$build/quickstart"
mkdir -p "$out"
model="$repo/samples/digits_cnn.onnx"

"$build/qprofile" "$model" --data "$repo/samples/digits/calib" -o "$out/digits.profile.json"
"$build/qconvert" "$model" --profile "$out/digits.profile.json" -o "$out/digits_int8.onnx" --report "$out/digits_int8.report.json"
echo "quantized model: $out/digits_int8.onnx"
"$build/qrun" "$out/digits_int8.onnx" --data "$repo/samples/digits/test" --reference "$model" \
  --labels "$repo/samples/digits/test_labels.npy"
