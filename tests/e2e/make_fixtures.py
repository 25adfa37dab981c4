"""Test inputs for the qprofile CLI tests, written into DIR:
  dyn.onnx       x[N,3,8,8] -> Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm (dim 0 dynamic, for --batch)
  two.onnx       a[1,4], b[1,4] -> Add -> Relu (two named inputs, for --input and sample folders)
  dyn_npy/       24 samples x[1,3,8,8]
  images/        6 images of assorted sizes and formats (RGB and grey PNG, PPM)
  one_image/     one 8x8 PNG of a single colour, to check preprocessing values
  bad_images/    one file that claims to be a PNG but is not
  two_pb/        ONNX test-data layout: test_data_set_k/input_0.pb, input_1.pb
  two_named/     sample folders holding a.npy and b.npy
  nan_npy/       samples for dyn.onnx with NaN and Inf values mixed in
"""
import os
import struct
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(4)


def save_model(graph, name):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name))


w = numpy_helper.from_array(rng.normal(0, 0.5, (4, 3, 3, 3)).astype(np.float32), "w")
bconv = numpy_helper.from_array(rng.normal(0, 0.1, (4,)).astype(np.float32), "bconv")
g = numpy_helper.from_array(rng.normal(0, 0.5, (2, 4)).astype(np.float32), "g")
gb = numpy_helper.from_array(np.zeros(2, np.float32), "gb")
save_model(helper.make_graph(
    [helper.make_node("Conv", ["x", "w", "bconv"], ["conv"], pads=[1, 1, 1, 1], name="conv"),
     helper.make_node("Relu", ["conv"], ["relu"], name="relu"),
     helper.make_node("GlobalAveragePool", ["relu"], ["pool"], name="pool"),
     helper.make_node("Flatten", ["pool"], ["flat"], name="flat"),
     helper.make_node("Gemm", ["flat", "g", "gb"], ["y"], transB=1, name="fc")],
    "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])], [w, bconv, g, gb]), "dyn.onnx")
save_model(helper.make_graph(
    [helper.make_node("Add", ["a", "b"], ["sum"], name="add"), helper.make_node("Relu", ["sum"], ["y"], name="relu")],
    "two", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])]), "two.onnx")


def mkdir(name):
    path = os.path.join(out, name)
    os.makedirs(path, exist_ok=True)
    return path


d = mkdir("dyn_npy")
for i in range(24):
    np.save(os.path.join(d, f"{i:04d}.npy"), rng.normal(0, 1 + i / 8, (1, 3, 8, 8)).astype(np.float32))

d = mkdir("nan_npy")
for i in range(6):
    x = rng.normal(0, 1, (1, 3, 8, 8)).astype(np.float32)
    x.flat[i * 7] = np.nan
    x.flat[i * 7 + 1] = np.inf if i % 2 else -np.inf
    np.save(os.path.join(d, f"{i:04d}.npy"), x)


def png(path, pixels):
    """Minimal PNG writer: 8-bit grey (H, W) or RGB (H, W, 3), no filtering."""
    h, w = pixels.shape[:2]
    colour = 2 if pixels.ndim == 3 else 0
    raw = b"".join(b"\0" + pixels[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, colour, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


d = mkdir("images")
for i, (h, w) in enumerate([(8, 8), (16, 12), (5, 9), (8, 8)]):
    png(os.path.join(d, f"img{i}.png"), rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
png(os.path.join(d, "img4.png"), rng.integers(0, 256, (10, 10), dtype=np.uint8))
with open(os.path.join(d, "img5.ppm"), "wb") as f:
    f.write(b"P6\n6 7\n255\n" + rng.integers(0, 256, (7, 6, 3), dtype=np.uint8).tobytes())
# The known image: every pixel (255, 0, 51) -> RGB (1, 0, 0.2) before mean/std.
d = mkdir("one_image")
png(os.path.join(d, "red.png"), np.tile(np.array([255, 0, 51], np.uint8), (8, 8, 1)))

d = mkdir("bad_images")
with open(os.path.join(d, "broken.png"), "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\nnot really a png")

for k in range(3):
    d = mkdir(f"two_pb/test_data_set_{k}")
    for j in range(2):
        t = numpy_helper.from_array(rng.normal(0, 1, (1, 4)).astype(np.float32), f"in{j}")
        with open(os.path.join(d, f"input_{j}.pb"), "wb") as f:
            f.write(t.SerializeToString())
    d = mkdir(f"two_named/s{k}")
    np.save(os.path.join(d, "a.npy"), rng.normal(0, 1, (1, 4)).astype(np.float32))
    np.save(os.path.join(d, "b.npy"), rng.normal(0, 1, (1, 4)).astype(np.float32))
