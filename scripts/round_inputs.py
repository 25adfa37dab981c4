#!/usr/bin/python3
"""The inputs of a model rounded to uint8 as an asymmetric QuantizeLinear with
the profile's range for that input would round them, then turned back to
float: a float model run on them shows how much of a quantized model's
disagreement with float the rounding of its input alone already causes
(scripts/accuracy_table.sh prints it as the "input-u8" row).

    round_inputs.py MODEL.onnx PROFILE.json DATA_DIR OUT_DIR

DATA_DIR holds one .npy per sample (single-input models); exit 2 otherwise.
"""
import json
import os
import sys

import numpy as np
import onnx


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    model_path, profile_path, data, out = sys.argv[1:]
    model = onnx.load(model_path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    files = sorted(f for f in os.listdir(data) if f.endswith(".npy"))
    if len(inputs) != 1 or not files:
        print(f"error: {data}: needs one .npy per sample for a single-input model", file=sys.stderr)
        return 2
    stats = json.load(open(profile_path))["tensors"].get(inputs[0])
    if stats is None:
        print(f"error: {profile_path}: no range for input '{inputs[0]}'", file=sys.stderr)
        return 2
    # The range always holds 0 (ONNX QuantizeLinear's zero point is an integer).
    lo, hi = min(float(stats["min"]), 0.0), max(float(stats["max"]), 0.0)
    scale = (hi - lo) / 255 if hi > lo else 1.0
    zero_point = float(np.clip(np.round(-lo / scale), 0, 255))
    os.makedirs(out, exist_ok=True)
    for f in files:
        x = np.load(os.path.join(data, f), allow_pickle=False)
        q = np.clip(np.round(x / np.float32(scale)) + zero_point, 0, 255)  # np.round: half to even
        np.save(os.path.join(out, f), ((q - zero_point) * np.float32(scale)).astype(x.dtype))
    return 0


if __name__ == "__main__":
    sys.exit(main())
