"""Builds the two models of the shape-folding interop test (run with /usr/bin/python3):
a MatMul whose weight comes through a Transpose, and a Conv whose weight comes
through a Reshape, each with per-channel weight magnitudes spanning 100x, plus
16 random input samples per model.

usage: make_shape_fold_models.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def spread(shape, axis, rng):
    w = rng.uniform(-1, 1, size=shape).astype(np.float32)
    c = shape[axis]
    factor = 100.0 ** (np.arange(c) / (c - 1))
    view = [1] * len(shape)
    view[axis] = c
    return (w * factor.reshape(view)).astype(np.float32)


def save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main(out):
    rng = np.random.default_rng(3)
    os.makedirs(out, exist_ok=True)
    opset = [helper.make_opsetid("", 13)]

    wt = numpy_helper.from_array(spread((16, 8), 0, rng), "wt")
    g = helper.make_graph(
        [helper.make_node("Transpose", ["wt"], ["w"], perm=[1, 0], name="transpose_w"),
         helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")],
        "transpose_fed_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], [wt])
    save(helper.make_model(g, opset_imports=opset), os.path.join(out, "transpose_matmul.onnx"))

    wf = numpy_helper.from_array(spread((8, 18), 0, rng), "wflat")
    shape = numpy_helper.from_array(np.array([8, 2, 3, 3], np.int64), "wshape")
    g = helper.make_graph(
        [helper.make_node("Reshape", ["wflat", "wshape"], ["w"], name="reshape_w"),
         helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="conv")],
        "reshape_fed_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 6])], [wf, shape])
    save(helper.make_model(g, opset_imports=opset), os.path.join(out, "reshape_conv.onnx"))

    for name, shape in (("transpose_matmul", (4, 8)), ("reshape_conv", (1, 2, 6, 6))):
        d = os.path.join(out, name + "_data")
        os.makedirs(d, exist_ok=True)
        for i in range(16):
            np.save(os.path.join(d, f"{i:04d}.npy"), rng.uniform(-1, 1, size=shape).astype(np.float32))


if __name__ == "__main__":
    main(sys.argv[1])
