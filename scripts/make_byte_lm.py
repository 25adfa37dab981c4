#!/usr/bin/python3
"""A small byte-level language model for measuring 4-bit weight rounding
(issue 25, scripts/weight_rounding_table.sh): a 2-layer causal transformer
(d_model 128, 4 heads, feed-forward 512, learned positions) over bytes,
trained on Python's standard library sources as Debian ships them
(/usr/lib/python3.X/*.py; the files sorted by name, the last tenth held out),
fixed seeds and a fixed number of steps (300; 7.5 minutes on a busy 2-core host).

    make_byte_lm.py OUT_DIR
        OUT_DIR/model.onnx       input int64 [b, 64] bytes -> output [b, 64, 256] next-byte logits
        OUT_DIR/calib/           32 windows of training text (.npy int64 [1, 64])
        OUT_DIR/inputs/          64 windows of held-out text
        OUT_DIR/targets.npy      [64, 64]: the next byte at each position of inputs/
        OUT_DIR/DONE             written last (the recipe, for scripts/make_zoo.py)
Built by scripts/make_zoo.sh (--only byte_lm) into .cache/zoo/byte_lm.
The metric is bits per byte on inputs/ (scripts/byte_lm_bpb.py).
"""
import glob
import os
import sys
import sysconfig
import time

import numpy as np
import torch

SEQ, D, STEPS, BATCH = 64, 128, 300, 16


class ByteLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(256, D)
        self.pos = torch.nn.Parameter(torch.zeros(SEQ, D))
        layer = torch.nn.TransformerEncoderLayer(D, 4, 4 * D, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(D)
        self.head = torch.nn.Linear(D, 256)
        self.register_buffer("mask", torch.triu(torch.full((SEQ, SEQ), float("-inf")), 1))

    def forward(self, x):
        h = self.embed(x) + self.pos
        return self.head(self.norm(self.encoder(h, mask=self.mask)))


def corpus():
    files = sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "*.py")))
    cut = len(files) * 9 // 10
    read = lambda fs: np.frombuffer(b"".join(open(f, "rb").read() for f in fs), dtype=np.uint8)
    return read(files[:cut]), read(files[cut:])


def windows(text, n, rng):
    starts = rng.integers(0, len(text) - SEQ - 1, n)
    return np.stack([text[s:s + SEQ + 1] for s in starts]).astype(np.int64)


def main(out, recipe=1):
    torch.manual_seed(25)
    torch.set_num_threads(2)
    rng = np.random.default_rng(25)
    train, held = corpus()
    model = ByteLM()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    start = time.time()
    for step in range(STEPS):
        w = torch.from_numpy(windows(train, BATCH, rng))
        logits = model(w[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 256), w[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % 100 == 0:
            print("make_byte_lm: step %d, %.0f s, loss %.3f bits/byte" % (step + 1, time.time() - start, loss.item() / np.log(2)),
                  file=sys.stderr)
    print("make_byte_lm: %d steps in %.0f s, last training loss %.3f bits/byte" %
          (STEPS, time.time() - start, loss.item() / np.log(2)), file=sys.stderr)
    os.makedirs(os.path.join(out, "calib"), exist_ok=True)
    os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
    for i, w in enumerate(windows(train, 32, rng)):
        np.save(os.path.join(out, "calib", "sample_%02d.npy" % i), w[None, :-1])
    test = windows(held, 64, rng)
    for i, w in enumerate(test):
        np.save(os.path.join(out, "inputs", "sample_%02d.npy" % i), w[None, :-1])
    np.save(os.path.join(out, "targets.npy"), test[:, 1:])
    # Gradients enabled: the encoder exports its plain path, not the fused
    # inference kernel (as scripts/make_zoo.py does).
    tmp = os.path.join(out, "model.onnx.tmp")
    torch.onnx.export(model, torch.from_numpy(test[:1, :-1]), tmp, opset_version=14, input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                      do_constant_folding=True)
    os.replace(tmp, os.path.join(out, "model.onnx"))
    with open(os.path.join(out, "DONE"), "w") as f:  # scripts/make_zoo.py re-exports on another recipe
        f.write("recipe %d\ntorch %s\n" % (recipe, torch.__version__))


if __name__ == "__main__":
    main(sys.argv[1])
