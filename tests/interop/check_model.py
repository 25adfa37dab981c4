#!/usr/bin/env python3
"""Validate ONNX models with the official checker (full_check also runs shape inference).

  /usr/bin/python3 tests/interop/check_model.py MODEL.onnx [MODEL.onnx ...]

Exits 0 when every model is valid; prints `error: ...` for each one that is not
and exits 1 otherwise. Several models in one call import onnx once.
"""

import sys

import onnx


def check(path):
    try:
        # Check the loaded proto (not the path) so full_check covers models of any size
        # that fit in memory; external data is resolved relative to the model by onnx.load.
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # checker, decode and I/O errors alike mean "not valid"
        msg = str(e).strip().replace("\n", " ")
        print(f"error: {path}: {msg}", file=sys.stderr)
        return False
    print(f"{path}: valid")
    return True


def main(argv):
    if not argv:
        print("usage: check_model.py MODEL.onnx [MODEL.onnx ...]", file=sys.stderr)
        return 2
    valid = [check(path) for path in argv]
    return 0 if all(valid) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
