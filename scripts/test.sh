#!/usr/bin/env bash
# Runs every test: sets up and builds if needed, installs ONNX Runtime for the
# interop tests, then ctest (labels: unit, e2e, interop). Extra arguments go to
# ctest, e.g. scripts/test.sh -L unit.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${QTOOL_BUILD_DIR:-$repo/build}
"$repo/scripts/setup.sh"
"$repo/scripts/setup_ort.sh"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
