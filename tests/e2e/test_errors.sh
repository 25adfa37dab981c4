#!/usr/bin/env bash
# Exit codes and `error:` lines per DESIGN: a missing file, a bad flag, a
# malformed model or profile, another model's profile; no output left behind.
source "$(dirname "$0")/lib.sh"

expect_exit 2 "--no-such-flag" "$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/p.json" --no-such-flag
expect_exit 2 "--no-such-flag" "$bin/qconvert" "$model" --profile "$model" -o "$tmp/q.onnx" --no-such-flag
expect_exit 2 "--no-such-flag" "$bin/qrun" "$model" --data "$samples/digits/test" --no-such-flag
expect_exit 2 "--profile is required" "$bin/qconvert" "$model" -o "$tmp/q.onnx"
expect_exit 2 "no data" "$bin/qrun" "$model"
[ ! -e "$tmp/p.json" ] && [ ! -e "$tmp/q.onnx" ] || fail "an output was written despite a bad flag"
expect_exit 2 "missing.onnx" "$bin/qrun" "$tmp/missing.onnx" --data "$samples/digits/test"
expect_exit 2 "missing.onnx" "$bin/qprofile" "$tmp/missing.onnx" --data "$samples/digits/calib" -o "$tmp/p.json"
expect_exit 2 "missing.json" "$bin/qconvert" "$model" --profile "$tmp/missing.json" -o "$tmp/q.onnx"
[ ! -e "$tmp/q.onnx" ] || fail "qconvert left an output after failing"

printf 'not a model' >"$tmp/bad.onnx"
expect_exit 2 "bad.onnx" "$bin/qrun" "$tmp/bad.onnx" --data "$samples/digits/test"
expect_exit 2 "bad.onnx" "$bin/qprofile" "$tmp/bad.onnx" --data "$samples/digits/calib" -o "$tmp/p.json"
[ ! -e "$tmp/p.json" ] || fail "qprofile left an output after failing"

printf '{"format": "qtool-profile", "version": 99}' >"$tmp/bad.json"
expect_exit 2 "bad.json" "$bin/qconvert" "$model" --profile "$tmp/bad.json" -o "$tmp/q.onnx"
printf '{not json' >"$tmp/garbage.json"
expect_exit 2 "garbage.json" "$bin/qconvert" "$model" --profile "$tmp/garbage.json" -o "$tmp/q.onnx"
[ ! -e "$tmp/q.onnx" ] || fail "qconvert left an output after failing"

# A profile of another model is refused naming it, unless --force.
"$bin/qprofile" "$model" --data "$samples/digits/calib" --limit 4 -o "$tmp/p.json" --quiet
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/q.onnx"
"$bin/qprofile" "$tmp/q.onnx" --data "$samples/digits/calib" --limit 2 -o "$tmp/pq.json" --quiet
expect_exit 2 "another model" "$bin/qconvert" "$model" --profile "$tmp/pq.json" -o "$tmp/q2.onnx"
[ ! -e "$tmp/q2.onnx" ] || fail "qconvert wrote a model from another model's profile"

# Bad values of enumerated flags, conflicting flags.
expect_exit 2 "--schema" "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/q3.onnx" --schema nonsense
expect_exit 2 "" "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/q3.onnx" --per-tensor --per-channel
expect_exit 2 "calibration" "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/q3.onnx" --calibration magic
[ ! -e "$tmp/q3.onnx" ] || fail "qconvert wrote a model despite bad flags"

# Data that does not fit the model.
mkdir -p "$tmp/wrong"
/usr/bin/python3 -c "import numpy as np; np.save('$tmp/wrong/a.npy', np.zeros((1,1,9,9), np.float32))"
expect_exit 2 "shape" "$bin/qrun" "$model" --data "$tmp/wrong"
mkdir -p "$tmp/empty"
expect_exit 2 "empty" "$bin/qrun" "$model" --data "$tmp/empty"
expect_exit 2 "digits_cnn.onnx: not a .npy file" "$bin/qrun" "$model" --data "$samples/digits/test" --limit 2 --labels "$model"
echo "errors ok"
