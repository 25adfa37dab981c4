#!/usr/bin/python3
"""A synthetic MatMul stack for scripts/weight_rounding_table.sh: inputs with
correlated features and a few large channels (as a transformer's activations
are), three MatMuls with Relu between them, weights with outliers.

    weight_rounding_models.py DIR
        DIR/stack.onnx   x[b, 32, 256] -> MatMul 256x512 -> Relu -> MatMul 512x256
                         -> Relu -> MatMul 256x256 -> y
        DIR/calib/, DIR/test/   32 samples each (.npy, [1, 32, 256]), disjoint
Fixed seed: the same files on every run.
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

f32 = np.float32


def inputs(rng, n, k=256, tokens=32):
    # AR(1) along the features (neighbouring features correlate), then a few
    # channels 8x larger.
    z = rng.standard_normal((n, tokens, k))
    x = np.empty_like(z)
    x[..., 0] = z[..., 0]
    for c in range(1, k):
        x[..., c] = 0.9 * x[..., c - 1] + np.sqrt(1 - 0.81) * z[..., c]
    x[..., ::37] *= 8
    return x.astype(f32)


def weights(rng, k, n):
    w = rng.standard_normal((k, n)) / np.sqrt(k)
    w[rng.random((k, n)) < 0.002] *= 10  # outliers set some groups' absmax
    return w.astype(f32)


def main(d):
    rng = np.random.default_rng(25)
    os.makedirs(d, exist_ok=True)
    w1, w2, w3 = weights(rng, 256, 512), weights(rng, 512, 256), weights(rng, 256, 256)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h1"], name="mm1"),
         helper.make_node("Relu", ["h1"], ["r1"], name="relu1"),
         helper.make_node("MatMul", ["r1", "w2"], ["h2"], name="mm2"),
         helper.make_node("Relu", ["h2"], ["r2"], name="relu2"),
         helper.make_node("MatMul", ["r2", "w3"], ["y"], name="mm3")],
        "stack",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 32, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 32, 256])],
        [numpy_helper.from_array(w, n) for w, n in ((w1, "w1"), (w2, "w2"), (w3, "w3"))])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(d, "stack.onnx"))
    for split in ("calib", "test"):
        os.makedirs(os.path.join(d, split), exist_ok=True)
        for i, x in enumerate(inputs(rng, 32)):
            np.save(os.path.join(d, split, "sample_%02d.npy" % i), x[None])


if __name__ == "__main__":
    main(sys.argv[1])
