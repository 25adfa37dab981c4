#!/usr/bin/env python3
"""Train a small CNN on scikit-learn's digits and write the sample model and data.

Run with /usr/bin/python3 (torch, onnx, numpy and scikit-learn live there), from
any directory; outputs go to <repo>/samples/:

  samples/digits_cnn.onnx           float model, input `input` [1,1,8,8], output `logits` [1,10]
  samples/digits/calib/NNNN.npy     200 training samples, float32 [1,1,8,8] (calibration set)
  samples/digits/test/NNNN.npy      the 360 test samples, float32 [1,1,8,8]
  samples/digits/test_labels.npy    int64 [360], label i belongs to test/NNNN.npy with NNNN = i

Everything is deterministic (fixed seeds, one thread, deterministic kernels), so
rerunning the script reproduces the same accuracy; the files are committed so
that tests never need to run it.
"""

import os
import random
import shutil
import sys

import numpy as np
import onnx
import torch
from sklearn.datasets import load_digits
from torch import nn

SEED = 0
N_TRAIN = 1437
N_TEST = 360
N_CALIB = 200
EPOCHS = 40
BATCH = 32
LR = 1e-3
MIN_ACCURACY = 0.95

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(REPO, "samples")


def make_deterministic():
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


class DigitsCNN(nn.Module):
    """8x8 -> conv -> conv -> pool (4x4) -> conv -> flatten -> fc -> fc (logits)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(32 * 4 * 4, 64), nn.ReLU(),
            nn.Linear(64, 10),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def load_split():
    digits = load_digits()
    # Pixel values are 0..16; /16 maps them to [0,1].
    x = (digits.images.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)
    y = digits.target.astype(np.int64)
    assert len(x) == N_TRAIN + N_TEST, len(x)
    perm = np.random.RandomState(SEED).permutation(len(x))
    train, test = perm[:N_TRAIN], perm[N_TRAIN:]
    return x[train], y[train], x[test], y[test]


def train(model, x_train, y_train):
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x_train), torch.from_numpy(y_train)
    gen = torch.Generator().manual_seed(SEED)
    model.train()
    for epoch in range(EPOCHS):
        order = torch.randperm(len(xt), generator=gen)
        total = 0.0
        for i in range(0, len(xt), BATCH):
            idx = order[i:i + BATCH]
            opt.zero_grad()
            loss = loss_fn(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        if (epoch + 1) % 10 == 0:
            print(f"epoch {epoch + 1}/{EPOCHS}: train loss {total / len(xt):.4f}")


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        pred = model(torch.from_numpy(x)).argmax(dim=1).numpy()
    return int((pred == y).sum())


def export(model, path):
    model.eval()
    dummy = torch.zeros(1, 1, 8, 8, dtype=torch.float32)
    # Fixed batch dim of 1 (no dynamic_axes): the sample files are one sample each.
    torch.onnx.export(model, dummy, path, opset_version=13, do_constant_folding=True,
                      input_names=["input"], output_names=["logits"])
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    ops = sorted({n.op_type for n in m.graph.node})
    print(f"wrote {os.path.relpath(path, REPO)} ({os.path.getsize(path)} bytes), "
          f"onnx.checker OK, ops: {', '.join(ops)}")


def write_samples(directory, x):
    # Start from an empty directory so no stale files from an older run remain.
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    for i, sample in enumerate(x):
        arr = np.ascontiguousarray(sample.reshape(1, 1, 8, 8), dtype=np.float32)
        np.save(os.path.join(directory, f"{i:04d}.npy"), arr, allow_pickle=False)


def main():
    make_deterministic()
    x_train, y_train, x_test, y_test = load_split()

    model = DigitsCNN()
    train(model, x_train, y_train)
    correct = accuracy(model, x_test, y_test)
    acc = correct / len(y_test)
    print(f"float test accuracy (torch): {acc:.4f} ({correct}/{len(y_test)})")
    if acc < MIN_ACCURACY:
        print(f"error: test accuracy {acc:.4f} below target {MIN_ACCURACY}", file=sys.stderr)
        return 1

    os.makedirs(SAMPLES, exist_ok=True)
    export(model, os.path.join(SAMPLES, "digits_cnn.onnx"))
    digits_dir = os.path.join(SAMPLES, "digits")
    write_samples(os.path.join(digits_dir, "calib"), x_train[:N_CALIB])
    write_samples(os.path.join(digits_dir, "test"), x_test)
    np.save(os.path.join(digits_dir, "test_labels.npy"),
            np.ascontiguousarray(y_test, dtype=np.int64), allow_pickle=False)
    print(f"wrote {N_CALIB} calibration and {len(x_test)} test samples under "
          f"{os.path.relpath(digits_dir, REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
