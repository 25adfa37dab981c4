#!/usr/bin/python3
"""Small float models for the dynamic-quantization tests, and the scheme's
maths written out in numpy to check qrun's outputs against.

    dynamic_models.py make DIR
        DIR/linear.onnx  x[2,3,70] -> MatMul W[70,37] -> Relu -> MatMul W[37,5]
        DIR/gemm.onnx    x[4,70] -> Gemm(W[9,70], C[9], transB=1, alpha=0.7, beta=1.3)
        DIR/old.onnx     opset 10 MatMul (DynamicQuantizeLinear needs 11: upgraded)
        DIR/linear_in/, DIR/gemm_in/  three .npy samples each
    dynamic_models.py check MODEL.onnx INPUT_DIR QRUN_OUT_DIR int8|int4 GROUP
        recomputes every output with the scheme (int8: DynamicQuantizeLinear
        per tensor x symmetric int8 per column; int4: torchao Int8DynActInt4Weight,
        int8 per row x int4 per group of GROUP along K) and compares.
K = 70 and 37 are not multiples of any group size: the last group is shorter.
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

f32 = np.float32


def make(d):
    rng = np.random.default_rng(7)
    os.makedirs(d, exist_ok=True)
    w1 = rng.standard_normal((70, 37)).astype(f32) * f32(0.2)
    w1[:, 3] *= 20  # an outlier output column: its groups are its own
    w2 = rng.standard_normal((37, 5)).astype(f32) * f32(0.3)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2")],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3, 70])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 3, 5])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(d, "linear.onnx"))
    wg = rng.standard_normal((9, 70)).astype(f32) * f32(0.1)
    c = rng.standard_normal(9).astype(f32)
    g = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "c"], ["y"], name="gemm", transB=1, alpha=0.7, beta=1.3)],
        "gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 70])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 9])],
        [numpy_helper.from_array(wg, "w"), numpy_helper.from_array(c, "c")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(d, "gemm.onnx"))
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "old",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.ones((4, 3), f32), "w")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 10)]), os.path.join(d, "old.onnx"))
    for name, shape in (("linear", (2, 3, 70)), ("gemm", (4, 70))):
        os.makedirs(os.path.join(d, name + "_in"), exist_ok=True)
        for k in range(3):
            x = rng.standard_normal(shape).astype(f32) * f32(1.5 + k)
            np.save(os.path.join(d, name + "_in", "sample_%d.npy" % k), x)


def int8_dynamic(x, w, bias):
    """DynamicQuantizeLinear (uint8, per tensor) x symmetric int8 per column."""
    lo, hi = min(f32(0), x.min()), max(f32(0), x.max())
    s = f32(hi - lo) / f32(255)
    zp = np.clip(np.rint(f32(0) - lo / s), 0, 255)
    q = np.clip(np.rint(x / s) + zp, 0, 255).astype(np.int64)
    sw = (np.abs(w.astype(np.float64)).max(axis=0) / 127).astype(f32)
    sw[sw == 0] = 1
    qw = np.clip(np.rint(w / sw), -128, 127).astype(np.int64)
    acc = (q - int(zp)) @ qw
    y = acc.astype(f32) * (s * sw)
    return y if bias is None else y + bias


def int4_dynamic(x, w, bias, group):
    """torchao Int8DynActInt4Weight: int8 per row (asymmetric), int4 per group (absmax / 7.5)."""
    k, n = w.shape
    rows = x.reshape(-1, k)
    lo = np.minimum(rows.min(axis=1), f32(0))
    hi = np.maximum(rows.max(axis=1), f32(0))
    sa = np.maximum((hi - lo) / f32(255), np.finfo(f32).eps).astype(f32)
    za = np.clip(np.rint(f32(-128) - lo / sa), -128, 127)
    qa = np.clip(np.rint(rows / sa[:, None]) + za[:, None], -128, 127).astype(np.int64) - za[:, None].astype(np.int64)
    total = np.zeros((rows.shape[0], n), f32)
    for k0 in range(0, k, group):
        wg = w[k0:k0 + group]
        sw = np.maximum(np.abs(wg).max(axis=0) / f32(7.5), np.finfo(f32).eps).astype(f32)
        qw = np.clip(np.rint(wg / sw), -8, 7).astype(np.int64)
        total += (qa[:, k0:k0 + group] @ qw).astype(f32) * sw
    y = total * sa[:, None]
    if bias is not None:
        y = y + bias
    return y.reshape(x.shape[:-1] + (n,))


def run_naive(model, x, scheme, group):
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    vals = {model.graph.input[0].name: x}
    for node in model.graph.node:
        a = vals[node.input[0]]
        if node.op_type == "Relu":
            vals[node.output[0]] = np.maximum(a, f32(0))
            continue
        attrs = {at.name: helper.get_attribute_value(at) for at in node.attribute}
        w = inits[node.input[1]]
        bias = None
        if node.op_type == "Gemm":
            if attrs.get("transB", 0):
                w = w.T
            w = (w * f32(attrs.get("alpha", 1.0))).astype(f32)
            if len(node.input) > 2:
                bias = (inits[node.input[2]] * f32(attrs.get("beta", 1.0))).astype(f32)
        if scheme == "int8":
            vals[node.output[0]] = int8_dynamic(a, w, bias)
        else:
            vals[node.output[0]] = int4_dynamic(a, w, bias, group)
    return vals[model.graph.output[0].name]


def check(model_path, in_dir, out_dir, scheme, group):
    model = onnx.load(model_path)
    worst = 0.0
    for f in sorted(os.listdir(in_dir)):
        stem = f[:-4]
        want = run_naive(model, np.load(os.path.join(in_dir, f)), scheme, group)
        got = np.load(os.path.join(out_dir, stem + ".out0.npy"))
        if got.shape != want.shape:
            print("FAIL %s: shape %s, naive %s" % (f, got.shape, want.shape))
            return 1
        err = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))
        # np.maximum keeps a NaN (Python's max(0.0, nan) is 0.0), and the test below fails on it.
        worst = float(np.maximum(worst, err))
    print("%s %s G=%d: qrun vs naive scheme, worst relative error %.2e" % (os.path.basename(model_path), scheme, group, worst))
    if not worst <= 1e-5:
        print("FAIL: qrun differs from the scheme's maths")
        return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])))
