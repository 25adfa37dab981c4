#!/usr/bin/env bash
# qrun --sensitivity (issue 24) ranks the layer that breaks the model first.
# The model: Conv -> Relu -> Conv "bad" -> Relu -> GlobalAveragePool ->
# Flatten -> Gemm, where "bad" has one weight 1000x its others, so that with
# per-tensor weights its other weights round to zero: quantizing that layer
# alone costs the most, and leaving it alone float recovers the most.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py - "$tmp" <<'PY'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
rng = np.random.default_rng(24)
w_bad = rng.normal(0, 0.05, (8, 8, 1, 1)).astype(np.float32)
w_bad[0, 0, 0, 0] = 50.0
# The outlier multiplies a channel that is nearly zero, so it spoils the
# weights' scale, not the activations' ranges.
w1 = rng.normal(0, 0.3, (8, 4, 3, 3))
w1[0] *= 1e-3
b1 = rng.normal(0, 0.1, 8)
b1[0] = 0
w3 = rng.normal(0, 0.3, (10, 8))
inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in [
    ("w1", w1), ("b1", b1), ("w_bad", w_bad),
    ("w3", w3), ("b3", rng.normal(0, 0.1, 10))]]
n = helper.make_node
nodes = [n("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]), n("Relu", ["c1"], ["r1"], "relu1"),
         n("Conv", ["r1", "w_bad"], ["c2"], "bad"), n("Relu", ["c2"], ["r2"], "relu2"),
         n("GlobalAveragePool", ["r2"], ["p"], "pool"), n("Flatten", ["p"], ["f"], "flatten"),
         n("Gemm", ["f", "w3", "b3"], ["y"], "fc", transB=1)]
g = helper.make_graph(nodes, "sens", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(d, "sens.onnx"))
os.makedirs(os.path.join(d, "data"))
for i in range(12):
    np.save(os.path.join(d, "data", f"{i:02d}.npy"), rng.normal(0, 1, (1, 4, 8, 8)).astype(np.float32))
PY
"$bin/qprofile" "$tmp/sens.onnx" --data "$tmp/data" -o "$tmp/p.json" --quiet
"$bin/qconvert" "$tmp/sens.onnx" --profile "$tmp/p.json" -o "$tmp/q.onnx" --per-tensor 2>/dev/null
"$bin/qrun" "$tmp/q.onnx" --reference "$tmp/sens.onnx" --data "$tmp/data" --sensitivity --json --quiet >"$tmp/s.json"
$py - "$tmp/s.json" <<'PY' || fail "qrun --sensitivity: $(cat "$tmp/s.json")"
import json, sys
s = json.load(open(sys.argv[1]))
layers = s["layers"]
names = [l["node"] for l in layers]
assert s["method"] == "full-run" and s["samples"] == 12, s
assert s["model_runs"] == 2 * len(layers) + 1, s
assert set(names) >= {"conv1", "bad", "fc"}, names
assert names[0] == "bad", f"most sensitive first: {names}"
bad = layers[0]
snr = lambda v: v["snr_db"]
all_q = snr(s["all_quantized"])
# Quantizing "bad" alone costs about what quantizing everything costs ...
assert snr(bad["only_quantized"]) < all_q + 3, (bad, all_q)
# ... and leaving it float recovers more than any other layer does.
assert snr(bad["only_float"]) > all_q + 10, (bad, all_q)
assert all(snr(l["only_float"]) < snr(bad["only_float"]) for l in layers[1:]), layers
assert all(l["kept_constants"] == 0 for l in layers), layers
PY
# The text form names the ranking and the method.
"$bin/qrun" "$tmp/q.onnx" --reference "$tmp/sens.onnx" --data "$tmp/data" --sensitivity --quiet >"$tmp/s.txt"
grep -q "method full-run" "$tmp/s.txt" || fail "text output lacks the method: $(cat "$tmp/s.txt")"
# Bad usage: exit 2 with one error line.
expect_exit 2 "--sensitivity needs --reference" "$bin/qrun" "$tmp/q.onnx" --data "$tmp/data" --sensitivity
expect_exit 2 "--sensitivity runs on its own" "$bin/qrun" "$tmp/q.onnx" --reference "$tmp/sens.onnx" --data "$tmp/data" --sensitivity -o "$tmp/out"
[ ! -e "$tmp/out" ] || fail "--sensitivity with -o wrote $tmp/out"
expect_exit 2 "no quantized layer" "$bin/qrun" "$tmp/sens.onnx" --reference "$tmp/sens.onnx" --data "$tmp/data" --sensitivity
echo "sensitivity ok"
