#!/usr/bin/python3
"""A Silero-VAD-style model for the control-flow tests: the whole network is
inside the branches of an If, as Silero VAD keeps its 18 Conv and 2 LSTM.

    subgraph_models.py make DIR
        DIR/silero.onnx  x[1,1,T] -> If(T > 100)
            then: Conv(1->48,k3) Relu Conv(48->48,k3) Relu -> LSTM(48->64) -> y[T,1,64]
            else: Conv(1->32,k5) Relu Conv(32->48,k3) Relu -> LSTM(48->64) -> y[T,1,64]
            The branches read x from the enclosing graph by name (no inputs).
        DIR/in/  .npy samples: two with T = 128 (then branch), two with T = 64 (else)
        DIR/loop.onnx  x[4] -> Loop(3 iterations; body: acc = acc * 2 + 1) -> y[4]
        DIR/loop_in/  two .npy samples
        DIR/loop_mm.onnx  x[1,32] -> Loop(4 iterations; body: acc = Relu(acc @ W) + x, W[32,32]
            an initializer of the body, x read from outside) -> y[1,32]
        DIR/loop_mm_in/  four .npy samples
        DIR/scan_mm.onnx  x[6,32] -> Scan(over x's rows; state h[1,32] from a zero initializer;
            body: h = Relu(h @ W + x_t @ U), W and U [32,32] initializers of the body) -> h_last[1,32], hs[6,1,32]
        DIR/scan_mm_in/  four .npy samples
    subgraph_models.py check_profile PROFILE.json
        the profile lists the branches' tensors as branches/<then|else>_branch/<name>
        with counts of the samples that took each branch, and the Loop body's
        tensor with every iteration in its histogram (3 x 4 values per sample)
    subgraph_models.py check_static FLOAT.onnx MODEL.onnx
        the branches hold QDQ Convs and DynamicQuantizeLSTM, and >= 90% of the
        float weight bytes (the float model's initializers of rank >= 2, in
        the branches too) are no longer float
    subgraph_models.py check_dynamic MODEL.onnx REPORT.json
        every Conv/LSTM inside the branches rewritten (ConvInteger,
        DynamicQuantizeLSTM), none float left, weight coverage >= 0.9
LSTM and Conv weights are ~99% of the float weight bytes, as in Silero VAD.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

f32 = np.float32


def branch(rng, name, c1, k1):
    p = name + "_"
    init = [
        numpy_helper.from_array((rng.standard_normal((c1, 1, k1)) * 0.5).astype(f32), p + "w1"),
        numpy_helper.from_array((rng.standard_normal(c1) * 0.1).astype(f32), p + "b1"),
        numpy_helper.from_array((rng.standard_normal((48, c1, 3)) / np.sqrt(3 * c1)).astype(f32), p + "w2"),
        numpy_helper.from_array((rng.standard_normal(48) * 0.1).astype(f32), p + "b2"),
        numpy_helper.from_array((rng.standard_normal((1, 256, 48)) * 0.2).astype(f32), p + "W"),
        numpy_helper.from_array((rng.standard_normal((1, 256, 64)) * 0.15).astype(f32), p + "R"),
        numpy_helper.from_array((rng.standard_normal((1, 512)) * 0.1).astype(f32), p + "B"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", p + "w1", p + "b1"], [p + "c1"], name=p + "conv1", pads=[k1 // 2, k1 // 2]),
        helper.make_node("Relu", [p + "c1"], [p + "r1"], name=p + "relu1"),
        helper.make_node("Conv", [p + "r1", p + "w2", p + "b2"], [p + "c2"], name=p + "conv2", pads=[1, 1]),
        helper.make_node("Relu", [p + "c2"], [p + "r2"], name=p + "relu2"),
        helper.make_node("Transpose", [p + "r2"], [p + "seq"], name=p + "to_seq", perm=[2, 0, 1]),
        helper.make_node("LSTM", [p + "seq", p + "W", p + "R", p + "B"], [p + "Y"], name=p + "lstm", hidden_size=64),
        helper.make_node("Squeeze", [p + "Y", p + "axes"], [p + "y"], name=p + "squeeze"),
    ]
    init.append(numpy_helper.from_array(np.array([1], np.int64), p + "axes"))
    out = helper.make_tensor_value_info(p + "y", TensorProto.FLOAT, ["T", 1, 64])
    return helper.make_graph(nodes, name, [], [out], init)


def make(d):
    rng = np.random.default_rng(23)
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    then_g = branch(rng, "then", 48, 3)
    else_g = branch(rng, "else", 32, 5)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "two"], ["T"], name="length", axis=0),
        helper.make_node("Greater", ["T", "hundred"], ["long"], name="is_long"),
        helper.make_node("If", ["long"], ["y"], name="branches", then_branch=then_g, else_branch=else_g),
    ]
    g = helper.make_graph(
        nodes, "silero_style",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "T"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["T", 1, 64])],
        [numpy_helper.from_array(np.array(2, np.int64), "two"),
         numpy_helper.from_array(np.array(100, np.int64), "hundred")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "silero.onnx"))
    for i, t in enumerate([128, 128, 64, 64]):
        x = np.sin(np.arange(t, dtype=f32) * f32(0.05 * (i + 1))) + rng.standard_normal(t).astype(f32) * f32(0.3)
        np.save(os.path.join(d, "in", "%04d.npy" % i), x.reshape(1, 1, t).astype(f32))


def make_loop(d):
    rng = np.random.default_rng(5)
    os.makedirs(os.path.join(d, "loop_in"), exist_ok=True)
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc", "two_f"], ["doubled"], name="double"),
         helper.make_node("Add", ["doubled", "one_f"], ["acc_next"], name="plus_one"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going")],
        "loop_body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_next", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.array([2], f32), "two_f")])
    g = helper.make_graph(
        [helper.make_node("Loop", ["trips", "go", "x"], ["y"], name="loop", body=body)],
        "loop_model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.array(3, np.int64), "trips"),
         numpy_helper.from_array(np.array(True), "go"),
         numpy_helper.from_array(np.array([1], f32), "one_f")])  # read by the body from outside
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "loop.onnx"))
    for i in range(2):
        np.save(os.path.join(d, "loop_in", "%04d.npy" % i), rng.standard_normal(4).astype(f32))


def make_loop_mm(d):
    rng = np.random.default_rng(9)
    os.makedirs(os.path.join(d, "loop_mm_in"), exist_ok=True)
    w = (rng.standard_normal((32, 32)) / np.sqrt(32)).astype(f32)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["acc", "w"], ["mm"], name="mm"),
         helper.make_node("Relu", ["mm"], ["act"], name="act"),
         helper.make_node("Add", ["act", "x"], ["acc_next"], name="skip"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going")],
        "loop_body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc", TensorProto.FLOAT, [1, 32])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_next", TensorProto.FLOAT, [1, 32])],
        [numpy_helper.from_array(w, "w")])
    g = helper.make_graph(
        [helper.make_node("Loop", ["trips", "go", "x"], ["y"], name="loop", body=body)],
        "loop_mm_model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])],
        [numpy_helper.from_array(np.array(4, np.int64), "trips"),
         numpy_helper.from_array(np.array(True), "go")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "loop_mm.onnx"))
    for i in range(4):
        np.save(os.path.join(d, "loop_mm_in", "%04d.npy" % i), rng.standard_normal((1, 32)).astype(f32))


def make_scan_mm(d):
    rng = np.random.default_rng(11)
    os.makedirs(os.path.join(d, "scan_mm_in"), exist_ok=True)
    w = (rng.standard_normal((32, 32)) / np.sqrt(32)).astype(f32)
    u = (rng.standard_normal((32, 32)) / np.sqrt(32)).astype(f32)
    body = helper.make_graph(
        [helper.make_node("Unsqueeze", ["x_t", "zero_axis"], ["x_row"], name="row"),
         helper.make_node("MatMul", ["h", "w"], ["hw"], name="mm_h"),
         helper.make_node("MatMul", ["x_row", "u"], ["xu"], name="mm_x"),
         helper.make_node("Add", ["hw", "xu"], ["pre"], name="sum"),
         helper.make_node("Relu", ["pre"], ["h_next"], name="act"),
         helper.make_node("Identity", ["h_next"], ["h_out"], name="emit")],
        "scan_body",
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 32]),
         helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [32])],
        [helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [1, 32]),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, 32])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(u, "u"),
         numpy_helper.from_array(np.array([0], np.int64), "zero_axis")])
    g = helper.make_graph(
        [helper.make_node("Scan", ["h0", "x"], ["h_last", "hs"], name="scan", body=body, num_scan_inputs=1)],
        "scan_mm_model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 32])],
        [helper.make_tensor_value_info("h_last", TensorProto.FLOAT, [1, 32]),
         helper.make_tensor_value_info("hs", TensorProto.FLOAT, [6, 1, 32])],
        [numpy_helper.from_array(np.zeros((1, 32), f32), "h0")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "scan_mm.onnx"))
    for i in range(4):
        np.save(os.path.join(d, "scan_mm_in", "%04d.npy" % i), rng.standard_normal((6, 32)).astype(f32))


def check_profile(path):
    t = json.load(open(path))["tensors"]
    names = sorted(t)
    # Silero-style: 2 samples of T=128 take then, 2 of T=64 take else.
    assert t["branches/then_branch/then_c1"]["count"] == 2 * 48 * 128, t["branches/then_branch/then_c1"]["count"]
    assert t["branches/else_branch/else_c1"]["count"] == 2 * 32 * 64, t["branches/else_branch/else_c1"]["count"]
    assert "branches/then_branch/then_Y" in t and "branches/else_branch/else_r2" in t, names
    # x is the main graph's; the branches read it from outside and do not list it again.
    assert "x" in t and not any(n.endswith("/x") for n in names), names
    print("profile: %d tensors, %d inside If branches" % (len(t), sum("/" in n for n in names)))


def check_loop_profile(path, x_dir):
    t = json.load(open(path))["tensors"]
    body = t["loop/body/acc_next"]
    assert body["count"] == 2 * 3 * 4, body["count"]  # 2 samples x 3 iterations x 4 values
    xs = [np.load(os.path.join(x_dir, f)) for f in sorted(os.listdir(x_dir))]
    every = np.concatenate([np.concatenate([x * 2 + 1, (x * 2 + 1) * 2 + 1, ((x * 2 + 1) * 2 + 1) * 2 + 1]) for x in xs])
    assert np.isclose(body["min"], every.min()) and np.isclose(body["max"], every.max()), (body["min"], body["max"], every)
    assert "loop/body/doubled" in t and "loop/body/acc" in t, sorted(t)
    print("loop profile: body histogram over every iteration (%d values)" % body["count"])


def float_weights(g):
    """name -> bytes of the float initializers of rank >= 2, bodies included."""
    out = {t.name: numpy_helper.to_array(t).nbytes for t in g.initializer
           if t.data_type == TensorProto.FLOAT and len(t.dims) >= 2}
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                out.update(float_weights(a.g))
    return out


def check_static(float_model, model):
    m = onnx.load(model)
    onnx.checker.check_model(m)
    if_node = [n for n in m.graph.node if n.op_type == "If"][0]
    for a in if_node.attribute:
        ops = [n.op_type for n in a.g.node]
        assert "DynamicQuantizeLSTM" in ops and "LSTM" not in ops, (a.name, ops)
        assert "QuantizeLinear" in ops and "DequantizeLinear" in ops, (a.name, ops)
        assert len(a.g.input) == 0, (a.name, [i.name for i in a.g.input])
    # The model's own float weights still float after conversion (new float
    # tensors such as DynamicQuantizeLSTM's scales are not weights of the model).
    original = float_weights(onnx.load(float_model).graph)
    left = float_weights(m.graph)
    before = sum(original.values())
    after = sum(b for name, b in original.items() if name in left)
    fraction = 1 - after / before
    assert fraction >= 0.9, (before, after)
    print("static: %.1f%% of %d float weight bytes quantized" % (100 * fraction, before))


def check_dynamic(model, report):
    m = onnx.load(model)
    onnx.checker.check_model(m)
    if_node = [n for n in m.graph.node if n.op_type == "If"][0]
    for a in if_node.attribute:
        ops = [n.op_type for n in a.g.node]
        assert "DynamicQuantizeLSTM" in ops and "LSTM" not in ops, (a.name, ops)
        assert ops.count("ConvInteger") == 2 and "Conv" not in ops, (a.name, ops)
        # outer-scope x stays a free name, not a branch input
        assert len(a.g.input) == 0, (a.name, [i.name for i in a.g.input])
    assert any(o.domain == "com.microsoft" for o in m.opset_import), m.opset_import
    c = json.load(open(report))["weight_coverage"]
    assert c["fraction"] >= 0.9, c
    print("dynamic: %.1f%% of %d weight bytes quantized" % (100 * c["fraction"], c["weight_bytes"]))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
        make_loop(sys.argv[2])
        make_loop_mm(sys.argv[2])
        make_scan_mm(sys.argv[2])
    elif sys.argv[1] == "check_profile":
        check_profile(sys.argv[2])
    elif sys.argv[1] == "check_loop_profile":
        check_loop_profile(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "check_static":
        check_static(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "check_dynamic":
        check_dynamic(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: subgraph_models.py make DIR | check_dynamic MODEL REPORT")
