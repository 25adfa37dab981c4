#!/usr/bin/env python3
"""Validate an ONNX model with the official checker (full_check also runs shape inference).

  /usr/bin/python3 tests/interop/check_model.py MODEL.onnx

Exits 0 when valid; prints `error: ...` and exits 1 otherwise.
"""

import sys

import onnx


def main(argv):
    if len(argv) != 1:
        print("usage: check_model.py MODEL.onnx", file=sys.stderr)
        return 2
    path = argv[0]
    try:
        # Check the loaded proto (not the path) so full_check covers models of any size
        # that fit in memory; external data is resolved relative to the model by onnx.load.
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # checker, decode and I/O errors alike mean "not valid"
        msg = str(e).strip().replace("\n", " ")
        print(f"error: {path}: {msg}", file=sys.stderr)
        return 1
    print(f"{path}: valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
