#!/usr/bin/env python3
"""Makes the model that exercises every target rule, or checks that a model
converted for a target follows that target's rules (independently of
qconvert --check-target, which the shell test runs as well).

  target_rules.py make DIR            writes DIR/rules.onnx and DIR/calib/*.npy
  target_rules.py check MODEL TARGET.json

The model: Conv -> Relu (the first layer, a bias) -> Sigmoid and Tanh (fixed
outputs) -> Concat (same parameters) -> MaxPool and Reshape (shared with their
input) -> MatMul of two activations (B through a Transpose) -> LayerNormalization
(a scale that may be a weight) -> Softmax (fixed) -> Flatten -> Gemm (a fully
connected layer, its own granularity; a bias)."""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make(out):
    rng = np.random.default_rng(21)
    init = lambda name, a: numpy_helper.from_array(a.astype(np.float32), name)
    inits = [
        init("w1", rng.normal(0, 0.5, (4, 3, 3, 3))), init("b1", rng.normal(0, 0.1, 4)),
        numpy_helper.from_array(np.array([1, 8, 16], np.int64), "shape"),
        init("gamma", rng.uniform(0.5, 2, 8)), init("beta", rng.normal(0, 0.1, 8)),
        init("w2", rng.normal(0, 0.2, (10, 64))), init("b2", rng.normal(0, 0.1, 10)),
    ]
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], "conv", pads=[1, 1, 1, 1]),
        n("Relu", ["c1"], ["r1"], "relu"),
        n("Sigmoid", ["r1"], ["s"], "sigmoid"),
        n("Tanh", ["c1"], ["t"], "tanh"),
        n("Concat", ["s", "t"], ["cat"], "concat", axis=1),
        n("MaxPool", ["cat"], ["p"], "maxpool", kernel_shape=[2, 2], strides=[2, 2]),
        n("Reshape", ["p", "shape"], ["f"], "reshape"),
        n("Transpose", ["f"], ["ft"], "transpose", perm=[0, 2, 1]),
        n("MatMul", ["f", "ft"], ["a"], "matmul"),
        n("LayerNormalization", ["a", "gamma", "beta"], ["ln"], "norm", axis=-1),
        n("Softmax", ["ln"], ["sm"], "softmax", axis=-1),
        n("Flatten", ["sm"], ["fl"], "flatten"),
        n("Gemm", ["fl", "w2", "b2"], ["y"], "gemm", transB=1),
    ]
    g = helper.make_graph(nodes, "rules", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    os.makedirs(out, exist_ok=True)
    onnx.save(m, os.path.join(out, "rules.onnx"))
    os.makedirs(os.path.join(out, "calib"), exist_ok=True)
    for i in range(16):
        np.save(os.path.join(out, "calib", f"{i:02d}.npy"), rng.normal(0, 1, (1, 3, 8, 8)).astype(np.float32))


def check(model_path, target_path):
    m = onnx.load(model_path)
    t = json.load(open(target_path))
    q = t.get("quantize", {})
    act = q.get("activations", {})
    act_type, schema = act.get("type", "uint8"), act.get("schema", "asymmetric")
    w = q.get("weights", {})
    fixed = q.get("fixed_output_params", {})
    g = m.graph
    consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    producer = {o: nd for nd in g.node for o in nd.output}
    consumers = {}
    for nd in g.node:
        for i in nd.input:
            consumers.setdefault(i, []).append(nd)
    errors = []

    def params(qdq):  # scale, zero point, integer type name
        s, z = consts[qdq.input[1]], consts[qdq.input[2]]
        return s.astype(np.float64), z.astype(np.int64), str(z.dtype)

    def q_of(name):  # the QuantizeLinear of float tensor `name`
        return next((c for c in consumers.get(name, []) if c.op_type == "QuantizeLinear"), None)

    def dq_into(node, k):  # the DequantizeLinear feeding input k of `node`
        p = producer.get(node.input[k]) if k < len(node.input) else None
        return p if p is not None and p.op_type == "DequantizeLinear" else None

    def float_of(node, k):  # the float tensor behind a DQ'd activation input
        dq = dq_into(node, k)
        if dq is None or dq.input[0] in consts:
            return None
        qn = producer.get(dq.input[0])
        return qn.input[0] if qn is not None and qn.op_type == "QuantizeLinear" else None

    ops = {nd.name: nd for nd in g.node}
    # Activations: type and schema, fixed outputs.
    matmul = ops["matmul"]
    b_tensor = float_of(matmul, 1) if float_of(matmul, 0) else None
    for nd in g.node:
        if nd.op_type != "QuantizeLinear" or nd.input[0] in consts:
            continue
        s, z, ty = params(nd)
        src = producer.get(nd.input[0])
        if src is not None and src.op_type in fixed:
            want = fixed[src.op_type]
            if not (np.isclose(s.item(), want["scale"], rtol=1e-6) and z.item() == want["zero_point"]):
                errors.append(f"fixed_output_params.{src.op_type}: {nd.input[0]} has {s.item()}, {z.item()}")
            continue
        mb = q.get("matmul_activation_b")
        if mb and nd.input[0] == b_tensor:
            if ty != mb["type"] or (mb.get("schema", "symmetric") == "symmetric" and z.item() not in (0, 32768, 128)):
                errors.append(f"matmul_activation_b: {nd.input[0]} is {ty} zero point {z.item()}")
            continue
        if ty != act_type and not (schema == "symmetric-uint8" and ty == "uint8" and z.item() == 0):
            errors.append(f"activations.type: {nd.input[0]} is {ty}, want {act_type}")
        if schema == "symmetric" and z.item() not in (0, 128, 32768):
            errors.append(f"activations.schema: {nd.input[0]} zero point {z.item()}")
    # Parameters that must agree.
    def same(a, b):
        pa, pb = q_of(a), q_of(b)
        if pa is None or pb is None:
            return True
        (sa, za, _), (sb, zb, _) = params(pa), params(pb)
        return sa.item() == sb.item() and za.item() == zb.item()
    for op_name, ins, out in (("Concat", ["s", "t"], "cat"), ("MaxPool", ["cat"], "p"), ("Reshape", ["p"], "f"),
                              ("Flatten", ["sm"], "fl")):
        rule = "same_params" if op_name in q.get("same_params", []) else (
            "shares_input_params" if op_name in q.get("shares_input_params", []) else None)
        if rule is None:
            continue
        for i in ins:
            if producer[i].op_type in fixed:  # a fixed member may keep its own (the report says so)
                continue
            if not same(i, out):
                errors.append(f"{rule}: {op_name} input {i} and output {out} differ")
    # Weights: type, range (first layer's too), granularity; biases.
    gran = w.get("granularity", "per-channel")
    by_op = w.get("granularity_by_op", {})
    wmax = (w.get("range") or [-127, 127])[1]
    for name, first in (("conv", True), ("gemm", False), ("matmul", False)):
        nd = ops[name]
        dq = dq_into(nd, 1)
        if dq is None or dq.input[0] not in consts:
            continue
        data, (s, z, ty) = consts[dq.input[0]].astype(np.int64), params(dq)
        want_ty = w.get("type", "int8")
        if ty != want_ty:
            errors.append(f"weights.type: {name} has {ty}, want {want_ty}")
        m_ = (w.get("first_layer_range") or [0, wmax])[1] if first else wmax
        zp = 128 if ty == "uint8" else 0
        if np.abs(data - zp).max() > m_:
            errors.append(f"weights.range: {name} reaches {np.abs(data - zp).max()}, want <= {m_}")
        want_gran = by_op.get(nd.op_type, gran)
        if want_gran == "per-tensor" and s.size != 1:
            errors.append(f"weights.granularity: {name} is per channel, want per tensor")
        if nd.op_type in ("Conv", "Gemm"):
            bdq = dq_into(nd, 2)
            want_b = q.get("bias", "int32")
            if want_b == "float" and bdq is not None:
                errors.append(f"bias: {name} bias quantized, want float")
            if want_b in ("int32", "int64") and (bdq is None or params(bdq)[2] != "int32"):
                errors.append(f"bias: {name} bias not int32")
    for op, k in w.get("inputs_by_op", {}).items():
        nd = next(n_ for n_ in g.node if n_.op_type == op)
        dq = dq_into(nd, k)
        if dq is None or dq.input[0] not in consts:
            errors.append(f"weights.inputs_by_op.{op}: input {k} not quantized")
    # Placement: inputs only means no Q on the Conv output (its reader, Relu/Tanh, is not an op such targets quantize).
    if q.get("placement") == "inputs":
        for nd in g.node:
            if nd.op_type == "QuantizeLinear" and nd.input[0] in ("c1",) and not any(
                    c.op_type in q.get("ops", []) for c in consumers.get("c1", []) if c.op_type != "QuantizeLinear"):
                errors.append("placement: the Conv output is quantized though no quantized op reads it")
    for e in errors:
        print(f"{os.path.basename(target_path)}: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))
