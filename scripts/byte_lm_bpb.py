#!/usr/bin/python3
"""Bits per byte of the byte-level LM (scripts/make_byte_lm.py) from qrun's
outputs: the mean over every position of -log2 softmax(logits)[next byte].

    byte_lm_bpb.py OUT_DIR TARGETS.npy
OUT_DIR holds <stem>.out0.npy ([1, 64, 256]) for the inputs in name order
(qrun -o); prints the bits per byte.
"""
import os
import sys

import numpy as np


def main(out_dir, targets_path):
    targets = np.load(targets_path)
    files = sorted(f for f in os.listdir(out_dir) if f.endswith(".out0.npy"))
    assert len(files) == len(targets), (len(files), len(targets))
    bits = 0.0
    for f, t in zip(files, targets):
        z = np.load(os.path.join(out_dir, f)).astype(np.float64).reshape(-1, 256)
        z -= z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        bits -= logp[np.arange(len(t)), t].sum() / np.log(2)
    print("%.4f" % (bits / targets.size))


if __name__ == "__main__":
    main(*sys.argv[1:])
