#!/usr/bin/env bash
# Flags: unknown flags and values, out-of-range numbers, conflicting options:
# exit 2 with one `error:` line naming the flag, before any output is written.
source "$(dirname "$0")/lib.sh"
"$bin/qprofile" "$model" --data "$samples/digits/calib" --limit 2 -o "$tmp/p.json" --quiet
calib="$samples/digits/calib"
q() { expect_refused "$1" "$tmp/out.onnx" "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/out.onnx" "${@:2}"; }
p() { expect_refused "$1" "$tmp/out.json" "$bin/qprofile" "$model" --data "$calib" -o "$tmp/out.json" "${@:2}"; }
r() { expect_refused "$1" "$tmp/outdir" "$bin/qrun" "$model" --data "$calib" -o "$tmp/outdir" "${@:2}"; }

q "--bogus" --bogus
q "--schema" --schema nonsense
q "--activations" --activations float7
q "--weights" --weights int3
q "--format" --format qlinear-magic
q "--per-tensor excludes --per-channel" --per-tensor --per-channel
q "unknown calibration method 'magic'" --calibration magic
q "the percentile must be a number P with 50 < P <= 100" --calibration percentile:200
q "the percentile must be a number P with 50 < P <= 100" --calibration percentile:abc
p "--bins" --bins 3
p "--bins" --bins lots
p "--limit" --limit -1
p "--data and --input cannot be combined" --input "x=$calib/0000.npy"
p "--bogus" --bogus
expect_refused "no output given" "$tmp/out.json" "$bin/qprofile" "$model" --data "$calib"
p "--threads" --threads 0
expect_refused "--output is required" "$tmp/out.json" "$bin/qprofile" merge "$tmp/p.json"
expect_exit 2 "unknown calibration method 'magic'" "$bin/qprofile" show "$tmp/p.json" --calibration magic
expect_exit 2 "p.json: no tensor named 'nosuch'" "$bin/qprofile" show "$tmp/p.json" --tensor nosuch
r "--min-snr" --min-snr loud
r "accuracy gates need --reference" --min-snr 20
r "--max-accuracy-drop needs --labels" --reference "$model" --max-accuracy-drop 1
r "--reference" --reference "$tmp/nothing.onnx"
# An output in a folder that does not exist: nothing is created.
expect_refused "does not exist" "$tmp/no/such/dir/out.json" \
  "$bin/qprofile" "$model" --data "$calib" --limit 1 -o "$tmp/no/such/dir/out.json"
[ ! -e "$tmp/no" ] || fail "qprofile created the missing output folder"
echo "robust flags ok"
