#!/usr/bin/python3
"""Compares qrun's outputs with PyTorch's: per sample and output,
SNR = 10 log10(sum(ref^2) / sum((ref - got)^2)); fails when the lowest SNR is
below --min-snr, or when an output is missing or has another shape.

    compare_snr.py --expected DIR --got DIR --min-snr DB --name MODEL
"""
import argparse
import math
import os
import sys

import numpy as np


def snr_db(ref, got):
    ref = ref.astype(np.float64)
    noise = float(np.sum((ref - got.astype(np.float64)) ** 2))
    signal = float(np.sum(ref ** 2))
    if noise == 0.0:
        return math.inf
    if signal == 0.0 or not math.isfinite(noise):
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--expected", required=True)
    ap.add_argument("--got", required=True)
    ap.add_argument("--min-snr", type=float, required=True)
    ap.add_argument("--name", required=True)
    args = ap.parse_args()
    files = sorted(f for f in os.listdir(args.expected) if f.endswith(".npy"))
    if not files:
        print(f"FAIL {args.name}: no expected outputs in {args.expected}")
        return 1
    worst, worst_file = math.inf, ""
    for f in files:
        got_path = os.path.join(args.got, f)
        if not os.path.exists(got_path):
            print(f"FAIL {args.name}: qrun wrote no {f}")
            return 1
        ref, got = np.load(os.path.join(args.expected, f)), np.load(got_path)
        if ref.shape != got.shape:
            print(f"FAIL {args.name}: {f} has shape {got.shape}, PyTorch's has {ref.shape}")
            return 1
        s = snr_db(ref, got)
        if s < worst:
            worst, worst_file = s, f
    verdict = "pass" if worst >= args.min_snr else "FAIL"
    print(f"{verdict} {args.name}: lowest SNR {worst:.1f} dB ({worst_file}; need >= {args.min_snr:g} dB, {len(files)} outputs)")
    return 0 if verdict == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
