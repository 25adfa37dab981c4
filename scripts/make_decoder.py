#!/usr/bin/python3
"""Synthetic decoder-shaped float models with their weights in external data,
for the large-model path (DESIGN "Large models"): `scripts/bench.sh scale` and
tests/e2e/test_external_data.sh.

    make_decoder.py OUT.onnx [--gib G | --layers L] [--hidden H] [--vocab V] [--tokens T]
        [--inputs DIR]

The model: token ids [1, T] -> Gather(embedding [V, H]) -> L blocks of
(LayerNorm -> q, k, v MatMuls [H, H] -> softmax(q k^T / sqrt(H)) v -> MatMul
[H, H] -> residual Add -> LayerNorm -> MatMul [H, 4H] -> Relu -> MatMul [4H, H]
-> residual Add) -> LayerNorm -> MatMul [H, V] logits. --gib picks L so that
the float32 weights total about G GiB. Every initializer goes to OUT.onnx.data,
written tensor by tensor (a 12 GiB model never sits in this script's memory),
each at a 4096-byte aligned offset. --inputs writes two .npy samples of ids.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--gib", type=float)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--inputs")
    a = ap.parse_args()
    H, V, T = a.hidden, a.vocab, a.tokens
    per_layer = 12 * H * H * 4
    fixed = 2 * V * H * 4
    layers = a.layers
    if a.gib is not None:
        layers = max(1, round((a.gib * 2**30 - fixed) / per_layer))

    data_name = os.path.basename(a.out) + ".data"
    rng = np.random.default_rng(11)
    inits, nodes = [], []
    with open(a.out + ".data", "wb") as data:

        def weight(name, shape, scale):
            # Written in slices of rows so that memory stays at one slice.
            t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=shape, data_location=TensorProto.EXTERNAL)
            offset = (data.tell() + 4095) // 4096 * 4096
            data.write(b"\0" * (offset - data.tell()))
            rows_per_slice = max(1, (16 << 20) // (4 * int(np.prod(shape[1:], dtype=np.int64))))
            for r in range(0, shape[0], rows_per_slice):
                n = min(rows_per_slice, shape[0] - r)
                data.write((rng.standard_normal((n, *shape[1:]), dtype=np.float32) * np.float32(scale)).tobytes())
            for k, v in (("location", data_name), ("offset", offset), ("length", data.tell() - offset)):
                e = t.external_data.add()
                e.key, e.value = k, str(v)
            inits.append(t)
            return name

        def ones(name, n, value):
            t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[n], data_location=TensorProto.EXTERNAL)
            offset = (data.tell() + 63) // 64 * 64
            data.write(b"\0" * (offset - data.tell()))
            data.write(np.full(n, value, np.float32).tobytes())
            for k, v in (("location", data_name), ("offset", offset), ("length", 4 * n)):
                e = t.external_data.add()
                e.key, e.value = k, str(v)
            inits.append(t)
            return name

        def node(op, ins, out, **attrs):
            nodes.append(helper.make_node(op, ins, [out], name=out + "_" + op, **attrs))
            return out

        def norm(x, name):
            return node("LayerNormalization", [x, ones(name + ".gamma", H, 1.0), ones(name + ".beta", H, 0.0)],
                        name, axis=-1)

        s = 1.0 / np.sqrt(H)
        x = node("Gather", [weight("embed", [V, H], 1.0), "ids"], "x0")
        for i in range(layers):
            p = f"l{i}"
            h = norm(x, p + ".ln1")
            q = node("MatMul", [h, weight(p + ".wq", [H, H], s)], p + ".q")
            k = node("MatMul", [h, weight(p + ".wk", [H, H], s)], p + ".k")
            v = node("MatMul", [h, weight(p + ".wv", [H, H], s)], p + ".v")
            kt = node("Transpose", [k], p + ".kt", perm=[0, 2, 1])
            sc = node("MatMul", [q, kt], p + ".scores")
            sc = node("Mul", [sc, ones(p + ".inv_sqrt_h", 1, float(s))], p + ".scaled")
            pr = node("Softmax", [sc], p + ".probs", axis=-1)
            at = node("MatMul", [pr, v], p + ".attn")
            o = node("MatMul", [at, weight(p + ".wo", [H, H], s)], p + ".o")
            x = node("Add", [x, o], p + ".res1")
            h = norm(x, p + ".ln2")
            u = node("MatMul", [h, weight(p + ".w1", [H, 4 * H], s)], p + ".up")
            u = node("Relu", [u], p + ".act")
            d = node("MatMul", [u, weight(p + ".w2", [4 * H, H], 0.5 / np.sqrt(H))], p + ".down")
            x = node("Add", [x, d], p + ".res2")
        h = norm(x, "final_ln")
        node("MatMul", [h, weight("lm_head", [H, V], s)], "logits")

    g = helper.make_graph(nodes, "decoder", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, T])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, T, V])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    with open(a.out, "wb") as f:
        f.write(m.SerializeToString())
    if a.inputs:
        os.makedirs(a.inputs, exist_ok=True)
        for i in range(2):
            np.save(os.path.join(a.inputs, f"ids{i}.npy"), rng.integers(0, V, (1, T), dtype=np.int64))
    print(f"{a.out}: {layers} layers, hidden {H}, vocab {V}, {os.path.getsize(a.out + '.data') / 2**30:.2f} GiB of weights")


if __name__ == "__main__":
    main()
