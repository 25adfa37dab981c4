#!/usr/bin/python3
"""A float model for tests/e2e/test_smooth_quant.sh, transformer-like with
activation outlier channels (the case SmoothQuant is for): x[1,16,32] ->
LayerNormalization (gamma 40 on channels 3 and 17, 1 elsewhere) read by two
MatMuls (a q/k pair: smoothing folds into the LayerNorm), an affine x * g + b
(a Mul and an Add, outliers on channel 9) read by a third MatMul (folds into
both constants), and Relu(x * g3) read by a fourth (no fold: smoothing
inserts a Mul), all summed into y. Opset 17. Writes DIR/sq.onnx and
32 samples in DIR/data."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(11)
k = 32
g1 = np.ones(k, np.float32)
g1[[3, 17]] = 40
b1 = rng.uniform(-0.1, 0.1, k).astype(np.float32)
g2 = np.full(k, 0.5, np.float32)
g2[9] = 30
b2 = rng.uniform(-0.2, 0.2, k).astype(np.float32)
g3 = np.ones(k, np.float32)
g3[5] = 3
w = [rng.normal(0, 0.2, (k, k)).astype(np.float32) for _ in range(4)]
w[3] *= 0.25  # the branch without a fold gains little: kept small so that the folds show
inits = [numpy_helper.from_array(a, n) for a, n in
         [(g1, "g1"), (b1, "b1"), (g2, "g2"), (b2, "b2"), (w[0], "wq"), (w[1], "wk"), (w[2], "wv"), (g3, "g3"), (w[3], "wo")]]
nodes = [
    helper.make_node("LayerNormalization", ["x", "g1", "b1"], ["ln"], name="ln", axis=-1),
    helper.make_node("MatMul", ["ln", "wq"], ["q"], name="q"),
    helper.make_node("MatMul", ["ln", "wk"], ["k"], name="k"),
    helper.make_node("Mul", ["x", "g2"], ["xg"], name="scale"),
    helper.make_node("Add", ["xg", "b2"], ["a"], name="shift"),
    helper.make_node("MatMul", ["a", "wv"], ["v"], name="v"),
    helper.make_node("Add", ["q", "k"], ["qk"], name="sum1"),
    helper.make_node("Add", ["qk", "v"], ["qkv"], name="sum2"),
    helper.make_node("Mul", ["x", "g3"], ["xg3"], name="scale3"),
    helper.make_node("Relu", ["xg3"], ["r"], name="relu"),
    helper.make_node("MatMul", ["r", "wo"], ["o"], name="o"),
    helper.make_node("Add", ["qkv", "o"], ["y"], name="sum3"),
]
graph = helper.make_graph(nodes, "sq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, k])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "sq.onnx"))
os.makedirs(os.path.join(out, "data"), exist_ok=True)
for i in range(32):
    np.save(os.path.join(out, "data", f"{i:04d}.npy"), rng.normal(0, 1, (1, 16, k)).astype(np.float32))
