#!/usr/bin/env bash
# Installs ONNX Runtime for Node (CPU) into <repo>/.cache/ort, used by the
# interop tests (tests/interop/ort_run.js) as an independent reference runtime.
# Idempotent: does nothing (and prints nothing) when the package is present.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ORT_VERSION="1.20.1"
PREFIX="$REPO/.cache/ort"

if [[ -f "$PREFIX/node_modules/onnxruntime-node/package.json" ]]; then
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "error: npm not found (install Debian's nodejs and npm packages)" >&2
  exit 1
fi

mkdir -p "$PREFIX"
echo "installing onnxruntime-node@$ORT_VERSION into $PREFIX" >&2
# --ignore-scripts: the package's install script tries to download extra
# binaries (CUDA etc.), which fails offline; the CPU binaries ship inside the
# npm tarball itself, so skipping the script loses nothing we use.
if ! npm install --ignore-scripts --no-audit --no-fund --prefix "$PREFIX" \
    "onnxruntime-node@$ORT_VERSION" >&2; then
  echo "error: npm install of onnxruntime-node@$ORT_VERSION failed" >&2
  exit 1
fi

if [[ ! -f "$PREFIX/node_modules/onnxruntime-node/package.json" ]]; then
  echo "error: onnxruntime-node missing from $PREFIX after npm install" >&2
  exit 1
fi
