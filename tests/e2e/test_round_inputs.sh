#!/usr/bin/env bash
# scripts/round_inputs.py (the "input-u8" row of scripts/accuracy_table.sh):
# every rounded value is on the uint8 grid of the profile's input range and
# within half a step of the original; bad input exits 2 with one error line.
source "$(dirname "$0")/lib.sh"
round="$src/scripts/round_inputs.py"
"$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/p.json" --quiet
/usr/bin/python3 "$round" "$model" "$tmp/p.json" "$samples/digits/test" "$tmp/rounded" || fail "round_inputs.py failed"
/usr/bin/python3 - "$model" "$tmp/p.json" "$samples/digits/test" "$tmp/rounded" <<'PY' || fail "rounded inputs are wrong"
import json, os, sys
import numpy as np
import onnx
model, profile, data, out = sys.argv[1:]
t = json.load(open(profile))["tensors"]
name = onnx.load(model).graph.input[0].name
lo, hi = min(t[name]["min"], 0.0), max(t[name]["max"], 0.0)
scale = (hi - lo) / 255
zero_point = np.clip(np.round(-lo / scale), 0, 255)
files = sorted(os.listdir(data))
assert sorted(os.listdir(out)) == [f for f in files if f.endswith(".npy")]
for f in os.listdir(out):
    x, r = np.load(os.path.join(data, f)), np.load(os.path.join(out, f))
    assert r.shape == x.shape and r.dtype == x.dtype, f
    steps = r.astype(np.float64) / scale + zero_point
    assert np.abs(steps - np.round(steps)).max() < 1e-3, f"{f}: off the grid"
    assert np.abs(r.astype(np.float64) - x).max() <= scale / 2 + 1e-6, f"{f}: moved more than half a step"
PY
echo '{"tensors": {}}' >"$tmp/empty.json"
expect_exit 2 "no range for input" /usr/bin/python3 "$round" "$model" "$tmp/empty.json" "$samples/digits/test" "$tmp/x"
expect_exit 2 "needs one .npy per sample" /usr/bin/python3 "$round" "$model" "$tmp/p.json" "$tmp" "$tmp/x"
echo "round_inputs: ok"
