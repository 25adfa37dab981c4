"""Builds the two models of the signal/detection interop test (run with /usr/bin/python3):

  detector.onnx  image [1,3,16,16] -> Conv/Relu features, 16 anchor boxes and
                 2-class scores -> NonMaxSuppression (selected indices),
                 RoiAlign of the features over every box, and GridSample of
                 the image over a grid computed from it (a spatial transformer)
  logmel.onnx    audio [1,1024] -> STFT with a HannWindow, power spectrum,
                 MelWeightMatrix, log (a log-mel front end), plus the onesided
                 DFT of the whole signal and an inverse-DFT round trip

and 4 input samples for each (opset 17, which these ops need).

usage: make_signal_detection_models.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def save(graph, path):
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="qtool-tests")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def detector(rng):
    # Anchors: a 4x4 grid of 4-pixel cells as [y1, x1, y2, x2], widened to 6
    # pixels so that neighbours overlap and NMS has something to suppress.
    anchors = np.array([[y * 4 - 1, x * 4 - 1, y * 4 + 5, x * 4 + 5] for y in range(4) for x in range(4)],
                       dtype=np.float32)[None]
    inits = [
        const("w1", rng.normal(0, 0.5, (8, 3, 3, 3)).astype(np.float32)),
        const("w2", rng.normal(0, 0.3, (6, 8, 4, 4)).astype(np.float32)),
        const("w3", rng.normal(0, 0.2, (2, 3, 4, 4)).astype(np.float32)),
        const("split", np.array([4, 2], dtype=np.int64)),
        const("box_shape", np.array([1, 4, 16], dtype=np.int64)),
        const("score_shape", np.array([1, 2, 16], dtype=np.int64)),
        const("anchors", anchors),
        const("half", np.array(0.5, dtype=np.float32)),
        const("spread", np.array(4.0, dtype=np.float32)),
        const("max_out", np.array([5], dtype=np.int64)),
        const("iou", np.array([0.3], dtype=np.float32)),
        const("score_min", np.array([0.2], dtype=np.float32)),
        const("batch0", np.zeros(16, dtype=np.int64)),
        const("squeeze0", np.array([0], dtype=np.int64)),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["f1"]),
        helper.make_node("Conv", ["f1", "w2"], ["head"], strides=[4, 4]),
        helper.make_node("Split", ["head", "split"], ["box_raw", "cls_raw"], axis=1),
        helper.make_node("Reshape", ["box_raw", "box_shape"], ["box_r"]),
        helper.make_node("Transpose", ["box_r"], ["box_t"], perm=[0, 2, 1]),
        helper.make_node("Sigmoid", ["box_t"], ["box_s"]),
        helper.make_node("Sub", ["box_s", "half"], ["box_c"]),
        helper.make_node("Mul", ["box_c", "spread"], ["box_d"]),
        helper.make_node("Add", ["anchors", "box_d"], ["boxes"]),
        helper.make_node("Reshape", ["cls_raw", "score_shape"], ["cls_r"]),
        helper.make_node("Softmax", ["cls_r"], ["scores"], axis=1),
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score_min"], ["selected"]),
        # RoiAlign takes (x1, y1, x2, y2): boxes are (y1, x1, y2, x2), so swap through a Gather.
        helper.make_node("Squeeze", ["boxes", "squeeze0"], ["boxes2d"]),
        helper.make_node("Gather", ["boxes2d", "xy_order"], ["rois"], axis=1),
        helper.make_node("RoiAlign", ["f1", "rois", "batch0"], ["roi_feat"], output_height=2, output_width=2,
                         sampling_ratio=2, spatial_scale=1.0),
        helper.make_node("Conv", ["image", "w3"], ["g"], strides=[4, 4]),
        helper.make_node("Transpose", ["g"], ["g_t"], perm=[0, 2, 3, 1]),
        helper.make_node("Tanh", ["g_t"], ["grid"]),
        helper.make_node("GridSample", ["image", "grid"], ["warped"], mode="bilinear", padding_mode="zeros"),
    ]
    inits.append(const("xy_order", np.array([1, 0, 3, 2], dtype=np.int64)))
    graph = helper.make_graph(
        nodes, "detector",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("selected", TensorProto.INT64, ["n", 3]),
         helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 16, 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, 16]),
         helper.make_tensor_value_info("roi_feat", TensorProto.FLOAT, [16, 8, 2, 2]),
         helper.make_tensor_value_info("warped", TensorProto.FLOAT, [1, 3, 4, 4])],
        inits)
    return graph


def logmel():
    inits = [
        const("axis2", np.array([2], dtype=np.int64)),
        const("frame", np.array(256, dtype=np.int64)),
        const("step", np.array(128, dtype=np.int64)),
        const("mel_bins", np.array(16, dtype=np.int64)),
        const("rate", np.array(16000, dtype=np.int64)),
        const("lo_hz", np.array(20.0, dtype=np.float32)),
        const("hi_hz", np.array(8000.0, dtype=np.float32)),
        const("eps", np.array(1e-6, dtype=np.float32)),
    ]
    nodes = [
        helper.make_node("Unsqueeze", ["audio", "axis2"], ["signal"]),
        helper.make_node("HannWindow", ["frame"], ["window"]),
        helper.make_node("STFT", ["signal", "step", "window"], ["stft"], onesided=1),
        helper.make_node("ReduceSumSquare", ["stft"], ["power"], axes=[-1], keepdims=0),
        helper.make_node("MelWeightMatrix", ["mel_bins", "frame", "rate", "lo_hz", "hi_hz"], ["mel_w"]),
        helper.make_node("MatMul", ["power", "mel_w"], ["mel"]),
        helper.make_node("Add", ["mel", "eps"], ["mel_eps"]),
        helper.make_node("Log", ["mel_eps"], ["logmel"]),
        helper.make_node("DFT", ["signal"], ["spectrum"], onesided=1),
        helper.make_node("DFT", ["signal"], ["full"]),
        helper.make_node("DFT", ["full"], ["roundtrip"], inverse=1),
    ]
    graph = helper.make_graph(
        nodes, "logmel",
        [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, 1024])],
        [helper.make_tensor_value_info("logmel", TensorProto.FLOAT, [1, 7, 16]),
         helper.make_tensor_value_info("spectrum", TensorProto.FLOAT, [1, 513, 2]),
         helper.make_tensor_value_info("roundtrip", TensorProto.FLOAT, [1, 1024, 2])],
        inits)
    return graph


def main(out):
    rng = np.random.default_rng(27)
    os.makedirs(os.path.join(out, "detector_data"), exist_ok=True)
    os.makedirs(os.path.join(out, "logmel_data"), exist_ok=True)
    save(detector(rng), os.path.join(out, "detector.onnx"))
    save(logmel(), os.path.join(out, "logmel.onnx"))
    t = np.arange(1024) / 16000.0
    for i in range(4):
        image = rng.uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)
        np.save(os.path.join(out, "detector_data", f"{i:04d}.npy"), image)
        tones = sum(rng.uniform(0.2, 1) * np.sin(2 * np.pi * rng.uniform(100, 6000) * t) for _ in range(3))
        audio = (tones + rng.normal(0, 0.05, t.shape)).astype(np.float32)[None]
        np.save(os.path.join(out, "logmel_data", f"{i:04d}.npy"), audio)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
