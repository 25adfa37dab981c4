#!/usr/bin/env bash
# A killed run leaves no output file: qprofile and qconvert write through a
# temp file and rename (DESIGN), and qprofile writes only after the last sample.
# kill -9 mid-run must leave neither the profile nor a temp file behind.
source "$(dirname "$0")/lib.sh"
mkdir -p "$tmp/big"
# Many samples (links to one file) so that the run lasts well past the kill.
/usr/bin/python3 -c "
import os, sys
for i in range(20000): os.symlink(sys.argv[1], os.path.join(sys.argv[2], '%05d.npy' % i))" "$samples/digits/calib/0000.npy" "$tmp/big"
"$bin/qprofile" "$model" --data "$tmp/big" -o "$tmp/out.json" --quiet &
pid=$!
sleep 1
kill -0 "$pid" 2>/dev/null || fail "qprofile finished before it could be killed; make the dataset larger"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
expect_no_output "$tmp/out.json"
[ -z "$(ls -A "$tmp" | grep -v '^big$' || true)" ] || fail "files left behind: $(ls -A "$tmp")"

# An existing output survives a failed run untouched.
printf 'previous' >"$tmp/out.json"
mkdir -p "$tmp/empty"
expect_exit 2 "no samples" "$bin/qprofile" "$model" --data "$tmp/empty" -o "$tmp/out.json"
[ "$(cat "$tmp/out.json")" = previous ] || fail "a failed run changed an existing output"
echo "robust kill ok"
