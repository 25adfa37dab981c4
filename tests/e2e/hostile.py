#!/usr/bin/python3
"""Writes one hostile or broken input file for the robustness tests (test_robust_*.sh).

    hostile.py KIND OUT [ARG]

Each KIND is a small, valid-looking file with one thing wrong, so that each test
asserts the one error message that names it. Built with python3-onnx / numpy."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

kind, out = sys.argv[1], sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else None


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), opsets=(("", 13),), value_info=()):
    g = helper.make_graph(nodes, "hostile", inputs, outputs, list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = 8
    return m


def relu_model(**kw):
    return model([helper.make_node("Relu", ["x"], ["y"], "relu")], [vi("x", [1, 4])], [vi("y", [1, 4])], **kw)


def save(m):
    with open(out, "wb") as f:
        f.write(m.SerializeToString())


def external(location, offset=None, length=None):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    return model([helper.make_node("Add", ["x", "w"], ["y"], "add_w")], [vi("x", [1, 4])], [vi("y", [1, 4])], [t])


def npy_bytes(header, data=b"", major=1):
    h = header.encode()
    pad = 64 - (10 + len(h) + 1) % 64
    h = h + b" " * pad + b"\n"
    return b"\x93NUMPY" + bytes([major, 0]) + len(h).to_bytes(2, "little") + h + data


if kind == "missing_initializer":
    save(model([helper.make_node("Add", ["x", "w"], ["y"], "add_w")], [vi("x", [1, 4])], [vi("y", [1, 4])]))
elif kind == "unknown_op":
    save(model([helper.make_node("FancyOp", ["x"], ["y"], "fancy")], [vi("x", [1, 4])], [vi("y", [1, 4])]))
elif kind == "unknown_domain":
    save(model([helper.make_node("Relu", ["x"], ["y"], "evil_relu", domain="com.evil")], [vi("x", [1, 4])], [vi("y", [1, 4])]))
elif kind == "cycle":
    save(model([helper.make_node("Relu", ["x2"], ["x1"], "a"), helper.make_node("Relu", ["x1"], ["x2"], "b"),
                helper.make_node("Add", ["x", "x2"], ["y"], "c")], [vi("x", [1, 4])], [vi("y", [1, 4])]))
elif kind == "duplicate_output":
    save(model([helper.make_node("Relu", ["x"], ["y"], "a"), helper.make_node("Relu", ["x"], ["y"], "b")],
               [vi("x", [1, 4])], [vi("y", [1, 4])]))
elif kind == "no_outputs":
    save(model([helper.make_node("Relu", ["x"], ["y"], "a")], [vi("x", [1, 4])], []))
elif kind == "overflow_initializer":
    # 2^40 * 2^40 elements: the product overflows int64.
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 40, 1 << 40], raw_data=b"")
    save(model([helper.make_node("Add", ["x", "w"], ["y"], "add_w")], [vi("x", [1, 4])], [vi("y", [1, 4])], [t]))
elif kind == "absurd_initializer":
    # 2^45 floats (128 TiB) declared, 16 bytes present: refused before allocating.
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 20, 1 << 25], raw_data=b"\0" * 16)
    save(model([helper.make_node("Add", ["x", "w"], ["y"], "add_w")], [vi("x", [1, 4])], [vi("y", [1, 4])], [t]))
elif kind == "short_initializer":
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], raw_data=b"\0" * 7)
    save(model([helper.make_node("Add", ["x", "w"], ["y"], "add_w")], [vi("x", [1, 4])], [vi("y", [1, 4])], [t]))
elif kind == "negative_dim":
    save(model([helper.make_node("Relu", ["x"], ["y"], "relu")], [vi("x", [1, -4])], [vi("y", [1, 4])]))
elif kind == "reshape_absurd":
    # 2^62 * 4 wraps to 0 in int64; an unchecked product would "match" an empty input.
    s = numpy_helper.from_array(np.array([1 << 62, 4], np.int64), "s")
    save(model([helper.make_node("Reshape", ["x", "s"], ["y"], "reshape_big")], [vi("x", [1, 4])], [vi("y", [2])], [s]))
elif kind == "broadcast_absurd":
    # [2^20, 1] + [1, 2^20] = 2^40 floats: refused before allocating.
    a = numpy_helper.from_array(np.zeros((1, 1), np.float32), "a")
    s1 = numpy_helper.from_array(np.array([1 << 20, 1], np.int64), "s1")
    s2 = numpy_helper.from_array(np.array([1, 1 << 20], np.int64), "s2")
    nodes = [helper.make_node("Reshape", ["x", "s1"], ["c"], "col"), helper.make_node("Reshape", ["x", "s2"], ["r"], "row"),
             helper.make_node("Add", ["c", "r"], ["y"], "outer_sum")]
    save(model(nodes, [vi("x", [1 << 20])], [vi("y", [1 << 20, 1 << 20])], [a, s1, s2]))
elif kind == "conv_absurd_pads":
    w = numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "w")
    save(model([helper.make_node("Conv", ["x", "w"], ["y"], "conv_pads", pads=[1 << 40] * 4)],
               [vi("x", [1, 1, 2, 2])], [vi("y", [1, 1, 2, 2])], [w]))
elif kind == "conv_huge_output":
    # Legal-looking pads whose output would need 2^33 floats.
    w = numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "w")
    save(model([helper.make_node("Conv", ["x", "w"], ["y"], "conv_big", pads=[1 << 16] * 4)],
               [vi("x", [1, 1, 2, 2])], [vi("y", [1, 1, 2, 2])], [w]))
elif kind == "truncated":
    data = open(arg, "rb").read()
    open(out, "wb").write(data[: len(data) // 2])
elif kind == "ext_escape":
    save(external("../outside.bin"))
elif kind == "ext_absolute":
    save(external("/etc/passwd"))
elif kind == "ext_missing":
    save(external("weights.bin"))
elif kind == "ext_short":
    save(external("weights.bin"))  # the test writes an 8-byte weights.bin next to it
elif kind == "ext_offset":
    save(external("weights.bin", offset=1 << 62))
elif kind == "ext_ok":
    save(external("weights.bin"))
elif kind == "npy_magic":
    open(out, "wb").write(b"\x93NUMPZ\x01\x00" + b"\0" * 120)
elif kind == "npy_header":
    open(out, "wb").write(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4), 'oops'}", b"\0" * 16))
elif kind == "npy_dtype":
    np.save(out, np.zeros((1, 4), np.complex64))
elif kind == "npy_fortran":
    np.save(out, np.asfortranarray(np.zeros((2, 4), np.float32)))
elif kind == "npy_short":
    open(out, "wb").write(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4), }", b"\0" * 15))
elif kind == "npy_absurd":
    open(out, "wb").write(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1073741824, 1073741824), }", b"\0" * 16))
elif kind == "npy_overflow":
    open(out, "wb").write(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296, 16), }"))
elif kind == "npy_bigendian":
    np.save(out, np.zeros((1, 4), ">f4"))
elif kind == "pb_garbage":
    open(out, "wb").write(b"\xff\xff\xff\xff\x0f garbage")
elif kind == "pb_short":
    open(out, "wb").write(TensorProto(name="x", data_type=TensorProto.FLOAT, dims=[1, 4], raw_data=b"\0" * 12).SerializeToString())
elif kind == "pb_dtype":
    open(out, "wb").write(TensorProto(name="x", data_type=TensorProto.COMPLEX64, dims=[1], raw_data=bytes(8)).SerializeToString())
elif kind == "pb_strings_short":
    open(out, "wb").write(TensorProto(name="x", data_type=TensorProto.STRING, dims=[2], string_data=[b"abc"]).SerializeToString())
elif kind == "pb_absurd":
    open(out, "wb").write(TensorProto(name="x", data_type=TensorProto.FLOAT, dims=[1 << 31, 1 << 31], raw_data=b"").SerializeToString())
elif kind == "npy_ok":
    np.save(out, np.zeros([int(d) for d in arg.split(",")], np.float32))
elif kind == "npy_int64":
    np.save(out, np.zeros([int(d) for d in arg.split(",")], np.int64))
elif kind == "relu_model":
    save(relu_model())
elif kind == "relu_shaped":  # ARG: the input shape, e.g. 1,3,8,8 or N,4 (names are dynamic dims)
    shape = [int(d) if d.isdigit() else d for d in arg.split(",")]
    save(model([helper.make_node("Relu", ["x"], ["y"], "relu")], [vi("x", shape)], [vi("y", shape)]))
elif kind == "matmul_outer":  # x[N,1] x w[1,N], N = 2^17: 512 KiB inputs, a 64 GiB output
    save(model([helper.make_node("MatMul", ["x", "w"], ["y"], "outer")], [vi("x", ["n", 1])], [vi("y", ["n", "m"])],
               [numpy_helper.from_array(np.ones((1, 1 << 17), np.float32), "w")]))
elif kind.startswith("image_"):
    # Images: ARG is the image size HxW (default 8x8); every kind but
    # image_ok has one thing wrong.
    import io
    from PIL import Image
    h, w = (int(v) for v in (arg or "8x8").split("x"))
    pixels = np.arange(h * w * 3, dtype=np.uint32).reshape(h, w, 3).astype(np.uint8)
    def encoded(fmt):
        buf = io.BytesIO()
        Image.fromarray(pixels, "RGB").save(buf, format=fmt)
        return buf.getvalue()
    data = {
        "image_ok": lambda: encoded("PNG"),
        "image_corrupt": lambda: encoded("PNG")[:16] + b"\xde\xad" * 40,
        "image_truncated_png": lambda: encoded("PNG")[:-30],
        "image_truncated_jpg": lambda: encoded("JPEG")[:-40],
        "image_truncated_bmp": lambda: encoded("BMP")[:-10],
        "image_truncated_ppm": lambda: encoded("PPM")[:-1],
        "image_absurd_ppm": lambda: b"P6\n100000 100000\n255\n" + b"\0" * 64,
        "image_overflow_ppm": lambda: b"P6\n99999999999 1\n255\n" + b"\0" * 64,
        "image_empty_ppm": lambda: b"P6\n0 8\n255\n",
    }[kind]
    open(out, "wb").write(data())
else:
    sys.exit("hostile.py: unknown kind " + kind)
