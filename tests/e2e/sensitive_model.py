#!/usr/bin/env python3
"""Writes DIR/sens.onnx and DIR/data/*.npy: a model with one layer that
quantization breaks, for the sensitivity and accuracy-search tests.

  sensitive_model.py DIR [--unnamed-bad | --activation-outlier]

Conv "conv1" -> Relu -> Conv "bad" -> Relu -> GlobalAveragePool -> Flatten ->
Gemm "fc". "bad" has one weight 1000x its others, so that with per-tensor
weights the others round to zero; the outlier multiplies a channel that is
nearly zero, so it spoils the weights' scale, not the activations' ranges.
With --unnamed-bad that node has no name, so it cannot be kept float by name.
With --activation-outlier the harm is in an activation instead: conv1's
channel 0 is 1000x its others, so 8 bits of its per-tensor output range leave
the other channels nothing, while "bad" hardly reads channel 0; 16-bit
activations (on either layer) repair it, per-channel weights need no help."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

d = sys.argv[1]
unnamed = "--unnamed-bad" in sys.argv
outlier = "--activation-outlier" in sys.argv
rng = np.random.default_rng(24)
w_bad = rng.normal(0, 0.05, (8, 8, 1, 1)).astype(np.float32)
w_bad[0, 0, 0, 0] = 50.0
w1 = rng.normal(0, 0.3, (8, 4, 3, 3))
w1[0] *= 1e-3
if outlier:
    w_bad = rng.normal(0, 0.3, (8, 8, 1, 1)).astype(np.float32)
    w_bad[:, 0] *= 1e-4
    w1[0] *= 1e6
b1 = rng.normal(0, 0.1, 8)
b1[0] = 0
w3 = rng.normal(0, 0.3, (10, 8))
inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in [
    ("w1", w1), ("b1", b1), ("w_bad", w_bad), ("w3", w3), ("b3", rng.normal(0, 0.1, 10))]]
n = helper.make_node
nodes = [n("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]), n("Relu", ["c1"], ["r1"], "relu1"),
         n("Conv", ["r1", "w_bad"], ["c2"], "" if unnamed else "bad"), n("Relu", ["c2"], ["r2"], "relu2"),
         n("GlobalAveragePool", ["r2"], ["p"], "pool"), n("Flatten", ["p"], ["f"], "flatten"),
         n("Gemm", ["f", "w3", "b3"], ["y"], "fc", transB=1)]
g = helper.make_graph(nodes, "sens", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(d, "sens.onnx"))
os.makedirs(os.path.join(d, "data"), exist_ok=True)
for i in range(12):
    np.save(os.path.join(d, "data", f"{i:02d}.npy"), rng.normal(0, 1, (1, 4, 8, 8)).astype(np.float32))
