#!/usr/bin/env python3
"""Print one output quantization step of a quantized ONNX model: the largest
scale of the DequantizeLinear nodes that produce its graph outputs. An output
computed by a float island (e.g. a final Gemm left in float) has no step of
its own; it takes the step of the activations entering the island, i.e. the
scale of the nearest DequantizeLinear of a non-constant tensor upstream.

  /usr/bin/python3 tests/interop/output_step.py MODEL.onnx

Exit 2 with an error line when no such DequantizeLinear exists.
"""

import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main(path):
    model = onnx.load(path)
    graph = model.graph
    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    consts[node.output[0]] = numpy_helper.to_array(a.t)
    producer = {o: n for n in graph.node for o in n.output}

    def dq_step(name, seen):
        node = producer.get(name)
        if node is None or name in seen:
            return None
        seen.add(name)
        if node.op_type == "DequantizeLinear":
            if node.input[0] in consts or node.input[1] not in consts:
                return None  # a weight, or a scale computed at run time
            return float(np.max(consts[node.input[1]]))
        steps = [dq_step(i, seen) for i in node.input if i and i not in consts]
        steps = [s for s in steps if s is not None]
        return max(steps) if steps else None

    step = 0.0
    for out in graph.output:
        s = dq_step(out.name, set())
        if s is None:
            print(f"error: {path}: output '{out.name}' has no DequantizeLinear of an activation upstream",
                  file=sys.stderr)
            return 2
        step = max(step, s)
    print(f"{step:.9g}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: output_step.py MODEL.onnx", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
