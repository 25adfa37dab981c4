#!/usr/bin/env python3
"""Writes DIR/softmax_attn for scripts/bench.sh speed (ZOO_DIR=DIR BENCH_MODELS=softmax_attn).

A BERT-base layer's attention probabilities: Softmax-13 over the keys of
[1, 12, 128, 128] scores, with 8 inputs of N(0, 3) scores (fixed seed) in the
zoo's layout (model.onnx, inputs/sample_N.npy). Needs python3-onnx and numpy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper


def main():
    if len(sys.argv) != 2:
        print("error: usage: make_softmax_bench.py DIR", file=sys.stderr)
        return 2
    out = os.path.join(sys.argv[1], "softmax_attn")
    os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
    shape = [1, 12, 128, 128]
    node = helper.make_node("Softmax", ["scores"], ["probs"], axis=-1)
    graph = helper.make_graph([node], "softmax_attn",
                              [helper.make_tensor_value_info("scores", onnx.TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("probs", onnx.TensorProto.FLOAT, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, os.path.join(out, "model.onnx"))
    rng = np.random.default_rng(1)
    for i in range(8):
        np.save(os.path.join(out, "inputs", f"sample_{i}.npy"), (rng.standard_normal(shape) * 3).astype(np.float32))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
