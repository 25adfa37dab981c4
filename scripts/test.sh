#!/usr/bin/env bash
# Runs every test: sets up and builds if needed, installs ONNX Runtime for the
# interop tests, then ctest (labels: unit, e2e, interop). Extra arguments go to
# ctest, e.g. scripts/test.sh -L unit. With QTOOL_CI=1 (.ci/run) a skipped
# end-to-end, interop, zoo or conformance test fails the run
# (scripts/check_skips.py): CI has every prerequisite, so a skip there means
# a check did not run.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${QTOOL_BUILD_DIR:-$repo/build}
"$repo/scripts/setup.sh"
"$repo/scripts/setup_ort.sh"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" --output-junit "$build/ctest-junit.xml" "$@"
if [ "${QTOOL_CI:-0}" = 1 ]; then
  /usr/bin/python3 "$repo/scripts/check_skips.py" "$build/ctest-junit.xml"
fi
