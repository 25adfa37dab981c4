#!/usr/bin/python3
"""Recurrent models for the dynamic-quantization interop test
(tests/interop/test_dynamic_lstm_ort.sh), and the comparison it reports.

    make_lstm_models.py make DIR
        DIR/bi.onnx    bidirectional LSTM, bias, sequence_lens, initial_h/c: Y, Y_h, Y_c
        DIR/fwd.onnx   forward LSTM without bias, sequence_lens, Y_h only (entries past
                       their length keep their last Ht in the recurrent product's range)
        DIR/rev.onnx   reverse LSTM with peepholes and clip, then MatMul on Y_h
        DIR/gru.onnx   GRU then MatMul (GRU stays float, MatMul is quantized)
        DIR/in/        three X samples [7, 3, 10] (.npy) shared by all four
        DIR/long.onnx  bidirectional LSTM, 50 steps, batch 4, 128 inputs, 256 hidden, bias
        DIR/long_in/   two samples for it
    make_lstm_models.py maxdiff A_DIR B_DIR TOL
        max |A - B| over every <stem>.out<k>.npy; prints it and exits 1 above TOL.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

f32 = np.float32
S, N, I, H = 7, 3, 10, 12


def lstm_model(path, rng, direction, outputs, bias=True, lens=True, initial=True, peephole=False, clip=None,
               tail=None, op="LSTM", dims=(S, N, I, H), w_scale=0.3):
    S, N, I, H = dims  # noqa: N806 (the module's defaults, or a larger model)
    dirs = 2 if direction == "bidirectional" else 1
    gates = 4 if op == "LSTM" else 3
    inits = [numpy_helper.from_array((rng.standard_normal((dirs, gates * H, I)) * w_scale).astype(f32), "W"),
             numpy_helper.from_array((rng.standard_normal((dirs, gates * H, H)) * w_scale).astype(f32), "R")]
    inputs = ["x", "W", "R"]

    def optional(on, name, array):
        if on:
            inits.append(numpy_helper.from_array(array, name))
        inputs.append(name if on else "")

    optional(bias, "B", (rng.standard_normal((dirs, 2 * gates * H)) * 0.2).astype(f32))
    optional(lens, "lens", np.array([S, 5, 2, 1][:N], np.int32))
    optional(initial, "h0", (rng.standard_normal((dirs, N, H)) * 0.5).astype(f32))
    if op == "LSTM":
        optional(initial, "c0", (rng.standard_normal((dirs, N, H)) * 0.5).astype(f32))
        optional(peephole, "P", (rng.standard_normal((dirs, 3 * H)) * 0.2).astype(f32))
    while inputs[-1] == "":
        inputs.pop()
    names = ["Y", "Y_h", "Y_c"][: 3 if op == "LSTM" else 2]
    wanted = set(outputs) | ({"Y_h"} if tail else set())
    node_outputs = [n if n in wanted else "" for n in names]
    while node_outputs[-1] == "":
        node_outputs.pop()
    attrs = {"hidden_size": H, "direction": direction}
    if clip:
        attrs["clip"] = clip
    nodes = [helper.make_node(op, inputs, node_outputs, name="rnn", **attrs)]
    shapes = {"Y": [S, dirs, N, H], "Y_h": [dirs, N, H], "Y_c": [dirs, N, H]}
    graph_outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o]) for o in outputs]
    if tail:  # a MatMul on Y_h: quantized dynamically next to the recurrent node
        inits.append(numpy_helper.from_array((rng.standard_normal((H, 5)) * 0.3).astype(f32), "wt"))
        nodes.append(helper.make_node("MatMul", ["Y_h", "wt"], ["z"], name="head"))
        graph_outputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [dirs, N, 5]))
    g = helper.make_graph(nodes, os.path.basename(path)[:-5],
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, N, I])], graph_outputs, inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def make(d):
    rng = np.random.default_rng(23)
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    lstm_model(os.path.join(d, "bi.onnx"), rng, "bidirectional", ["Y", "Y_h", "Y_c"])
    lstm_model(os.path.join(d, "fwd.onnx"), rng, "forward", ["Y_h"], bias=False, initial=False)
    lstm_model(os.path.join(d, "rev.onnx"), rng, "reverse", ["Y", "Y_c"], lens=False, peephole=True, clip=3.0,
               tail=True)
    lstm_model(os.path.join(d, "gru.onnx"), rng, "forward", ["Y"], op="GRU", tail=True)
    for k in range(3):
        np.save(os.path.join(d, "in", "sample_%d.npy" % k), (rng.standard_normal((S, N, I)) * (1 + k)).astype(f32))
    # 50 steps of 256 hidden units: enough quantized activations for float
    # rounding to move some across a rounding boundary (see the test).
    long = (50, 4, 128, 256)
    os.makedirs(os.path.join(d, "long_in"), exist_ok=True)
    lstm_model(os.path.join(d, "long.onnx"), rng, "bidirectional", ["Y", "Y_h", "Y_c"], lens=False, initial=False,
               dims=long, w_scale=0.05)
    for k in range(2):
        np.save(os.path.join(d, "long_in", "sample_%d.npy" % k), rng.standard_normal(long[:3]).astype(f32))


def maxdiff(a_dir, b_dir, tol):
    files = sorted(f for f in os.listdir(a_dir) if f.endswith(".npy"))
    if not files or files != sorted(f for f in os.listdir(b_dir) if f.endswith(".npy")):
        print("FAIL: output files differ between %s and %s" % (a_dir, b_dir))
        return 1
    worst = 0.0
    for f in files:
        a = np.load(os.path.join(a_dir, f)).astype(np.float64)
        b = np.load(os.path.join(b_dir, f)).astype(np.float64)
        if a.shape != b.shape or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            print("FAIL: %s: shapes %s vs %s, or a non-finite value" % (f, a.shape, b.shape))
            return 1
        worst = max(worst, float(np.max(np.abs(a - b))) if a.size else 0.0)
    ok = worst <= tol
    print("%s max |qrun - ORT| %.3g (tolerance %g) over %d files" % ("ok  " if ok else "FAIL", worst, tol, len(files)))
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "maxdiff":
        sys.exit(maxdiff(sys.argv[2], sys.argv[3], float(sys.argv[4])))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
