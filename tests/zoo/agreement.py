#!/usr/bin/python3
"""Top-1 agreement of a quantized model's outputs with the float model's, and
both accuracies against the labels, over directories of <stem>.out0.npy files
(ort_run.js / qrun -o layout; label i belongs to the i-th file in name order).

    agreement.py NAME QUANT_DIR FLOAT_DIR [--labels LABELS.npy] [--min-agreement F] [--max-drop POINTS]
                 [--min-snr DB] [--fields]

Prints one line: agreement, float and quantized accuracy, SNR (--fields: only
"SNR AGREE/N FLOAT_ACC QUANT_ACC" for scripts/accuracy_table.sh, "-" for the
accuracies without labels). Exit 1 when the agreement is below
--min-agreement (a fraction, default 0.99) or accuracy drops by more than
--max-drop percentage points (default 1), when the SNR of the quantized
outputs vs float is below --min-snr dB (default: no SNR gate), or when any
output holds NaN or Inf; 2 on bad input.
"""
import argparse
import math
import os
import sys

import numpy as np


def load_outputs(directory):
    if not os.path.isdir(directory):
        return [], []
    names = sorted(f for f in os.listdir(directory) if f.endswith(".out0.npy"))
    return names, [np.load(os.path.join(directory, f), allow_pickle=False) for f in names]


def comparison_args(doc, truth, truth_help):
    """The arguments agreement.py and iou.py share: NAME QUANT_DIR FLOAT_DIR,
    --TRUTH (ground truth per sample), --min-snr, --fields."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("quant_dir")
    ap.add_argument("float_dir")
    ap.add_argument(f"--{truth}", help=truth_help)
    ap.add_argument("--min-snr", type=float, default=-math.inf)
    ap.add_argument("--fields", action="store_true")
    return ap


def load_comparison(args, truth, what):
    """(names, quantized outputs, float outputs) of args.quant_dir and
    args.float_dir, or None (after an error line) when they are empty, their
    names differ or `truth` (an array, or None) has another count; `what`
    names the ground truth in the message."""
    q_names, quant = load_outputs(args.quant_dir)
    f_names, flt = load_outputs(args.float_dir)
    if not f_names or q_names != f_names or (truth is not None and len(truth) != len(f_names)):
        print(f"error: {args.name}: {len(q_names)} quantized and {len(f_names)} float outputs, "
              f"{'no' if truth is None else len(truth)} {what} (the counts and names must match)", file=sys.stderr)
        return None
    return f_names, quant, flt


def report(args, ok, fields, line):
    """Prints `fields` (--fields) or "ok/FAIL NAME: line"; the exit status."""
    print(fields.replace("nan", "-") if args.fields else f"{'ok  ' if ok else 'FAIL'} {args.name}: {line}")
    return 0 if ok else 1


def nonfinite_outputs(pairs):
    """The paths of the outputs that hold NaN or Inf, from (directory, names, outputs) triples."""
    return [os.path.join(d, f) for d, names, outs in pairs for f, o in zip(names, outs) if not np.all(np.isfinite(o))]


def pooled_snr_db(quant, flt):
    """10 log10(sum ref^2 / sum (quant - ref)^2) over every element of every
    output (qrun --reference's SNR); the outputs must be finite."""
    signal = sum(float(np.sum(b.astype(np.float64) ** 2)) for b in flt)
    noise = sum(float(np.sum((a.astype(np.float64) - b.astype(np.float64)) ** 2)) for a, b in zip(quant, flt))
    return math.inf if noise == 0 else 10 * math.log10(signal / noise)


def main():
    ap = comparison_args(__doc__, "labels", "int64 labels, one per sample")
    ap.add_argument("--min-agreement", type=float, default=0.99)
    ap.add_argument("--max-drop", type=float, default=1.0)
    args = ap.parse_args()
    labels = np.load(args.labels, allow_pickle=False).reshape(-1) if args.labels else None
    loaded = load_comparison(args, labels, "labels")
    if loaded is None:
        return 2
    f_names, quant, flt = loaded
    # numpy's argmax picks a NaN as the largest value, so two NaN outputs would
    # "agree": a NaN or Inf anywhere fails the check instead.
    nonfinite = nonfinite_outputs(((args.quant_dir, f_names, quant), (args.float_dir, f_names, flt)))
    q_top1 = np.array([int(np.argmax(o.reshape(-1))) for o in quant])
    f_top1 = np.array([int(np.argmax(o.reshape(-1))) for o in flt])
    n = len(f_names)
    agree = int((q_top1 == f_top1).sum())
    f_acc = q_acc = math.nan
    if labels is not None:
        f_acc = 100.0 * float((f_top1 == labels).sum()) / n
        q_acc = 100.0 * float((q_top1 == labels).sum()) / n
    snr = math.nan if nonfinite else pooled_snr_db(quant, flt)
    # Without labels the accuracy gate is not applied (nan compares false).
    ok = (not nonfinite and agree >= args.min_agreement * n and not f_acc - q_acc > args.max_drop
          and snr >= args.min_snr)
    if nonfinite:
        print(f"FAIL {args.name}: {len(nonfinite)} outputs hold NaN or Inf, first {nonfinite[0]}", file=sys.stderr)
    accuracy = ("no labels" if labels is None else
                f"accuracy float {f_acc:.2f}% quantized {q_acc:.2f}% (max drop {args.max_drop:g} points)")
    return report(args, ok, f"{snr:.1f} {agree}/{n} {f_acc:.1f} {q_acc:.1f}",
                  f"top-1 agreement {agree}/{n} (min {args.min_agreement:g}), {accuracy}, "
                  f"SNR {snr:.1f} dB (min {args.min_snr:g})")


if __name__ == "__main__":
    sys.exit(main())
