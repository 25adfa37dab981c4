#!/usr/bin/python3
"""Exports the model zoo: torchvision CNNs and a small transformer encoder
classifier, randomly initialised with a fixed seed, with random inputs and
PyTorch's outputs as .npy, for tests/zoo/test_zoo.sh and
scripts/accuracy_table.sh.

Random weights alone make poor test models for quantization: BatchNorm with
its initial running statistics (mean 0, variance 1) does not normalise, so
activations grow or vanish through depth and the class scores are dominated
by a few channels or are nearly constant. Before export the BatchNorm
running statistics are therefore calibrated on a separate set of random
inputs (as a trained network's would be on its data), and the transformer
ends in a classification head (mean over tokens + Linear) so that its
output is class scores, for which top-1 agreement is meaningful.

    make_zoo.py --out DIR [--only NAME[,NAME...]] [--force]

Layout, per model:
    DIR/NAME/model.onnx
    DIR/NAME/inputs/sample_K.npy           (K = 0..7; one file = one sample)
    DIR/NAME/expected/sample_K.out0.npy    (PyTorch's output, qrun -o naming)
    DIR/NAME/DONE                          (written last: versions and time)
A model whose DONE exists is skipped unless --force.
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np
import torch
import torchvision

SAMPLES = 8
SEED = 20240501
# Bumped whenever a model's recipe changes: a model exported by another
# recipe is re-exported (DONE records the recipe).
RECIPE = 2
# Random inputs (another seed than the exported ones) that set BatchNorm's
# running statistics.
BN_CALIBRATION_BATCHES = 4
BN_CALIBRATION_BATCH = 4


def cnn(factory):
    def build():
        return factory(weights=None), [(1, 3, 224, 224)] * SAMPLES, 14, False
    return build


class TransformerClassifier(torch.nn.Module):
    """A transformer encoder with a classification head: mean over tokens, then Linear."""

    def __init__(self, encoder, d_model, classes):
        super().__init__()
        self.encoder = encoder
        self.head = torch.nn.Linear(d_model, classes)

    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=1))


def transformer():
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                             batch_first=True)
    # enable_nested_tensor=False: the nested-tensor fast path is for padded
    # batches and does not export.
    encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    model = TransformerClassifier(encoder, 64, 10)
    # Several batch sizes in one data set: qrun runs them in one session.
    shapes = [(b, 16, 64) for b in (1, 2, 4, 1, 3, 1, 2, 1)]
    return model, shapes, 17, True


MODELS = {
    "resnet18": cnn(torchvision.models.resnet18),
    "mobilenet_v2": cnn(torchvision.models.mobilenet_v2),
    "shufflenet_v2_x0_5": cnn(torchvision.models.shufflenet_v2_x0_5),
    "efficientnet_b0": cnn(torchvision.models.efficientnet_b0),
    "squeezenet1_1": cnn(torchvision.models.squeezenet1_1),
    "transformer_encoder": transformer,
}


def save_npy(path, array):
    """Writes atomically, so that an interrupted run leaves no truncated file."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        np.save(f, array)
    os.replace(tmp, path)


def calibrate_batchnorm(model, shape, seed):
    """Sets every BatchNorm's running mean/variance to the statistics of random
    inputs of `shape` (cumulative average over the batches: momentum None)."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    rng = np.random.default_rng(seed)
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
        bn.train()
    with torch.no_grad():
        for _ in range(BN_CALIBRATION_BATCHES):
            x = rng.standard_normal((BN_CALIBRATION_BATCH,) + tuple(shape[1:])).astype(np.float32)
            model(torch.from_numpy(x))
    model.eval()


def recipe_of(done):
    try:
        with open(done) as f:
            for line in f:
                if line.startswith("recipe "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def export(name, out_dir):
    start = time.time()
    torch.manual_seed(SEED)
    model, shapes, opset, dynamic_batch = MODELS[name]()
    model.eval()
    calibrate_batchnorm(model, shapes[0], SEED + 1)
    rng = np.random.default_rng(SEED)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]

    d = os.path.join(out_dir, name)
    os.makedirs(os.path.join(d, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(d, "expected"), exist_ok=True)
    done = os.path.join(d, "DONE")
    if os.path.exists(done):
        os.remove(done)

    example = torch.from_numpy(inputs[0])
    dynamic_axes = {"input": {0: "batch"}, "output": {0: "batch"}} if dynamic_batch else None
    tmp_model = os.path.join(d, "model.onnx.tmp")
    # Gradients stay enabled: under no_grad an eval-mode TransformerEncoderLayer
    # takes its fused fast path (aten::_transformer_encoder_layer_fwd), which
    # does not export. The reference outputs use the same (exported) path.
    torch.onnx.export(model, example, tmp_model, opset_version=opset, input_names=["input"],
                      output_names=["output"], dynamic_axes=dynamic_axes, do_constant_folding=True)
    os.replace(tmp_model, os.path.join(d, "model.onnx"))

    for k, x in enumerate(inputs):
        y = model(torch.from_numpy(x)).detach().numpy().astype(np.float32)
        save_npy(os.path.join(d, "inputs", f"sample_{k}.npy"), x)
        save_npy(os.path.join(d, "expected", f"sample_{k}.out0.npy"), y)
    seconds = time.time() - start
    with open(done, "w") as f:
        f.write(f"torch {torch.__version__}\ntorchvision {torchvision.__version__}\nopset {opset}\n"
                f"seed {SEED}\nrecipe {RECIPE}\nseconds {seconds:.1f}\n")
    print(f"make_zoo: {name}: exported in {seconds:.1f} s", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--force", action="store_true", help="re-export models that are already there")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    for n in names:
        if n not in MODELS:
            print(f"error: unknown model '{n}' (known: {', '.join(MODELS)})", file=sys.stderr)
            return 2
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for n in names:
        if not args.force and recipe_of(os.path.join(args.out, n, "DONE")) == RECIPE:
            continue
        export(n, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
