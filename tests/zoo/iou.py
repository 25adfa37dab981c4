#!/usr/bin/python3
"""IoU of a segmentation model's thresholded probability maps: the quantized
model's against the float model's, and both against ground-truth masks, over
directories of <stem>.out0.npy files (ort_run.js / qrun -o layout; mask i
belongs to the i-th file in name order, as labels do in agreement.py).

    iou.py NAME QUANT_DIR FLOAT_DIR [--masks MASKS.npy] [--threshold T] [--min-iou F] [--min-snr DB]
           [--fields]

A pixel is foreground where the map is above T (default 0.5; the maps are
Sigmoid outputs). IoU = |A and B| / |A or B| with both counts summed over all
pixels of all samples before dividing (pooled, like the SNR): an image with
little foreground weighs by its pixels, not as much as a full one. Two
empty maps have IoU 1. MASKS.npy holds one mask per sample, nonzero = foreground,
with as many elements as that sample's output (make_zoo.py writes uint8
[N, 1, H, W] for fpn_text_digits).

Prints one line: IoU vs float, IoU of float and quantized vs the masks, SNR of
the maps vs float (pooled, as qrun --reference and agreement.py compute it).
--fields prints only "SNR IOU_VS_FLOAT FLOAT_IOU QUANT_IOU" for
scripts/accuracy_table.sh ("-" for the last two without masks). Exit 1 when
the IoU vs float is below --min-iou (default 0: no gate), the SNR below
--min-snr dB (default: no gate), or an output holds NaN or Inf; 2 on bad input.
"""
import math
import sys

import numpy as np

from agreement import comparison_args, load_comparison, nonfinite_outputs, pooled_snr_db, report


def pooled_iou(a_maps, b_maps):
    """IoU of two lists of boolean arrays, intersections and unions summed first."""
    inter = sum(int(np.count_nonzero(a & b)) for a, b in zip(a_maps, b_maps))
    union = sum(int(np.count_nonzero(a | b)) for a, b in zip(a_maps, b_maps))
    return 1.0 if union == 0 else inter / union


def main():
    ap = comparison_args(__doc__, "masks", "ground-truth masks, one per sample")
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--min-iou", type=float, default=0.0)
    args = ap.parse_args()
    masks = np.load(args.masks, allow_pickle=False) if args.masks else None
    loaded = load_comparison(args, masks, "masks")
    if loaded is None:
        return 2
    f_names, quant, flt = loaded
    bad_shape = [f for f, q, o in zip(f_names, quant, flt) if q.shape != o.shape]
    if masks is not None:
        bad_shape += [f for f, m, o in zip(f_names, masks, flt) if m.size != o.size]
    if bad_shape:
        print(f"error: {args.name}: {bad_shape[0]}: the quantized output, float output and mask differ in size",
              file=sys.stderr)
        return 2
    nonfinite = nonfinite_outputs(((args.quant_dir, f_names, quant), (args.float_dir, f_names, flt)))
    # A NaN compares false, so it would read as background: a NaN or Inf fails instead.
    if nonfinite:
        print(f"FAIL {args.name}: {len(nonfinite)} outputs hold NaN or Inf, first {nonfinite[0]}", file=sys.stderr)
    q_fg = [q > args.threshold for q in quant]
    f_fg = [o > args.threshold for o in flt]
    iou = pooled_iou(q_fg, f_fg)
    f_iou = q_iou = math.nan
    if masks is not None:
        truth = [m.reshape(o.shape) != 0 for m, o in zip(masks, flt)]
        f_iou, q_iou = pooled_iou(f_fg, truth), pooled_iou(q_fg, truth)
    snr = math.nan if nonfinite else pooled_snr_db(quant, flt)
    ok = not nonfinite and iou >= args.min_iou and snr >= args.min_snr
    truth_part = "no masks" if masks is None else f"IoU vs ground truth float {f_iou:.3f} quantized {q_iou:.3f}"
    return report(args, ok, f"{snr:.1f} {iou:.3f} {f_iou:.3f} {q_iou:.3f}",
                  f"IoU vs float {iou:.4f} (min {args.min_iou:g}), {truth_part}, SNR {snr:.1f} dB "
                  f"(min {args.min_snr:g}), threshold {args.threshold:g}, {len(f_names)} maps")


if __name__ == "__main__":
    sys.exit(main())
