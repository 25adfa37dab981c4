#!/usr/bin/python3
"""SNR in dB between output directories written as <stem>.out<k>.npy, pooled
over all files: 10 log10(sum ref^2 / sum (ref - got)^2).

    snr_table.py NAME REF_DIR GOT_DIR MIN_DB
Prints "NAME: SNR dB (min MIN_DB)"; exits 1 when below MIN_DB or files differ.
"""
import math
import os
import sys

import numpy as np


def main(name, ref_dir, got_dir, min_db):
    files = sorted(f for f in os.listdir(ref_dir) if f.endswith(".npy"))
    if not files or files != sorted(f for f in os.listdir(got_dir) if f.endswith(".npy")):
        print("FAIL %s: output files differ between %s and %s" % (name, ref_dir, got_dir))
        return 1
    signal = noise = 0.0
    for f in files:
        ref = np.load(os.path.join(ref_dir, f)).astype(np.float64)
        got = np.load(os.path.join(got_dir, f)).astype(np.float64)
        if ref.shape != got.shape:
            print("FAIL %s: %s has shape %s vs %s" % (name, f, got.shape, ref.shape))
            return 1
        signal += float(np.sum(ref ** 2))
        noise += float(np.sum((ref - got) ** 2))
    # NaN or Inf in an output leaves the SNR undefined (NaN), which fails the
    # check below, written so that NaN does not pass it.
    if not (math.isfinite(signal) and math.isfinite(noise)):
        snr = math.nan
    else:
        snr = math.inf if noise == 0 else 10 * math.log10(signal / noise)
    ok = snr >= min_db
    print("%s %s: %.1f dB (min %g)" % ("ok  " if ok else "FAIL", name, snr, min_db))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
