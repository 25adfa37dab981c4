#!/usr/bin/python3
"""Regenerates the small seed corpora of the fuzz targets (tests/fuzz/corpus/).

Run from anywhere with Debian's python3-onnx and python3-numpy:
    /usr/bin/python3 tests/fuzz/make_corpus.py
The profile seeds are hand-made minimal valid profiles (16 bins); the image seeds
need python3-pil."""
import io
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(os.path.dirname(here))
out = os.path.join(here, "corpus")


def fresh(name):
    """The seed folder `name`, emptied except for regress_* files: those are
    reproducers of past fuzz findings, committed by hand, and must stay."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if not f.startswith("regress_"):
            os.remove(os.path.join(d, f))
    return d


def save_model(d, name, nodes, inputs, outputs, inits, opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="qtool-fuzz-seed")
    m.ir_version = 8
    onnx.checker.check_model(m)
    with open(os.path.join(d, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


rng = np.random.default_rng(0)
f32 = lambda *s: rng.standard_normal(s).astype(np.float32)

# --- models: each a few hundred bytes, covering every op the interpreter runs.
d = fresh("model")
save_model(d, "conv_pool_gemm", [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], "conv", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c"], ["r"], "relu"),
    helper.make_node("MaxPool", ["r"], ["p"], "pool", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Flatten", ["p"], ["f"], "flat"),
    helper.make_node("Gemm", ["f", "gw", "gb"], ["g"], "gemm", transB=1),
    helper.make_node("Softmax", ["g"], ["y"], "softmax"),
], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
   [numpy_helper.from_array(f32(2, 1, 3, 3), "w"), numpy_helper.from_array(f32(2), "b"),
    numpy_helper.from_array(f32(3, 8), "gw"), numpy_helper.from_array(f32(3), "gb")])
save_model(d, "shape_ops", [
    helper.make_node("Transpose", ["x"], ["t"], "tr", perm=[1, 0]),
    helper.make_node("Reshape", ["t", "s"], ["r"], "reshape"),
    helper.make_node("Concat", ["r", "r"], ["c"], "concat", axis=0),
    helper.make_node("Add", ["c", "k"], ["a"], "add"),
    helper.make_node("Mul", ["a", "k"], ["m"], "mul"),
    helper.make_node("Clip", ["m", "lo", "hi"], ["cl"], "clip"),
    helper.make_node("Sigmoid", ["cl"], ["y"], "sig"),
], [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["d0", "d1"])],
   [numpy_helper.from_array(np.array([-1], np.int64), "s"), numpy_helper.from_array(f32(1), "k"),
    numpy_helper.from_array(np.array(-1, np.float32), "lo"), numpy_helper.from_array(np.array(1, np.float32), "hi")])
save_model(d, "qdq_matmul", [
    helper.make_node("QuantizeLinear", ["x", "sc", "zp"], ["q"], "q"),
    helper.make_node("DequantizeLinear", ["q", "sc", "zp"], ["dq"], "dq"),
    helper.make_node("MatMul", ["dq", "w"], ["mm"], "mm"),
    helper.make_node("Reshape", ["mm", "s4"], ["mm4"], "to4d"),
    helper.make_node("BatchNormalization", ["mm4", "bs", "bb", "bm", "bv"], ["bn"], "bn"),
    helper.make_node("AveragePool", ["bn"], ["ap"], "ap", kernel_shape=[1, 1]),
    helper.make_node("GlobalAveragePool", ["ap"], ["y"], "gap"),
], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["d0", "d1"])],
   [numpy_helper.from_array(np.array(0.05, np.float32), "sc"), numpy_helper.from_array(np.array(128, np.uint8), "zp"),
    numpy_helper.from_array(f32(4, 2), "w"), numpy_helper.from_array(np.array([1, 2, 2, 1], np.int64), "s4"),
    numpy_helper.from_array(f32(2), "bs"), numpy_helper.from_array(f32(2), "bb"),
    numpy_helper.from_array(f32(2), "bm"), numpy_helper.from_array(np.abs(f32(2)) + 1, "bv")])

# Quantized seeds, so that mutations start inside the integer paths (QDQ
# lowering, QLinear*/com.microsoft ops, lookup tables, dynamic and int4
# MatMul): made by qtool's own qprofile + qconvert from a small float model,
# when the tools are built (QTOOL_BIN, default build/). Own random stream,
# so the other seeds stay as they were.
qrng = np.random.default_rng(1)
qf32 = lambda *s: qrng.standard_normal(s).astype(np.float32)
save_model(d, "float_for_quant", [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], "relu1"),
    helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], "conv2", pads=[1, 1, 1, 1]),
    helper.make_node("Add", ["c2", "r1"], ["a"], "residual"),
    helper.make_node("Sigmoid", ["a"], ["s"], "sigmoid"),
    helper.make_node("MaxPool", ["s"], ["p"], "pool", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("GlobalAveragePool", ["p"], ["g"], "gap"),
    helper.make_node("Flatten", ["g"], ["f"], "flat"),
    helper.make_node("Gemm", ["f", "gw", "gb"], ["h"], "gemm", transB=1),
    helper.make_node("MatMul", ["h", "mw"], ["y"], "matmul"),
], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
   [numpy_helper.from_array(qf32(4, 2, 3, 3), "w1"), numpy_helper.from_array(qf32(4), "b1"),
    numpy_helper.from_array(qf32(4, 4, 3, 3), "w2"), numpy_helper.from_array(qf32(4), "b2"),
    numpy_helper.from_array(qf32(20, 4), "gw"), numpy_helper.from_array(qf32(20), "gb"),
    numpy_helper.from_array(qf32(20, 3), "mw")])
qtool_bin = os.environ.get("QTOOL_BIN", os.path.join(repo, "build"))
if os.path.exists(os.path.join(qtool_bin, "qconvert")):
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(4):
            np.save(os.path.join(tmp, f"{k}.npy"), qf32(1, 2, 6, 6))
        src = os.path.join(d, "float_for_quant.onnx")
        prof = os.path.join(tmp, "p.json")
        subprocess.run([os.path.join(qtool_bin, "qprofile"), src, "--data", tmp, "-o", prof, "--quiet"], check=True)
        variants = {
            "quant_qdq": ["--profile", prof],
            "quant_qoperator": ["--profile", prof, "--format", "qoperator"],
            "quant_int16": ["--profile", prof, "--activations", "int16", "--per-tensor"],
            "quant_dynamic": ["--dynamic"],
            "quant_dynamic_int4": ["--dynamic", "--weights", "int4", "--group-size", "16"],
        }
        for name, flags in variants.items():
            subprocess.run([os.path.join(qtool_bin, "qconvert"), src, "-o", os.path.join(d, name + ".onnx")] + flags,
                           check=True)
else:
    print("make_corpus: no qconvert in", qtool_bin, "- quantized model seeds not made")

# --- .npy: the digits model's first test sample and a few dtypes and ranks.
d = fresh("npy")
shutil.copy(os.path.join(repo, "samples/digits/test/0000.npy"), os.path.join(d, "digits_0000.npy"))
np.save(os.path.join(d, "int64_2d.npy"), np.arange(6, dtype=np.int64).reshape(2, 3))
np.save(os.path.join(d, "bool_scalar.npy"), np.array(True))
np.save(os.path.join(d, "f16_empty.npy"), np.zeros((0, 3), np.float16))

# --- .pb tensors: one from Debian's ONNX test data, raw, typed, int4, external.
d = fresh("pb")
shutil.copy("/usr/share/libonnx-testdata/data/node/test_tan_example/test_data_set_0/input_0.pb", os.path.join(d, "tan_input_0.pb"))
t = helper.make_tensor("typed", TensorProto.INT64, [2, 2], [1, 2, 3, 4])
open(os.path.join(d, "typed_int64.pb"), "wb").write(t.SerializeToString())
# INT4 = 22 (ONNX 1.16; Debian's python3-onnx may predate it): 1, -2, 7 packed low nibble first.
t = TensorProto(name="packed", data_type=22, dims=[3], raw_data=bytes([0xE1, 0x07]))
open(os.path.join(d, "int4.pb"), "wb").write(t.SerializeToString())
t = TensorProto(name="ext", data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
for k, v in (("location", "data.bin"), ("offset", "16"), ("length", "16")):
    e = t.external_data.add()
    e.key, e.value = k, v
open(os.path.join(d, "external.pb"), "wb").write(t.SerializeToString())

# --- profiles: a minimal valid one (16 bins) and an empty one.
d = fresh("profile")
counts = [0] * 16
counts[0], counts[7], counts[15] = 1, 2, 1
open(os.path.join(d, "small.json"), "w").write(
    '{\n  "format": "qtool-profile",\n  "version": 1,\n'
    '  "model": {"path":"m.onnx","digest":"00","signature":"11"},\n  "samples": 2,\n  "bins": 16,\n'
    '  "tensors": {\n    "x": {"dtype":"float32","shape":[1,4],"count":4,"min":-1.0,"max":3.0,"mean":0.75,'
    '"sum":3.0,"nan":0,"inf":1,"histogram":{"lo":-1.0,"hi":3.0,"counts":' + str(counts).replace(" ", "") + '}},\n'
    '    "y": {"dtype":"float32","shape":[],"count":0,"min":null,"max":null,"mean":null,"sum":0,"nan":2,"inf":0,'
    '"histogram":{"lo":0,"hi":0,"counts":' + str([0] * 16).replace(" ", "") + '}}\n  }\n}\n')
# --- images: one small file per format and pixel layout stb decodes for qtool.
# The first byte of each seed is the fuzz target's option byte (channels,
# layout, resize), the rest the file.
from PIL import Image

d = fresh("image")
pixels = (rng.integers(0, 256, (5, 7, 3))).astype(np.uint8)
rgb = Image.fromarray(pixels, "RGB")
def save_image(name, image, config, **kw):
    buf = io.BytesIO()
    image.save(buf, **kw)
    open(os.path.join(d, name), "wb").write(bytes([config]) + buf.getvalue())
save_image("rgb.png", rgb, 0x00, format="PNG")
save_image("gray_resized.png", rgb.convert("L"), 0x4e, format="PNG")
save_image("rgba_bgr.png", rgb.convert("RGBA"), 0x01, format="PNG")
save_image("palette.png", rgb.convert("P"), 0x0a, format="PNG")
save_image("gray16.png", Image.fromarray((pixels[:, :, 0].astype(np.uint16) * 257), "I;16"), 0x02, format="PNG")
save_image("baseline.jpg", rgb, 0x00, format="JPEG", quality=90)
save_image("progressive_resized.jpg", rgb, 0x95, format="JPEG", quality=50, progressive=True)
save_image("gray.jpg", rgb.convert("L"), 0x02, format="JPEG")
save_image("rgb24.bmp", rgb, 0x08, format="BMP")
save_image("palette8.bmp", rgb.convert("P"), 0x00, format="BMP")
save_image("rgb.ppm", rgb, 0x0c, format="PPM")
save_image("gray.pgm", rgb.convert("L"), 0x02, format="PPM")
open(os.path.join(d, "commented.ppm"), "wb").write(b"\x00P6 # made by hand\n2 1\n255\n" + bytes(range(6)))

print("seed corpora written to", out)
