# Shared by the end-to-end tests: paths, a temp dir and assertions.
set -euo pipefail
bin=${QTOOL_BIN:?QTOOL_BIN must point at the build directory}
src=${QTOOL_SOURCE_DIR:?QTOOL_SOURCE_DIR must point at the repository}
samples="$src/samples"
model="$samples/digits_cnn.onnx"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_exit CODE PATTERN CMD...: runs CMD, checks its exit code and that
# stderr is exactly one line starting with `error:` and containing PATTERN.
expect_exit() {
  local want=$1 pattern=$2
  shift 2
  local code=0
  "$@" >"$tmp/stdout" 2>"$tmp/stderr" || code=$?
  [ "$code" -eq "$want" ] || fail "'$*' exited $code, expected $want; stderr: $(cat "$tmp/stderr")"
  if [ -n "$pattern" ]; then
    [ "$(wc -l <"$tmp/stderr")" -eq 1 ] || fail "'$*' printed more than one stderr line: $(cat "$tmp/stderr")"
    grep -q '^error: ' "$tmp/stderr" || fail "'$*' stderr does not start with error: $(cat "$tmp/stderr")"
    grep -qF -- "$pattern" "$tmp/stderr" || fail "'$*' stderr lacks '$pattern': $(cat "$tmp/stderr")"
  fi
}

# expect_no_output PATH...: PATH does not exist, and neither does a temp file of
# the atomic write next to it (.NAME.tmpXXXXXX).
expect_no_output() {
  local p
  for p in "$@"; do
    [ ! -e "$p" ] || fail "$p exists after a failed run"
    if compgen -G "$(dirname "$p")/.$(basename "$p").tmp*" >/dev/null; then
      fail "a temp file of $p was left behind: $(ls -a "$(dirname "$p")")"
    fi
  done
}

# expect_refused PATTERN OUTPUT CMD...: CMD exits 2 with one `error:` line
# holding PATTERN, and leaves OUTPUT (a file or a directory) unwritten.
expect_refused() {
  local pattern=$1 output=$2
  shift 2
  expect_exit 2 "$pattern" "$@"
  expect_no_output "$output"
}

hostile() { /usr/bin/python3 "$src/tests/e2e/hostile.py" "$@"; }
# validate_profile FILE...: every profile a test emits is checked against
# profiles/qprofile.schema.json (needs python3-jsonschema, scripts/setup.sh).
validate_profile() {
  /usr/bin/python3 "$src/tests/e2e/validate_profile.py" "$src/profiles/qprofile.schema.json" "$@" ||
    fail "profile does not match profiles/qprofile.schema.json: $*"
}
