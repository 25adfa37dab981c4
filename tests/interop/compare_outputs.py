#!/usr/bin/env python3
"""Compare two directories of model outputs written as <stem>.out0.npy.

  /usr/bin/python3 tests/interop/compare_outputs.py DIR_A DIR_B [--top1] [--atol X] [--labels LABELS.npy]
      [--min-snr DB] [--within-step MODEL.onnx [--min-fraction F]] [--exact]
  /usr/bin/python3 tests/interop/compare_outputs.py --each CHECKS.tsv

Files are paired by name (the sets must match). --top1 requires the argmax over
the last axis to agree for every sample; --atol requires max |A - B| <= X
(output 0).
--labels also prints DIR_A's top-1 accuracy, where label i belongs to the i-th
file in name order (the layout of samples/*/test/NNNN.npy).
--within-step requires that at least --min-fraction (default 0.999) of the
elements of every output k (all <stem>.out<k>.npy files) differ by at most one
output quantization step of MODEL: the scale of the DequantizeLinear producing
output k (through data-movement ops). When a float op computes the output from
dequantized tensors (a model's last Gemm), the step is the largest scale of the
nearest activation DequantizeLinear nodes feeding it: one step of the last
quantized tensor on the way. (output_steps() is also what other tests import
for "one output step".)
--exact requires every element of every output k to be equal (bit-exactness
tests of integer kernels against ONNX Runtime).
A NaN or Inf in any output of either directory fails the comparison whatever
the checks asked for: the errors are undefined, and a NaN would otherwise slip
through Python's max() and through `snr < min`, which are false for NaN.

--each runs one comparison per line of CHECKS.tsv, `TAG<TAB>ARGUMENTS` (the
arguments above, split as a shell would), in one process (a test of dozens of
models imports numpy once); every line it prints starts with `TAG: `, and the
exit code is the worst of the comparisons'.

Exit codes (as in DESIGN.md): 0 all checks pass, 1 a check failed, 2 bad input.
"""

import argparse
import contextlib
import io
import os
import re
import shlex
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


MOVES_DATA = {"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Identity", "MaxPool", "Slice",
              "Gather", "Concat", "Expand", "Tile", "DepthToSpace", "SpaceToDepth"}


def output_steps(model_path):
    """One quantization step per graph output of the model (see --within-step)."""
    try:
        import onnx
        from onnx import numpy_helper
        model = onnx.load(model_path)
    except Exception as e:
        raise BadInput(f"{model_path}: cannot load the model: {e}") from e
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}

    def scale_of(dq):
        t = inits.get(dq.input[1])
        if t is None:
            raise BadInput(f"{model_path}: DequantizeLinear '{dq.name}' has a non-constant scale")
        return float(np.max(numpy_helper.to_array(t)))

    steps = []
    for out in g.output:
        n = producer.get(out.name)
        # Through data movement to the DequantizeLinear that writes the output.
        while n is not None and n.op_type in MOVES_DATA and n.op_type != "Concat":
            n = producer.get(n.input[0])
        if n is not None and n.op_type == "DequantizeLinear":
            steps.append(scale_of(n))
            continue
        # A float op: the nearest activation DequantizeLinear nodes feeding it.
        found, seen, todo = [], set(), [producer.get(out.name)]
        while todo:
            m = todo.pop()
            if m is None or id(m) in seen:
                continue
            seen.add(id(m))
            if m.op_type == "DequantizeLinear":
                if m.input[0] not in inits:
                    found.append(scale_of(m))
                continue
            todo.extend(producer.get(i) for i in m.input if i)
        if not found:
            raise BadInput(f"{model_path}: output '{out.name}' is not computed from quantized tensors")
        steps.append(max(found))
    return steps


def paired_outputs(dir_a, dir_b):
    """(k, name, A, B) for every <stem>.out<k>.npy file of both directories, as float64."""
    pattern = re.compile(r"\.out(\d+)\.npy$")
    names = sorted(f for f in os.listdir(dir_a) if pattern.search(f))
    if sorted(f for f in os.listdir(dir_b) if pattern.search(f)) != names or not names:
        raise BadInput(f"output sets of {dir_a} and {dir_b} differ (or are empty)")
    for name in names:
        a = load(os.path.join(dir_a, name)).astype(np.float64)
        b = load(os.path.join(dir_b, name)).astype(np.float64)
        if a.shape != b.shape:
            raise BadInput(f"{name}: shapes differ: {a.shape} vs {b.shape}")
        yield int(pattern.search(name).group(1)), name, a, b


def within_step(dir_a, dir_b, model, min_fraction):
    steps = output_steps(model)
    within, total = [0] * len(steps), [0] * len(steps)
    worst = [0.0] * len(steps)
    for k, name, a, b in paired_outputs(dir_a, dir_b):
        if k >= len(steps):
            raise BadInput(f"{name}: the model has {len(steps)} outputs")
        diff = np.abs(a - b)
        # A relative slack of 1e-5 absorbs float rounding of values exactly one step apart.
        within[k] += int(np.sum(diff <= steps[k] * (1 + 1e-5)))
        total[k] += diff.size
        worst[k] = max(worst[k], float(diff.max()) / steps[k] if diff.size else 0.0)
    ok = True
    for k, step in enumerate(steps):
        if total[k] == 0:
            continue
        frac = within[k] / total[k]
        print(f"output {k}: {within[k]}/{total[k]} elements ({100 * frac:.3f}%) within one step ({step:.6g}); "
              f"worst {worst[k]:.3g} steps")
        if frac < min_fraction:
            print(f"output {k}: fraction {frac:.6f} is below --min-fraction {min_fraction}")
            ok = False
    return ok


def exact(dir_a, dir_b):
    """Every element of every output equal; prints the outputs that differ."""
    outputs, elements, differing = set(), 0, {}
    for k, _, a, b in paired_outputs(dir_a, dir_b):
        outputs.add(k)
        elements += a.size
        bad = int(np.count_nonzero(a != b))
        if bad:
            n, worst = differing.get(k, (0, 0.0))
            differing[k] = (n + bad, max(worst, float(np.max(np.abs(a - b)))))
    for k, (n, worst) in sorted(differing.items()):
        print(f"output {k}: {n} elements differ, max abs diff {worst:.6g}")
    print(f"exact: {len(outputs) - len(differing)}/{len(outputs)} outputs equal ({elements} elements)")
    return not differing


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir_a")
    parser.add_argument("dir_b")
    parser.add_argument("--top1", action="store_true", help="argmax over the last axis must agree")
    parser.add_argument("--atol", type=float, help="max abs difference allowed")
    parser.add_argument("--labels", help="int labels .npy; prints DIR_A's accuracy")
    parser.add_argument("--min-snr", type=float,
                        help="SNR of DIR_A against DIR_B (the reference) in dB must be at least this")
    parser.add_argument("--within-step", metavar="MODEL",
                        help="elements must differ by at most one output quantization step of MODEL")
    parser.add_argument("--min-fraction", type=float, default=0.999,
                        help="fraction of elements --within-step requires (default 0.999)")
    parser.add_argument("--exact", action="store_true", help="every element of every output must be equal")
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
    nonfinite = []
    top1_a, mismatches, max_diff = [], [], 0.0
    signal = noise = 0.0
    for name in names_a:
        a = load(os.path.join(args.dir_a, name))
        b = load(os.path.join(args.dir_b, name))
        if a.shape != b.shape:
            raise BadInput(f"{name}: shapes differ: {a.shape} vs {b.shape}")
        if a.size == 0:
            raise BadInput(f"{name}: empty output")
        for directory, x in ((args.dir_a, a), (args.dir_b, b)):
            bad = int(np.size(x) - np.count_nonzero(np.isfinite(x))) if x.dtype.kind in "fc" else 0
            if bad:
                nonfinite.append(f"{os.path.join(directory, name)}: {bad} NaN or Inf values")
        # One file is one sample, so for logits of shape [1, C] or [C] this is one class index.
        pa, pb = np.argmax(a, axis=-1).reshape(-1), np.argmax(b, axis=-1).reshape(-1)
        top1_a.extend(int(p) for p in pa)
        if args.top1 and not np.array_equal(pa, pb):
            mismatches.append((name, pa.tolist(), pb.tolist()))
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        # np.maximum, not max(): Python's max(0.0, nan) is 0.0, a NaN must stay NaN.
        max_diff = float(np.maximum(max_diff, diff.max()))
        signal += float(np.sum(b.astype(np.float64) ** 2))
        noise += float(np.sum(diff ** 2))

    n = len(names_a)
    print(f"compared {n} outputs, max abs diff: {max_diff:.6g}")
    for line in nonfinite[:5]:
        print(f"non-finite output {line}")
    if nonfinite:
        print(f"{len(nonfinite)} output files hold NaN or Inf: the comparison fails")
        failed = True
    if args.within_step and not within_step(args.dir_a, args.dir_b, args.within_step, args.min_fraction):
        failed = True
    if args.exact and not exact(args.dir_a, args.dir_b):
        failed = True
    if args.top1:
        print(f"top1 agreement: {n - len(mismatches)}/{n}")
        for name, pa, pb in mismatches:
            print(f"  mismatch {name}: {pa} vs {pb}")
        failed |= bool(mismatches)
    if args.atol is not None and not max_diff <= args.atol:
        print(f"max abs diff {max_diff:.6g} exceeds --atol {args.atol:g}")
        failed = True
    if args.min_snr is not None:
        snr = float("inf") if noise == 0 else 10 * np.log10(signal / noise)
        print(f"SNR of {args.dir_a} vs {args.dir_b}: {snr:.2f} dB")
        if not snr >= args.min_snr:
            print(f"SNR {snr:.2f} dB is below --min-snr {args.min_snr:g}")
            failed = True
    if args.labels:
        labels = load(args.labels).reshape(-1)
        if labels.shape[0] != len(top1_a):
            raise BadInput(f"{args.labels}: {labels.shape[0]} labels for {len(top1_a)} predictions")
        correct = int((np.asarray(top1_a) == labels).sum())
        print(f"accuracy ({args.dir_a}): {correct / len(top1_a):.4f} ({correct}/{len(top1_a)})")
    return 1 if failed else 0


def main_each(checks):
    try:
        with open(checks) as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
    except OSError as e:
        raise BadInput(f"{checks}: {e.strerror}") from e
    worst = 0
    for number, line in enumerate(lines, 1):
        tag, tab, arguments = line.partition("\t")
        if not tab:
            raise BadInput(f"{checks}:{number}: expected TAG<TAB>ARGUMENTS")
        log = io.StringIO()
        try:
            with contextlib.redirect_stdout(log):
                code = main(shlex.split(arguments))
        except BadInput as e:
            print(f"error: {e}", file=log)
            code = 2
        for out in log.getvalue().splitlines():
            print(f"{tag}: {out}")
        worst = max(worst, code)
    return worst


if __name__ == "__main__":
    try:
        if sys.argv[1:2] == ["--each"]:
            if len(sys.argv) != 3:
                raise BadInput("--each takes one file and nothing else")
            sys.exit(main_each(sys.argv[2]))
        sys.exit(main(sys.argv[1:]))
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
