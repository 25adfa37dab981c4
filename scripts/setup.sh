#!/usr/bin/env bash
# Installs the Debian packages qtool needs (idempotent: quiet when all are
# present), then configures and builds into build/ (QTOOL_BUILD_DIR overrides).
# Extra CMake arguments may follow, e.g. scripts/setup.sh -DQTOOL_SANITIZE=ON.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${QTOOL_BUILD_DIR:-$repo/build}

# Build: compiler + libraries (libstb-dev: image decoding and PNG plots). Tests: python3-onnx (ONNX
# checker), numpy, python3-jsonschema (profile schema), GNU parallel (sharded profiling), GNU time (bench),
# Node.js (ONNX Runtime interop, scripts/setup_ort.sh), the ONNX test data. Man pages: help2man makes them at
# build time, man-db (man -l, with groff) reads them in tests/e2e/test_install.sh. Chromium renders the --html
# reports headless in tests/e2e/test_html_render.sh. qemu-user emulates an AVX2-only CPU for
# scripts/test_avx2_emulated.sh (no AVX-512 instruction runs there).
# libopenblas0-pthread: the Python tooling (scripts/make_zoo.py, the GPTQ and accuracy scripts) runs Debian's
# python3-torch, whose libblas.so.3 is otherwise the unoptimised reference BLAS (training about 16x slower).
# A build of the three tools alone (QTOOL_BUILD_TARGETS, as scripts/quickstart.sh asks) needs only the compiler
# and the libraries: the first result on a fresh machine does not wait for Chromium, Node.js or the test data.
# ninja-build: Ninja compiles every module's files as soon as a core is free, where Make finishes one CMake
# target before the next that links it (the quickstart build under Ninja kept 2 compilations running 99% of the time).
pkgs=(cmake g++ make ninja-build libcli11-dev nlohmann-json3-dev libspdlog-dev catch2 libprotobuf-dev protobuf-compiler
      libonnx-dev libstb-dev)
[ -n "${QTOOL_BUILD_TARGETS:-}" ] ||
  pkgs+=(python3-onnx python3-numpy python3-jsonschema parallel time libonnx-testdata help2man man-db groff-base
         chromium libopenblas0-pthread qemu-user)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ -n "${QTOOL_BUILD_TARGETS:-}" ] || { command -v node >/dev/null && command -v npm >/dev/null; } || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  # Package lists a few hours old serve; `apt-get update` (about 40 s here) runs only when they do not.
  install() { DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
  install 2>/dev/null || { $sudo apt-get update -qq && install; }
fi

# CI (QTOOL_CI=1) and developers who ask (QTOOL_WERROR=1) treat warnings as
# errors; a user's build does not. QTOOL_BUILD_TARGETS="qprofile qconvert qrun"
# builds only those (scripts/quickstart.sh); the default is everything.
# QTOOL_BUILD_TYPE picks CMake's build type (default RelWithDebInfo; CI tests
# the Release build users make).
werror=OFF
[ "${QTOOL_CI:-0}" = 1 ] || [ "${QTOOL_WERROR:-0}" = 1 ] && werror=ON
targets=()
for t in ${QTOOL_BUILD_TARGETS:-}; do targets+=(--target "$t"); done

# A new build directory uses Ninja when it is there; one configured before keeps its generator (CMake refuses
# to switch).
generator=()
[ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null && generator=(-G Ninja)

mkdir -p "$build"
log="$build/build.log"
if ! { cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE="${QTOOL_BUILD_TYPE:-RelWithDebInfo}" \
         -DQTOOL_WERROR=$werror "$@" &&
       cmake --build "$build" -j"$(nproc)" "${targets[@]}"; } >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "error: build failed; full log in $log" >&2
  exit 1
fi
