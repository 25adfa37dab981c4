#!/usr/bin/python3
"""A float model for tests/e2e/test_equalize_bias.sh: x[1,3,8,8] -> conv1
(8 out, 3x3, pad 1) -> Relu -> conv2 (8 out, 3x3, pad 1) -> Clip(0, 6) ->
depthwise (3x3, pad 1) -> conv3 (4 out, 1x1) -> y. conv1's output channels
span a range of 100:1, the case per-tensor weights lose most on and cross-layer
equalization fixes; conv3's weights sit slightly off the int8 grid so that
their rounding has a mean bias correction can take back. Writes DIR/eq.onnx
and 32 samples in DIR/data."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(5)
w1 = rng.uniform(-1, 1, (8, 3, 3, 3)).astype(np.float32)
w1 *= np.array([100, 0.5, 1, 20, 3, 0.3, 50, 1], np.float32)[:, None, None, None]
b1 = rng.uniform(0, 1, 8).astype(np.float32)
w2 = (rng.uniform(-1, 1, (8, 8, 3, 3)) * 0.02).astype(np.float32)
w2[:, 0] *= 0.01  # input channel 0 reads conv1's widest channel
w2[:, 6] *= 0.02
b2 = rng.uniform(0, 0.5, 8).astype(np.float32)
wd = rng.uniform(-1, 1, (8, 1, 3, 3)).astype(np.float32)
wd *= np.array([5, 0.05, 1, 0.2, 2, 0.1, 1, 0.5], np.float32)[:, None, None, None]
bd = rng.uniform(-0.1, 0.1, 8).astype(np.float32)
w3 = rng.uniform(-1, 1, (4, 8, 1, 1)).astype(np.float32)
b3 = np.zeros(4, np.float32)
inits = [numpy_helper.from_array(a, n) for a, n in
         [(w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"), (wd, "wd"), (bd, "bd"), (w3, "w3"), (b3, "b3"),
          (np.array(0, np.float32), "lo"), (np.array(6, np.float32), "hi")]]
pads = [1, 1, 1, 1]
nodes = [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=pads),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=pads),
    helper.make_node("Clip", ["c2", "lo", "hi"], ["r2"], name="relu6"),
    helper.make_node("Conv", ["r2", "wd", "bd"], ["d"], name="dw", pads=pads, group=8),
    helper.make_node("Conv", ["d", "w3", "b3"], ["y"], name="conv3"),
]
graph = helper.make_graph(nodes, "eq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "eq.onnx"))
os.makedirs(os.path.join(out, "data"), exist_ok=True)
for i in range(32):
    np.save(os.path.join(out, "data", f"{i:04d}.npy"), rng.uniform(0, 1, (1, 3, 8, 8)).astype(np.float32))
