"""Times PyTorch's FX post-training calibration with HistogramObserver on a zoo
model, for scripts/bench.sh's qprofile section (issue #22's comparison).

    torch_fx_calib.py MODEL INPUT_DIR [--runs N]

MODEL is a zoo name (resnet18, mobilenet_v2, ...): the network is built as
scripts/make_zoo.py builds it (same factory, seed and BatchNorm statistics), so
the activations observed are those qprofile sees in .cache/zoo/MODEL/model.onnx.
torch.ao.quantization.prepare_fx inserts a HistogramObserver after every
activation (weights: the default per-channel MinMax observer, as fbgemm's
default qconfig has it); each .npy in INPUT_DIR is then run through the
prepared model once per round, on one thread, under no_grad, as a calibration
loop does. Prints one line:

    torch-fx: M ms per sample (CPU time; wall W ms; median of R rounds over S samples, 1 thread, torch V, kernels K)

CPU time (time.process_time, the whole process) as qtool's figures in
scripts/bench.sh are: on a shared host wall time holds other processes' slices.

The first sample of the first round (observers' first range) is a warm-up and
left out. PyTorch picks its own kernels from the host's flags; ATEN_CPU_CAPABILITY
and ONEDNN_MAX_CPU_ISA cap them (bench.sh sets them to AVX2 beside QTOOL_ISA=avx2).
Exit 2 with one "error:" line on bad arguments or a missing input.
"""
import argparse
import glob
import os
import statistics
import sys
import time

import numpy as np


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("inputs")
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    files = sorted(glob.glob(os.path.join(a.inputs, "*.npy")))
    if not files:
        fail(f"{a.inputs}: no .npy samples")
    if a.runs < 1:
        fail(f"--runs must be at least 1, got {a.runs}")

    import torch
    from torch.ao.quantization import QConfig, QConfigMapping, HistogramObserver, default_per_channel_weight_observer
    from torch.ao.quantization.quantize_fx import prepare_fx

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import make_zoo  # noqa: E402 (builds the zoo's networks)

    if a.model not in make_zoo.MODELS:
        fail(f"unknown zoo model '{a.model}' (known: {', '.join(sorted(make_zoo.MODELS))})")
    torch.set_num_threads(1)
    torch.manual_seed(make_zoo.SEED)
    model, shapes, _, _ = make_zoo.MODELS[a.model]()
    model.eval()
    make_zoo.calibrate_batchnorm(model, shapes[0], make_zoo.SEED + 1)
    samples = [torch.from_numpy(np.load(f)) for f in files]

    qconfig = QConfig(activation=HistogramObserver, weight=default_per_channel_weight_observer)
    prepared = prepare_fx(model, QConfigMapping().set_global(qconfig), example_inputs=(samples[0],))
    cpu, wall = [], []
    with torch.no_grad():
        prepared(samples[0])  # warm-up: the observers' first ranges
        for _ in range(a.runs):
            c0, t0 = time.process_time(), time.perf_counter()
            for x in samples:
                prepared(x)
            cpu.append(1000 * (time.process_time() - c0) / len(samples))
            wall.append(1000 * (time.perf_counter() - t0) / len(samples))
    print(f"torch-fx: {statistics.median(cpu):.2f} ms per sample (CPU time; wall {statistics.median(wall):.2f} ms; "
          f"median of {a.runs} rounds over "
          f"{len(samples)} samples, 1 thread, torch {torch.__version__}, "
          f"kernels {os.environ.get('ATEN_CPU_CAPABILITY', 'host')})")


if __name__ == "__main__":
    main()
