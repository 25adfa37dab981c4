#!/usr/bin/env bash
# qprofile reads every input form of DESIGN "Inputs": .npy directories, sample
# folders (<name>.npy and the ONNX test-data layout), images with preprocessing,
# --input NAME=FILE, --batch, --limit, --shard; samples with NaN/Inf inputs are
# left out (--strict: exit 2); NaN and Inf made in the graph never reach ranges.
source "$(dirname "$0")/lib.sh"
/usr/bin/python3 "$src/tests/e2e/make_fixtures.py" "$tmp"
py=/usr/bin/python3
# field PROFILE TENSOR KEY: one statistic of one tensor.
field() { $py -c "import json,sys; print(json.load(open(sys.argv[1]))['tensors'][sys.argv[2]][sys.argv[3]])" "$@"; }
top() { $py -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }

# Sample folders: by input name, and the ONNX test-data layout by position.
"$bin/qprofile" "$tmp/two.onnx" --data "$tmp/two_named" -o "$tmp/named.json" --quiet
"$bin/qprofile" "$tmp/two.onnx" --data "$tmp/two_pb" -o "$tmp/pb.json" --quiet
validate_profile "$tmp/named.json" "$tmp/pb.json"
[ "$(top "$tmp/pb.json" samples)" = 3 ] || fail "ONNX test-data layout: expected 3 samples"
[ "$(field "$tmp/pb.json" sum count)" = 12 ] || fail "ONNX test-data layout: expected 12 values of 'sum'"
want=$($py -c "
import numpy as np, onnx, glob
from onnx import numpy_helper
v=[numpy_helper.to_array(onnx.load_tensor(d+'/input_0.pb'))+numpy_helper.to_array(onnx.load_tensor(d+'/input_1.pb')) for d in sorted(glob.glob('$tmp/two_pb/*'))]
print(repr(float(np.concatenate(v).max())))")
[ "$(field "$tmp/pb.json" sum max)" = "$want" ] || fail "max of a+b is $(field "$tmp/pb.json" sum max), numpy says $want"

# --input NAME=FILE: one sample, inputs by name.
"$bin/qprofile" "$tmp/two.onnx" --input "a=$tmp/two_named/s0/a.npy" --input "b=$tmp/two_named/s0/b.npy" \
  -o "$tmp/one.json" --quiet
validate_profile "$tmp/one.json"
[ "$(top "$tmp/one.json" samples)" = 1 ] || fail "--input: expected one sample"
expect_exit 2 "no input named 'c'" "$bin/qprofile" "$tmp/two.onnx" --input "c=$tmp/two_named/s0/a.npy" \
  --input "b=$tmp/two_named/s0/b.npy" -o "$tmp/bad.json"

# Images: decoded, resized to the model's 8x8, normalised; a known colour gives known values.
"$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/images" -o "$tmp/img.json" --quiet
validate_profile "$tmp/img.json"
[ "$(top "$tmp/img.json" samples)" = 6 ] || fail "images: expected 6 samples (png, grey png, ppm)"
[ "$(field "$tmp/img.json" x shape)" = "[1, 3, 8, 8]" ] || fail "images: x shape $(field "$tmp/img.json" x shape)"
"$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/one_image" --mean 0.5,0,0 --std 0.5,1,0.1 -o "$tmp/red.json" --quiet
# RGB (1, 0, 0.2) -> ((1-0.5)/0.5, 0, 0.2/0.1) = (1, 0, 2): min 0, max 2, mean 1.
[ "$(field "$tmp/red.json" x min)" = 0.0 ] && [ "$(field "$tmp/red.json" x mean)" = 1.0 ] ||
  fail "image normalisation: min $(field "$tmp/red.json" x min), mean $(field "$tmp/red.json" x mean)"
$py -c "import sys; assert abs(float(sys.argv[1]) - 2) < 1e-5" "$(field "$tmp/red.json" x max)" || fail "image max != 2"
# BGR swaps channels 0 and 2 before mean/std: (0.2, 0, 1) with the same mean/std -> (-0.6, 0, 10).
"$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/one_image" --channels bgr --mean 0.5,0,0 --std 0.5,1,0.1 \
  -o "$tmp/bgr.json" --quiet
$py -c "import sys; assert abs(float(sys.argv[1]) - 10) < 1e-4" "$(field "$tmp/bgr.json" x max)" || fail "bgr max != 10"
# nhwc gives an NHWC tensor, which this NCHW model refuses naming the shape.
expect_exit 2 "shape" "$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/one_image" --layout nhwc --image-size 8x8 -o "$tmp/bad.json"
expect_exit 2 "--image-size" "$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/images" --image-size 8by8 -o "$tmp/bad.json"
expect_exit 2 "--mean" "$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/images" --mean 1,2 -o "$tmp/bad.json"
expect_exit 2 "--channels" "$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/images" --channels cmyk -o "$tmp/bad.json"
expect_exit 2 "broken.png: cannot decode image" "$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/bad_images" -o "$tmp/bad.json"
[ ! -e "$tmp/bad.json" ] || fail "a failed run left a profile"

# --batch stacks samples along the dynamic dim 0: same min/max/count as one by one.
"$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/dyn_npy" -o "$tmp/b1.json" --quiet
"$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/dyn_npy" --batch 5 -o "$tmp/b5.json" --quiet
validate_profile "$tmp/b1.json" "$tmp/b5.json"
[ "$(field "$tmp/b5.json" x shape)" = "[5, 3, 8, 8]" ] || fail "--batch 5: x shape $(field "$tmp/b5.json" x shape)"
[ "$(top "$tmp/b5.json" samples)" = 24 ] || fail "--batch 5: samples != 24"
for t in x conv relu y; do
  for k in min max count histogram; do
    [ "$(field "$tmp/b1.json" $t $k)" = "$(field "$tmp/b5.json" $t $k)" ] || fail "--batch 5 changed $t.$k"
  done
done
expect_exit 2 "fixed dim 0" "$bin/qprofile" "$model" --data "$samples/digits/calib" --batch 4 -o "$tmp/bad.json"

# --limit takes the first N; --shard I/N the interleaved I-th part of those.
"$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/dyn_npy" --limit 10 --shard 1/3 -o "$tmp/s.json" --quiet
[ "$(top "$tmp/s.json" samples)" = 3 ] || fail "--limit 10 --shard 1/3: expected samples 1, 4, 7"
want=$($py -c "
import numpy as np
print(repr(float(max(np.load('$tmp/dyn_npy/%04d.npy' % i).max() for i in (1, 4, 7)))))")
[ "$(field "$tmp/s.json" x max)" = "$want" ] || fail "--shard 1/3 max $(field "$tmp/s.json" x max), expected $want"
expect_exit 2 "--shard '3/3'" "$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/dyn_npy" --shard 3/3 -o "$tmp/bad.json"
expect_exit 2 "--shard 'x'" "$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/dyn_npy" --shard x -o "$tmp/bad.json"

# A sample with NaN or Inf inputs is left out with a warning naming its file
# (--strict: exit 2), so the profile is that of the clean samples alone.
mkdir -p "$tmp/digits_bad"
cp "$src"/samples/digits/calib/00[0-3]*.npy "$tmp/digits_bad/"
"$bin/qprofile" "$src/samples/digits_cnn.onnx" --data "$tmp/digits_bad" -o "$tmp/clean.json" --quiet
$py -c "
import numpy as np, sys
a = np.load(sys.argv[1]).astype(np.float32); a.flat[[5, 17, 40]] = np.nan; np.save(sys.argv[2], a)" \
  "$tmp/digits_bad/0003.npy" "$tmp/digits_bad/0003x.npy"
"$bin/qprofile" "$src/samples/digits_cnn.onnx" --data "$tmp/digits_bad" -o "$tmp/dirty.json" --quiet 2>"$tmp/dirty.err"
grep -q "0003x.npy: input 'input' has 3 NaN/Inf values: left out of the profile" "$tmp/dirty.err" ||
  fail "no warning naming the NaN sample: $(cat "$tmp/dirty.err")"
$py - "$tmp/clean.json" "$tmp/dirty.json" <<'PY' || fail "the NaN sample changed the profile"
import json, sys
clean, dirty = (json.load(open(f)) for f in sys.argv[1:3])
assert dirty["samples"] == clean["samples"], (dirty["samples"], clean["samples"])
for name, t in clean["tensors"].items():
    d = dirty["tensors"][name]
    for k in ("min", "max", "count", "nan", "inf"):
        assert d[k] == t[k], (name, k, d[k], t[k])
    assert d["histogram"] == t["histogram"], name
PY
expect_exit 2 "0003x.npy: input 'input' has 3 NaN/Inf values (--strict)" \
  "$bin/qprofile" "$src/samples/digits_cnn.onnx" --data "$tmp/digits_bad" -o "$tmp/strict.json" --strict
[ ! -e "$tmp/strict.json" ] || fail "--strict left a profile behind"
# Every sample bad: nothing to profile.
code=0
"$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/nan_npy" -o "$tmp/nan.json" --quiet 2>"$tmp/nan.err" || code=$?
[ "$code" = 2 ] && tail -n 1 "$tmp/nan.err" | grep -q "^error: every sample has NaN/Inf inputs: nothing to profile" ||
  fail "all samples bad: exit $code, $(cat "$tmp/nan.err")"
[ ! -e "$tmp/nan.json" ] || fail "all samples bad: a profile was written"

# NaN and Inf made inside the graph from finite inputs (Log of 0 and of
# negatives) are counted, never part of min/max/mean: ranges stay finite.
$py - "$tmp" <<'PY'
import sys, os, numpy as np, onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
g = helper.make_graph([helper.make_node("Log", ["x"], ["l"]), helper.make_node("Relu", ["l"], ["y"])], "log", [x], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(sys.argv[1], "log.onnx"))
os.makedirs(os.path.join(sys.argv[1], "log_npy"), exist_ok=True)
for i in range(3):
    np.save(os.path.join(sys.argv[1], "log_npy", f"{i}.npy"), np.array([[0, -1, 1, 2, 3, 4, 5, 6]], np.float32) + i)
PY
"$bin/qprofile" "$tmp/log.onnx" --data "$tmp/log_npy" -o "$tmp/nan.json" --quiet
validate_profile "$tmp/nan.json"
# Log: 0 -> -inf (sample 0), -1 -> NaN (sample 0), 0 -> -inf (sample 1).
[ "$(field "$tmp/nan.json" l nan)" = 1 ] && [ "$(field "$tmp/nan.json" l inf)" = 2 ] ||
  fail "NaN/Inf counts of l: $(field "$tmp/nan.json" l nan) / $(field "$tmp/nan.json" l inf)"
$py - "$tmp/nan.json" <<'PY' || fail "a NaN or Inf reached a range"
import json, math, sys
p = json.load(open(sys.argv[1]))
for name, t in p["tensors"].items():
    for k in ("min", "max", "mean"):
        assert t[k] is None or math.isfinite(t[k]), (name, k, t[k])
    assert math.isfinite(t["histogram"]["lo"]) and math.isfinite(t["histogram"]["hi"]), name
assert p["tensors"]["l"]["count"] == 3 * 8 - 3
PY
echo "inputs ok"
