#!/usr/bin/env python3
"""Compare two directories of model outputs written as <stem>.out0.npy.

  /usr/bin/python3 tests/interop/compare_outputs.py DIR_A DIR_B [--top1] [--atol X] [--max-abs D] [--labels LABELS.npy]

Files are paired by name (the sets must match). --top1 requires the argmax over
the last axis to agree for every sample; --atol requires max |A - B| <= X;
--max-abs requires |A - B| <= D for at least 99.9% of all elements (issue 6:
D is one output quantization step, the scale of the output's DequantizeLinear).
--labels also prints DIR_A's top-1 accuracy, where label i belongs to the i-th
file in name order (the layout of samples/*/test/NNNN.npy).

Exit codes (as in DESIGN.md): 0 all checks pass, 1 a check failed, 2 bad input.
"""

import argparse
import os
import sys

import numpy as np

SUFFIX = ".out0.npy"


class BadInput(Exception):
    pass


def list_outputs(directory):
    if not os.path.isdir(directory):
        raise BadInput(f"{directory}: not a directory")
    return sorted(f for f in os.listdir(directory) if f.endswith(SUFFIX))


def load(path):
    try:
        return np.load(path, allow_pickle=False)
    except Exception as e:  # numpy raises several types for malformed files
        raise BadInput(f"{path}: cannot read .npy: {e}") from e


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir_a")
    parser.add_argument("dir_b")
    parser.add_argument("--top1", action="store_true", help="argmax over the last axis must agree")
    parser.add_argument("--atol", type=float, help="max abs difference allowed")
    parser.add_argument("--max-abs", type=float,
                        help="|A - B| <= D must hold for at least 99.9%% of the elements")
    parser.add_argument("--labels", help="int labels .npy; prints DIR_A's accuracy")
    parser.add_argument("--min-snr", type=float,
                        help="SNR of DIR_A against DIR_B (the reference) in dB must be at least this")
    args = parser.parse_args(argv)

    names_a, names_b = list_outputs(args.dir_a), list_outputs(args.dir_b)
    if not names_a and not names_b:
        raise BadInput(f"no *{SUFFIX} files in {args.dir_a} or {args.dir_b}")
    if names_a != names_b:
        only_a = sorted(set(names_a) - set(names_b))
        only_b = sorted(set(names_b) - set(names_a))
        raise BadInput(f"output sets differ: {len(only_a)} only in {args.dir_a} "
                       f"{only_a[:5]}, {len(only_b)} only in {args.dir_b} {only_b[:5]}")

    failed = False
    top1_a, mismatches, max_diff = [], [], 0.0
    elements = within = 0
    signal = noise = 0.0
    for name in names_a:
        a = load(os.path.join(args.dir_a, name))
        b = load(os.path.join(args.dir_b, name))
        if a.shape != b.shape:
            raise BadInput(f"{name}: shapes differ: {a.shape} vs {b.shape}")
        if a.size == 0:
            raise BadInput(f"{name}: empty output")
        # One file is one sample, so for logits of shape [1, C] or [C] this is one class index.
        pa, pb = np.argmax(a, axis=-1).reshape(-1), np.argmax(b, axis=-1).reshape(-1)
        top1_a.extend(int(p) for p in pa)
        if args.top1 and not np.array_equal(pa, pb):
            mismatches.append((name, pa.tolist(), pb.tolist()))
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        max_diff = max(max_diff, float(diff.max()))
        elements += diff.size
        if args.max_abs is not None:
            # A relative slack of 1e-5 absorbs float rounding of dequantized steps.
            within += int(np.count_nonzero(diff <= args.max_abs * (1 + 1e-5)))
        signal += float(np.sum(b.astype(np.float64) ** 2))
        noise += float(np.sum(diff ** 2))

    n = len(names_a)
    print(f"compared {n} outputs, max abs diff: {max_diff:.6g}")
    if args.top1:
        print(f"top1 agreement: {n - len(mismatches)}/{n}")
        for name, pa, pb in mismatches:
            print(f"  mismatch {name}: {pa} vs {pb}")
        failed |= bool(mismatches)
    if args.atol is not None and max_diff > args.atol:
        print(f"max abs diff {max_diff:.6g} exceeds --atol {args.atol:g}")
        failed = True
    if args.max_abs is not None:
        share = within / elements
        print(f"within {args.max_abs:g}: {within}/{elements} elements ({100 * share:.3f}%)")
        if share < 0.999:
            print(f"fewer than 99.9% of the elements are within --max-abs {args.max_abs:g}")
            failed = True
    if args.min_snr is not None:
        snr = float("inf") if noise == 0 else 10 * np.log10(signal / noise)
        print(f"SNR of {args.dir_a} vs {args.dir_b}: {snr:.2f} dB")
        if snr < args.min_snr:
            print(f"SNR {snr:.2f} dB is below --min-snr {args.min_snr:g}")
            failed = True
    if args.labels:
        labels = load(args.labels).reshape(-1)
        if labels.shape[0] != len(top1_a):
            raise BadInput(f"{args.labels}: {labels.shape[0]} labels for {len(top1_a)} predictions")
        correct = int((np.asarray(top1_a) == labels).sum())
        print(f"accuracy ({args.dir_a}): {correct / len(top1_a):.4f} ({correct}/{len(top1_a)})")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
