#!/usr/bin/env python3
"""Opset 9 models in the style of Paddle2ONNX's older exports, for the opset
upgrade test (tests/e2e/test_opset_upgrade.sh).

  old_opset_models.py make DIR
        DIR/cnn9.onnx      opset 9: Conv, BatchNormalization, Relu, Dropout (ratio attribute), MaxPool,
                           Upsample (scales input), Slice/Pad/Clip (attributes), GlobalAveragePool,
                           Squeeze/Unsqueeze (axes attributes), Softmax (2-D coercion), Reshape, Gemm
        DIR/cnn9_in/       8 samples, x [1, 3, 8, 8]
        DIR/ops7.onnx      opset 7: Upsample (scales attribute, linear), BatchNormalization spatial=0, Softmax over
                           axis 2 of 4, LogSoftmax over the last, Hardmax, Split/ReduceSum (attributes),
                           Dropout with an unused mask, Clip, TopK (k attribute)
        DIR/ops7_in/       4 samples, x [1, 4, 3, 3]
        DIR/lppool9.onnx   opset 9 with LpPool, which has no upgrade
        DIR/lppool10.onnx  opset 10: MatMul then LpPool (QDQ possible, per-channel weights not)
        DIR/x4_in/         4 samples, x [1, 2, 4]
        DIR/relu6.onnx     opset 6, below the oldest opset upgraded
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def cnn9():
    rng = np.random.default_rng(23)
    f = lambda *s: rng.normal(0, 0.5, s).astype(np.float32)
    inits = [
        const("w", f(4, 3, 3, 3)), const("b", f(4)),
        const("gamma", np.abs(f(4)) + 0.5), const("beta", f(4)), const("mean", f(4)), const("var", np.abs(f(4)) + 0.5),
        const("up_scales", np.array([1, 1, 2, 2], np.float32)),
        const("shape", np.array([1, 4], np.int64)),
        const("fc_w", f(3, 4)), const("fc_b", f(3)),
    ]
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w", "b"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["conv", "gamma", "beta", "mean", "var"], ["bn"], name="bn", epsilon=1e-5),
        n("Relu", ["bn"], ["relu"], name="relu"),
        n("Dropout", ["relu"], ["drop"], name="drop", ratio=0.1),
        n("MaxPool", ["drop"], ["pool"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        n("Upsample", ["pool", "up_scales"], ["up"], name="up", mode="nearest"),
        n("Slice", ["up"], ["crop"], name="crop", starts=[1], ends=[7], axes=[2]),
        n("Pad", ["crop"], ["pad"], name="pad", pads=[0, 0, 1, 0, 0, 0, 1, 0], value=0.0),
        n("Clip", ["pad"], ["clip"], name="clip", min=0.0, max=6.0),
        n("GlobalAveragePool", ["clip"], ["gap"], name="gap"),
        n("Squeeze", ["gap"], ["sq"], name="sq", axes=[2, 3]),
        n("Unsqueeze", ["sq"], ["unsq"], name="unsq", axes=[1]),
        n("Softmax", ["unsq"], ["soft"], name="soft", axis=1),
        n("Reshape", ["soft", "shape"], ["flat"], name="flat"),
        n("Gemm", ["flat", "fc_w", "fc_b"], ["y"], name="fc", transB=1),
    ]
    g = helper.make_graph(nodes, "cnn9", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)], ir_version=4, producer_name="qtool-test")


def ops7():
    rng = np.random.default_rng(7)
    f = lambda *s: rng.normal(0, 0.5, s).astype(np.float32)
    n = helper.make_node
    nodes = [
        n("Upsample", ["x"], ["up"], name="up", scales=[1.0, 1.0, 2.0, 2.0], mode="linear"),
        n("BatchNormalization", ["up", "gamma", "beta", "mean", "var"], ["bn"], name="bn", spatial=0),
        n("Softmax", ["bn"], ["soft"], name="soft", axis=2),
        n("LogSoftmax", ["bn"], ["logsoft"], name="logsoft", axis=3),
        n("Split", ["soft"], ["s1", "s2"], name="split", axis=1, split=[1, 3]),
        n("Hardmax", ["s1"], ["hard"], name="hard"),
        n("ReduceSum", ["s2"], ["rsum"], name="rsum", axes=[2], keepdims=1),
        n("Dropout", ["logsoft"], ["drop", "mask"], name="drop", ratio=0.2),
        n("Clip", ["drop"], ["clip"], name="clip", min=-3.0, max=-0.5),
        n("TopK", ["clip"], ["top", "top_i"], name="top", k=2),
    ]
    inits = [const("gamma", np.abs(f(4, 6, 6)) + 0.5), const("beta", f(4, 6, 6)), const("mean", f(4, 6, 6)),
             const("var", np.abs(f(4, 6, 6)) + 0.5)]
    outs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
            for name, shape in (("hard", [1, 1, 6, 6]), ("rsum", [1, 3, 1, 6]), ("top", [1, 4, 6, 2]))]
    g = helper.make_graph(nodes, "ops7", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3, 3])], outs,
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 7)], ir_version=4)


def lppool(opset):
    n = helper.make_node
    w = np.arange(16, dtype=np.float32).reshape(4, 4) / 8 - 1
    g = helper.make_graph(
        [n("MatMul", ["x", "w"], ["m"], name="mm"), n("LpPool", ["m"], ["y"], name="lppool", kernel_shape=[2])],
        f"lppool{opset}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3])], [const("w", w)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=opset - 5)


def relu6():
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu6",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 6)], ir_version=3)


def make(d):
    os.makedirs(os.path.join(d, "cnn9_in"), exist_ok=True)
    # With every intermediate value's type and shape, as exporters often write them.
    m = onnx.shape_inference.infer_shapes(cnn9())
    onnx.checker.check_model(m)
    assert len(m.graph.value_info) > 10, "shape inference left the values untyped"
    onnx.save(m, os.path.join(d, "cnn9.onnx"))
    rng = np.random.default_rng(9)
    for i in range(8):
        np.save(os.path.join(d, "cnn9_in", f"s{i}.npy"), rng.normal(0, 1, (1, 3, 8, 8)).astype(np.float32))
    m = ops7()
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "ops7.onnx"))
    os.makedirs(os.path.join(d, "ops7_in"), exist_ok=True)
    for i in range(4):
        np.save(os.path.join(d, "ops7_in", f"s{i}.npy"), rng.normal(0, 1, (1, 4, 3, 3)).astype(np.float32))
    for opset in (9, 10):
        onnx.save(lppool(opset), os.path.join(d, f"lppool{opset}.onnx"))
    os.makedirs(os.path.join(d, "x4_in"), exist_ok=True)
    for i in range(4):
        np.save(os.path.join(d, "x4_in", f"s{i}.npy"), rng.normal(0, 1, (1, 2, 4)).astype(np.float32))
    onnx.save(relu6(), os.path.join(d, "relu6.onnx"))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "make":
        sys.exit(__doc__)
    make(sys.argv[2])
