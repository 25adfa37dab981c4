#!/usr/bin/env python3
"""TFLite's 16x8 integer arithmetic written out in numpy, to check that
qrun --target tflite-int16x8 computes the same bits (issue 21).

  tflite16x8_reference.py make DIR     writes DIR/wide.onnx and DIR/data/<sample>/<input>.npy
  tflite16x8_reference.py check DIR OUT  compares qrun's outputs in OUT with the reference

The model is written in QDQ form by hand (int16 activations with zero point 0,
int8 weights, int32 biases), so that every integer the backend sees is known:
  x -> Q -> DQ -> Conv 3x3 (per-channel weights, bias) -> Q -> DQ
    -> depthwise Conv 3x3 stride 2 -> Q -> DQ -> y
  v -> Q -> DQ -> MatMul (per-tensor weights) -> Q -> DQ -> m
  v -> Q -> DQ -> Gemm transB (bias) -> Q -> DQ -> g
The reference follows TFLite's sources, not qtool's code:
 - QuantizeMultiplier (tensorflow/lite/kernels/internal/quantization_util.cc):
   frexp, q_fixed = round(q * 2^31) with ties away from zero, 2^31 halved;
 - the multiplier input_scale * filter_scale / output_scale in double
   (tensorflow/lite/kernels/kernel_util.cc PopulateConvolutionQuantizationParams);
 - ConvPerChannel / FullyConnected for int16 x int8 (tensorflow/lite/kernels/
   internal/reference/integer_ops/conv.h, fully_connected.h): int64 sum plus
   bias, MultiplyByQuantizedMultiplier(int64) (tensorflow/lite/kernels/internal/
   common.cc: the multiplier rounded to 16 bits, (x * m16 + 2^(t-1)) >> t with
   t = 15 - shift), clamped to int16.
QuantizeLinear / DequantizeLinear follow the ONNX spec (round half to even,
saturate; (q - zp) * scale in float32)."""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

S_X, S_C1, S_C2, S_V, S_M, S_G = 0.0004, 0.0011, 0.0007, 0.0003, 0.0009, 0.0008


def weights():
    rng = np.random.default_rng(1608)
    w1 = rng.integers(-127, 128, (6, 4, 3, 3)).astype(np.int8)
    s1 = rng.uniform(0.002, 0.02, 6).astype(np.float32)
    b1 = rng.integers(-40000, 40000, 6).astype(np.int32)
    w2 = rng.integers(-127, 128, (6, 1, 3, 3)).astype(np.int8)
    s2 = rng.uniform(0.01, 0.05, 6).astype(np.float32)
    w3 = rng.integers(-127, 128, (16, 5)).astype(np.int8)
    w4 = rng.integers(-127, 128, (5, 16)).astype(np.int8)
    b4 = rng.integers(-20000, 20000, 5).astype(np.int32)
    return w1, s1, b1, w2, s2, w3, w4, b4


def make(out):
    w1, s1, b1, w2, s2, w3, w4, b4 = weights()
    c = lambda name, a: numpy_helper.from_array(a, name)
    f32 = lambda v: np.array(v, np.float32)
    z16 = np.array(0, np.int16)
    inits = [c("w1", w1), c("s1", s1), c("z1", np.zeros(6, np.int8)), c("b1", b1), c("sb1", f32(S_X * s1.astype(np.float64))),
             c("zb1", np.zeros(6, np.int32)),
             c("w2", w2), c("s2", s2), c("z2", np.zeros(6, np.int8)),
             c("w3", w3), c("s3", f32(0.01)), c("z3", np.array(0, np.int8)),
             c("w4", w4), c("s4", f32(0.012)), c("z4", np.array(0, np.int8)), c("b4", b4), c("sb4", f32(np.float32(S_V) * np.float32(0.012))),
             c("zb4", np.array(0, np.int32)), c("z16", z16)]
    for name, s in [("sx", S_X), ("sc1", S_C1), ("sc2", S_C2), ("sv", S_V), ("sm", S_M), ("sg", S_G)]:
        inits.append(c(name, f32(s)))
    n = helper.make_node
    qdq = lambda t, s: [n("QuantizeLinear", [t, s, "z16"], [t + "_q"]), n("DequantizeLinear", [t + "_q", s, "z16"], [t + "_dq"])]
    nodes = qdq("x", "sx") + [
        n("DequantizeLinear", ["w1", "s1", "z1"], ["w1_dq"], axis=0),
        n("DequantizeLinear", ["b1", "sb1", "zb1"], ["b1_dq"], axis=0),
        n("Conv", ["x_dq", "w1_dq", "b1_dq"], ["c1"], "conv", pads=[1, 1, 1, 1]),
    ] + qdq("c1", "sc1") + [
        n("DequantizeLinear", ["w2", "s2", "z2"], ["w2_dq"], axis=0),
        n("Conv", ["c1_dq", "w2_dq"], ["c2"], "depthwise", group=6, strides=[2, 2], pads=[1, 1, 1, 1]),
    ] + qdq("c2", "sc2") + [n("Identity", ["c2_dq"], ["y"])] + qdq("v", "sv") + [
        n("DequantizeLinear", ["w3", "s3", "z3"], ["w3_dq"]),
        n("MatMul", ["v_dq", "w3_dq"], ["mm"], "matmul"),
    ] + qdq("mm", "sm") + [n("Identity", ["mm_dq"], ["m"]),
        n("DequantizeLinear", ["w4", "s4", "z4"], ["w4_dq"]),
        n("DequantizeLinear", ["b4", "sb4", "zb4"], ["b4_dq"]),
        n("Gemm", ["v_dq", "w4_dq", "b4_dq"], ["gm"], "gemm", transB=1),
    ] + qdq("gm", "sg") + [n("Identity", ["gm_dq"], ["g"])]
    graph = helper.make_graph(
        nodes, "wide", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 9]),
                        helper.make_tensor_value_info("v", TensorProto.FLOAT, [3, 16])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, shape) for o, shape in
         (("y", [1, 6, 5, 5]), ("m", [3, 5]), ("g", [3, 5]))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "wide.onnx"))
    rng = np.random.default_rng(16)
    for i in range(3):
        d = os.path.join(out, "data", f"{i:02d}")
        os.makedirs(d, exist_ok=True)
        # Ranges that saturate the int16 input here and there.
        np.save(os.path.join(d, "x.npy"), rng.normal(0, 4, (1, 4, 9, 9)).astype(np.float32))
        np.save(os.path.join(d, "v.npy"), rng.normal(0, 3, (3, 16)).astype(np.float32))


def quantize(x, s):
    return np.clip(np.rint(x / np.float32(s)), -32768, 32767).astype(np.int64)


def quantize_multiplier(m):
    q, shift = math.frexp(m)
    fixed = math.floor(q * 2**31 + 0.5)  # TfLiteRound: ties away from zero (q > 0)
    if fixed == 2**31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def multiply_wide(acc, multiplier, shift):
    reduced = (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF
    total = 15 - shift
    return (acc * reduced + (1 << (total - 1))) >> total  # Python ints: exact, >> floors


def requant(acc, in_scale, w_scales, out_scale):
    """acc: int64 [..., channels] (object ints); one multiplier per channel."""
    out = np.empty(acc.shape, np.int64)
    for ch in range(acc.shape[-1]):
        m = float(np.float32(in_scale)) * float(w_scales[ch % len(w_scales)]) / float(np.float32(out_scale))
        mult, shift = quantize_multiplier(m)
        col = acc[..., ch]
        out[..., ch] = np.array([multiply_wide(int(a), mult, shift) for a in col.ravel()], np.int64).reshape(col.shape)
    return np.clip(out, -32768, 32767)


def conv(x, w, bias, stride, group):
    """x [C, H, W], w [M, C/group, 3, 3], pads 1: int64 sums as [OH, OW, M]."""
    c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    oh, ow = (h + 2 - 3) // stride + 1, (wd + 2 - 3) // stride + 1
    m = w.shape[0]
    per = m // group
    acc = np.zeros((oh, ow, m), np.int64)
    for o in range(m):
        g = o // per
        xs = xp[g * w.shape[1]:(g + 1) * w.shape[1]]
        for i in range(oh):
            for j in range(ow):
                acc[i, j, o] = int(np.sum(xs[:, i * stride:i * stride + 3, j * stride:j * stride + 3] * w[o].astype(np.int64)))
        if bias is not None:
            acc[:, :, o] += int(bias[o])
    return acc


def reference(x, v):
    w1, s1, b1, w2, s2, w3, w4, b4 = weights()
    xq = quantize(x, S_X)[0]
    c1 = requant(conv(xq, w1, b1, 1, 1), S_X, s1, S_C1)            # [H, W, 6]
    c2 = requant(conv(c1.transpose(2, 0, 1), w2, None, 2, 6), S_C1, s2, S_C2)
    vq = quantize(v, S_V)
    mm = requant(vq @ w3.astype(np.int64), S_V, [np.float32(0.01)], S_M)
    gm = requant(vq @ w4.astype(np.int64).T + b4.astype(np.int64), S_V, [np.float32(0.012)], S_G)
    dq = lambda q, s: q.astype(np.float32) * np.float32(s)
    return {"y": dq(c2.transpose(2, 0, 1)[None], S_C2), "m": dq(mm, S_M), "g": dq(gm, S_G)}


def check(d, out):
    bad = []
    for sample in sorted(os.listdir(os.path.join(d, "data"))):
        x = np.load(os.path.join(d, "data", sample, "x.npy"))
        v = np.load(os.path.join(d, "data", sample, "v.npy"))
        for k, (name, want) in enumerate(reference(x, v).items()):
            got = np.load(os.path.join(out, f"{sample}.out{k}.npy"))  # qrun -o: output k of the graph
            if got.shape != want.shape or not np.array_equal(got, want):
                diff = np.count_nonzero(got != want) if got.shape == want.shape else "shape"
                bad.append(f"sample {sample} output {name}: {diff} of {want.size} values differ")
    if bad:
        print("\n".join(bad))
        return 1
    print("qrun computes TFLite's 16x8 bits")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))
