"""Builds the models of the QLinear* bit-exactness test (run with /usr/bin/python3):
for uint8 and int8, one model whose input X [1, 16, 64, 64] holds every 8-bit
value 256 times and whose nodes are ONNX Runtime's com.microsoft QLinearAdd,
QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearConcat, QLinearAveragePool,
QLinearGlobalAveragePool and QLinearSoftmax (opset 1) with swept scales and zero
points, and DequantizeLinear -> Softmax -> QuantizeLinear (which ONNX Runtime
fuses into QLinearSoftmax and qrun lowers the same way):

  - Add / Mul with a constant B of X's shape (together with X every pair of
    8-bit values occurs once), a scalar B, a scalar A (the constant first), B
    broadcast along the last axis [64], along the channels [16, 1, 1], and A
    broadcast [64]; scale ratios sa/sc and sb/sc from 1e-7 to 1e9, so inside
    and outside the [2^-14, 2^8) range of MLAS's ARM fixed-point path, and
    products past int32;
  - Add with a scalar B for parameter sets where the float orders of MLAS's
    kernel give different results (found by sweeping), so that the fused
    arithmetic qrun reproduces is what the test checks;
  - lookup tables with scales from 1e-3 to 1 and every zero point class;
  - pools with and without padding, count_include_pad, ceil_mode, strides;
  - softmax over the last and an inner axis, ONNX Softmax opset 12 and 13 rows.

qrun and ONNX Runtime must agree on every byte (tests/interop/test_qlinear_ort.sh).

usage: make_qlinear_models.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = [1, 16, 64, 64]

# (sa, za, sb, zb, sc, zc, b) for a scalar b where fma(b, rb, base) and base + b * rb, or the two
# groupings of base = zc - (ra * za + rb * zb), round some element differently.
ORDER_SENSITIVE = {
    "uint8": [(0.0224485956, 240, 0.162087977, 62, 0.00402404461, 85, 83),
              (0.000331120711, 114, 0.0207223259, 246, 0.0316942297, 36, 196),
              (0.000417648494, 240, 0.00343109318, 202, 0.000556362153, 165, 198),
              (0.429778546, 152, 0.0129032014, 86, 0.00350077683, 219, 140),
              (0.00379208708, 66, 0.241433024, 181, 0.0367431231, 143, 177),
              (0.238760367, 193, 0.000196224311, 130, 0.00024092797, 178, 95)],
    "int8": [(0.00614148285, 42, 0.0132182091, -87, 0.0149837276, -69, -10),
             (0.00542497495, 20, 0.0198446475, 55, 0.000102720682, -124, 96),
             (0.0143506117, -23, 0.0698070601, -22, 0.000147227533, 2, -40),
             (0.00932165422, -56, 0.967080116, -106, 0.0342788883, -55, -101),
             (0.000952963135, -31, 0.0123607768, -101, 0.0632472113, 23, 125)],
}


class Builder:
    def __init__(self, dtype, rng):
        self.np = np.uint8 if dtype == "uint8" else np.int8
        self.tp = TensorProto.UINT8 if dtype == "uint8" else TensorProto.INT8
        self.lo, self.hi = (0, 255) if dtype == "uint8" else (-128, 127)
        self.rng = rng
        self.nodes, self.inits, self.outputs = [], [], []

    def const(self, value, dtype=None):
        name = f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype or self.np), name))
        return name

    def scale(self, value=None):
        if value is None:
            value = np.exp(self.rng.uniform(np.log(1e-4), np.log(1.0)))
        return self.const(np.float32(value), np.float32)

    def zero(self, value=None):
        return self.const(self.rng.integers(self.lo, self.hi + 1) if value is None else value)

    def node(self, op, inputs, **attrs):
        out = f"y{len(self.outputs)}"
        self.nodes.append(helper.make_node(op, inputs, [out], domain="com.microsoft", name=f"{op}_{out}", **attrs))
        self.outputs.append(helper.make_tensor_value_info(out, self.tp, None))

    def model(self):
        g = helper.make_graph(self.nodes, "qlinear_probe", [helper.make_tensor_value_info("X", self.tp, SHAPE)],
                              self.outputs, self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])


def build(dtype, rng):
    b = Builder(dtype, rng)
    every = np.arange(b.lo, b.hi + 1)
    pairs_b = np.repeat(every, 256).reshape(SHAPE).astype(b.np)  # with X: every (a, b) pair once
    for op in ("QLinearAdd", "QLinearMul"):
        for k in range(40):
            sa, sb, sc = np.exp(rng.uniform(np.log(1e-4), np.log(1.0), 3))
            sc *= (1e-5, 1.0, 1e3, 1.0)[k % 4]  # ratios beyond 2^8 and below 2^-14, and products past int32
            other = [pairs_b, pairs_b, pairs_b, rng.integers(b.lo, b.hi + 1, [1]),
                     rng.integers(b.lo, b.hi + 1, [64]), rng.integers(b.lo, b.hi + 1, [16, 1, 1])][k % 6]
            x_side = ["X", b.scale(sa), b.zero()]
            c_side = [b.const(other), b.scale(sb), b.zero()]
            first, second = (c_side, x_side) if k % 5 == 4 else (x_side, c_side)  # the constant as A
            b.node(op, first + second + [b.scale(sc), b.zero()])
    for sa, za, sb, zb, sc, zc, v in ORDER_SENSITIVE[dtype]:
        b.node("QLinearAdd", ["X", b.scale(sa), b.zero(za), b.const([v]), b.scale(sb), b.zero(zb), b.scale(sc), b.zero(zc)])
        b.node("QLinearAdd", [b.const([v]), b.scale(sb), b.zero(zb), "X", b.scale(sa), b.zero(za), b.scale(sc), b.zero(zc)])
    for k in range(12):
        xs, ys = np.exp(rng.uniform(np.log(1e-3), np.log(1.0), 2))
        zx = [b.lo, b.hi, 0, None][k % 4]
        b.node("QLinearSigmoid", ["X", b.scale(xs), b.zero(zx), b.scale(1.0 / 256 if k % 3 else ys), b.zero()])
        b.node("QLinearLeakyRelu", ["X", b.scale(xs), b.zero(zx), b.scale(ys), b.zero()],
               alpha=float(rng.uniform(0.01, 0.5)))
    for axis in (1, 3):
        ys, yz = b.scale(), b.zero()
        const = b.const(rng.integers(b.lo, b.hi + 1, SHAPE))
        b.node("QLinearConcat", [ys, yz, "X", b.scale(), b.zero(), const, b.scale(), b.zero(), "X", ys, yz], axis=axis)
    pools = [dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1], count_include_pad=0),
             dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], count_include_pad=1),
             dict(kernel_shape=[2, 2], strides=[2, 2]),
             dict(kernel_shape=[5, 3], pads=[2, 0, 1, 1], strides=[3, 2], ceil_mode=1),
             dict(kernel_shape=[64, 64])]
    for attrs in pools:
        b.node("QLinearAveragePool", ["X", b.scale(), b.zero(), b.scale(), b.zero()], **attrs)
    for k in range(4):
        b.node("QLinearGlobalAveragePool", ["X", b.scale(), b.zero(), b.scale(), b.zero()])
    for k, (axis, opset) in enumerate(((-1, 13), (1, 13), (-1, 12), (2, 12))):
        xs = np.exp(rng.uniform(np.log(1e-3), np.log(0.2)))
        b.node("QLinearSoftmax", ["X", b.scale(xs), b.zero(), b.scale(1 / 255 if k % 2 else 1 / 256), b.zero(b.lo)],
               axis=axis, opset=opset)
    # The QDQ form, which ONNX Runtime's optimizer turns into QLinearSoftmax.
    for k, axis in enumerate((-1, 1, -1, 3)):
        xs, ys = np.exp(rng.uniform(np.log(1e-3), np.log(0.2))), (1 / 255, 1 / 256, 1e-3, 1e-2)[k]
        d, s = f"dq{k}", f"softmax{k}"
        b.nodes += [helper.make_node("DequantizeLinear", ["X", b.scale(xs), b.zero()], [d], name=d),
                    helper.make_node("Softmax", [d], [s], axis=axis, name=s),
                    helper.make_node("QuantizeLinear", [s, b.scale(ys), b.zero(b.lo if k < 2 else None)],
                                     [f"y{len(b.outputs)}"], name=f"q{k}")]
        b.outputs.append(helper.make_tensor_value_info(f"y{len(b.outputs)}", b.tp, None))
    return b.model(), np.tile(every, 256).reshape(SHAPE).astype(b.np)


def main(out):
    rng = np.random.default_rng(6)
    for dtype in ("uint8", "int8"):
        model, x = build(dtype, rng)
        onnx.save(model, os.path.join(out, f"qlinear_{dtype}.onnx"))
        os.makedirs(os.path.join(out, f"qlinear_{dtype}_data"), exist_ok=True)
        np.save(os.path.join(out, f"qlinear_{dtype}_data", "x.npy"), x)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
