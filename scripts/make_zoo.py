#!/usr/bin/python3
"""Exports the model zoo: torchvision CNNs and a small transformer encoder
classifier, randomly initialised with a fixed seed, with random inputs and
PyTorch's outputs as .npy, for tests/zoo/test_zoo.sh and
scripts/accuracy_table.sh; and the same architectures trained on
scikit-learn's digits (NAME_digits, see below), for
tests/zoo/test_zoo_digits.sh, with a DBNet-style segmentation model trained
on canvases of digits (fpn_text_digits).

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

Trained models (DIR/NAME_digits/): random networks on random inputs
are chaotic and their top-1 has tiny margins, so they cannot show whether
quantization keeps a trained model's predictions. These are the same
architectures (10 classes) trained on scikit-learn's digits
(python3-sklearn; recipes in DIGITS_MODELS): the 8x8 images scaled to
[-1, 1], upsampled bilinearly to 32x32 (squeezenet1_1 and shufflenet_v2_x0_5:
64x64, see DIGITS_MODELS) and repeated over 3
channels for the CNNs, or cut into 16 patches of 8x8 pixels (input
[1, 16, 64]) for the transformer. The split is the one of samples/digits
(permutation with seed 0: 1437 training, 360 test images).
    DIR/NAME_digits/model.onnx
    DIR/NAME_digits/calib/NNNN.npy          (the first 200 training images)
    DIR/NAME_digits/inputs/NNNN.npy         (the 360 held-out test images)
    DIR/NAME_digits/expected/NNNN.out0.npy  (PyTorch's logits on them)
    DIR/NAME_digits/labels.npy              (int64 [360]: label i belongs to
                                             the i-th file of inputs/, as
                                             qrun --labels reads it)
    DIR/NAME_digits/DONE                    (also float test accuracy, epochs,
                                             wall and CPU seconds)

A trained detection/segmentation head (DIR/fpn_text_digits/): a DBNet-style
FPN (strided Conv+BN+ReLU stages, lateral 1x1 convs, a top-down path by
ConvTranspose and nearest Resize, the scales brought together by Resize and
Concat, two ConvTranspose heads for a probability map P and a threshold map T,
joined by DBNet's binarization Sigmoid(50 (P - T)) into the output map),
trained on synthetic "text": 64x64 noisy canvases with 2-5 digits pasted at
random places and sizes; a pixel's target is whether it belongs to a digit's
stroke (recipe, numerics and figures in the comment above SEGMENTATION_MODELS).
Its metric is the IoU of the map thresholded at 0.5 (tests/zoo/iou.py), not
top-1. Same layout as the digits models with masks instead of labels:
    DIR/fpn_text_digits/model.onnx          (input [1, 3, 64, 64], output
                                             [1, 1, 64, 64] probabilities)
    DIR/fpn_text_digits/calib/NNNN.npy      (the first 200 training canvases)
    DIR/fpn_text_digits/inputs/NNNN.npy     (100 held-out canvases, of the
                                             test digits)
    DIR/fpn_text_digits/expected/NNNN.out0.npy  (PyTorch's maps on them)
    DIR/fpn_text_digits/masks.npy           (uint8 [100, 1, 64, 64], 1 =
                                             digit pixel: mask i belongs to
                                             the i-th file of inputs/)
    DIR/fpn_text_digits/DONE                (also the float IoU vs the masks,
                                             epochs, wall and CPU seconds)
"""
import argparse
import fcntl
import os
import platform
import shutil
import sys
import tempfile
import time

# The same weights from every x86 host. Training runs on three libraries that
# each pick their kernels from the CPU: OpenBLAS (GEMMs), ATen's vectorised
# kernels and oneDNN (convolutions), whose blocking also follows the cache
# sizes. Each choice sums in its own order, and after thousands of steps the
# trained models differ: mobilenet_v2_digits trained on an AMD EPYC (Zen 5,
# AVX-512) came out at 26.4 dB after quantization where the Intel Xeons' draws
# gave 30.7-32.0 (ONNX Runtime's quantize_static on the same model: 26.2 dB),
# and fpn_text_digits at an IoU of 0.64 against 0.72, so the gates of
# tests/zoo/test_zoo_digits.sh passed or failed by the host that trained.
# Pinned: OpenBLAS's Haswell kernels (fixed block sizes, AVX2 + FMA, which
# every x86 host here has) on one thread of its own (its thread count changed
# the model too; torch's own threads stay as main() sets them), ATen's AVX2
# kernels, and no oneDNN (convolutions on im2col + OpenBLAS;
# mobilenet_v2_digits trains in 168 s instead of 69 on that AMD host).
# Set before torch loads OpenBLAS, which reads its variable once; only when
# run as the zoo's builder (scripts/torch_fx_calib.py imports the networks
# from here and times PyTorch on its own kernels).
BUILDING = __name__ == "__main__"
if BUILDING and platform.machine() in ("x86_64", "AMD64"):
    os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")
    os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
import torch
import torchvision

if BUILDING:
    torch.backends.mkldnn.enabled = False
# DONE records it: a model made under other kernels is made again.
KERNELS = "openblas=%s/%s aten=%s onednn=off" % (os.environ.get("OPENBLAS_CORETYPE", "auto"),
                                                 os.environ.get("OPENBLAS_NUM_THREADS", "auto"),
                                                 os.environ.get("ATEN_CPU_CAPABILITY", "auto"))

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


class PatchTransformer(torch.nn.Module):
    """The zoo transformer for images cut into patches: a Linear patch embedding
    plus a learned position embedding in front of TransformerClassifier."""

    def __init__(self, patches, patch_pixels, d_model, classes):
        super().__init__()
        self.embed = torch.nn.Linear(patch_pixels, d_model)
        self.position = torch.nn.Parameter(torch.zeros(1, patches, d_model))
        layer = torch.nn.TransformerEncoderLayer(d_model=d_model, nhead=4, dim_feedforward=128, dropout=0.0,
                                                 batch_first=True)
        encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.classifier = TransformerClassifier(encoder, d_model, classes)

    def forward(self, x):
        return self.classifier(self.embed(x) + self.position)


# Trained models: architecture, input form ("image": [1,3,S,S], S = 32 unless
# given; "patches": [1,16,64]), opset, epochs and (peak) learning rate, and the
# recipe that trains them (DONE records it: a model exported by another recipe
# is re-exported, the others stay as they are). An export fails below
# MIN_DIGITS_ACCURACY, far above chance (0.1): a recipe that no longer trains.
#
# Recipe 3 (resnet18, squeezenet1_1, transformer): Adam at a constant learning
# rate on 2 threads, in 80-200 s of CPU time. squeezenet1_1 (no BatchNorm,
# a ReLU on its class scores) trains at 64x64 with Adam 3e-4: at 32x32 its last
# fire module sees a 1x1 map and class outputs die behind that ReLU (Adam 1e-3:
# 17%, 3e-4: 78% after 30 epochs; SGD with momentum 0.01/0.03: 9%); at 64x64,
# 10 epochs reach 96% test accuracy in ~100 s of CPU.
#
# Recipe 4 (the depthwise networks): recipe 3 left them at 87-93% test
# accuracy (5 epochs), so many test images were near-ties that any 8-bit noise
# flips, and tests/zoo/test_zoo_digits.sh could not tell quantizer error from
# model fragility. Trained to convergence instead (>= 97%): a one-cycle
# schedule (a quarter warm-up, then cosine decay), weight decay 5e-4, label
# smoothing 0.1, random shifts of up to S/16 pixels (background filled) as
# augmentation, on one thread (on a busy 2-core machine a second OpenMP thread
# cost 8x the CPU time for no wall-clock gain). AdamW for mobilenet_v2 and
# shufflenet_v2_x0_5; efficientnet_b0 learns faster with SGD (Nesterov
# momentum 0.9; peak 0.05, at 0.1 it diverged): 10 epochs at 32x32 reached
# 95.3% with SGD, 94.2% with AdamW 3e-3, 84% with AdamW 1e-3. At 32x32 the
# last stages of shufflenet and efficientnet see a 1x1 map: shufflenet stops
# near 95% (15 epochs), 97.5% at 64x64; efficientnet reaches 97.8% at 48x48 in
# 6 epochs (~125 s CPU; 64x64 would cost 4x the CPU of 32x32). At this budget
# efficientnet's accuracy still depends on the draw: with the shifts drawn
# from a generator of their own 95.6%, batch 32 96.1%, 8 epochs 95.0%, peak
# 0.03 93.3%. CPU seconds per model (DONE): mobilenet_v2 82, shufflenet 39,
# efficientnet 124 (recipe 3: 136, 73, 135 on 2 threads).
DIGITS_SIZE = 32
DIGITS_PATCH = 8
DIGITS_TEST = 360
DIGITS_CALIB = 200
DIGITS_BATCH = 64
DIGITS_SEED = 0
MIN_DIGITS_ACCURACY = 0.5


def digits_cnn(factory, epochs, lr, size=DIGITS_SIZE, recipe=3, optimizer="adam"):
    return recipe, lambda: (factory(weights=None, num_classes=10), "image", 14, epochs, lr, size, optimizer)


def efficientnet_b0_trained_without_dropout(weights, num_classes):
    """efficientnet_b0 with dropout and stochastic depth off while training
    (both are identities at inference: the exported graph is the same). With
    them, 10 epochs at 32x32 reached 92.5% test accuracy, without 94.2%."""
    model = torchvision.models.efficientnet_b0(weights=weights, num_classes=num_classes, stochastic_depth_prob=0.0)
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    return model


DIGITS_MODELS = {
    "resnet18_digits": digits_cnn(torchvision.models.resnet18, 3, 1e-3),
    "mobilenet_v2_digits": digits_cnn(torchvision.models.mobilenet_v2, 15, 3e-3, recipe=4, optimizer="adamw"),
    "shufflenet_v2_x0_5_digits": digits_cnn(torchvision.models.shufflenet_v2_x0_5, 15, 3e-3, size=64, recipe=4,
                                            optimizer="adamw"),
    "efficientnet_b0_digits": digits_cnn(efficientnet_b0_trained_without_dropout, 6, 0.05, size=48, recipe=4,
                                         optimizer="sgd"),
    "squeezenet1_1_digits": digits_cnn(torchvision.models.squeezenet1_1, 10, 3e-4, size=64),
    "transformer_encoder_digits": (3, lambda: (PatchTransformer((DIGITS_SIZE // DIGITS_PATCH) ** 2,
                                                                DIGITS_PATCH ** 2, 64, 10), "patches", 17, 8,
                                               1e-3, DIGITS_SIZE, "adam")),
}



# A detection/segmentation head (fpn_text_digits): an FPN in the way of DBNet,
# the text detector (Liao et al., "Real-time Scene Text Detection with
# Differentiable Binarization", 2020), trained on a synthetic text-detection
# task: SEG_SIZE x SEG_SIZE canvases of a noisy background (a random colour, a
# linear gradient and Gaussian noise of a random strength) with SEG_GLYPHS
# digits of scikit-learn's digits pasted at random places, sizes (SEG_GLYPH_PX
# pixels square, upsampled bilinearly) and colours (the background's colour
# moved by 0.6-1.2 per channel, all up or all down), blended by the digit's
# intensity. The target is the digit pixels: a pixel is foreground where a
# pasted digit's intensity (0..1) exceeds 0.5. Training canvases use the
# training digits, held-out canvases the test digits (the split of
# samples/digits), each from its own seed.
#
# The network: four stride-2 stages of two Conv+BN+ReLU (16, 32, 48, 64
# channels; 1/2..1/16), lateral 1x1 convs to 32 channels on 1/4..1/16, a
# top-down path (1/16 -> 1/8 by ConvTranspose, 1/8 -> 1/4 by nearest Resize,
# each added to the lateral), a 3x3 conv per level to 8 channels, brought to
# 1/4 (nearest x2 and bilinear x4 Resize) and concatenated; then DBNet's two
# heads (Conv+BN+ReLU, ConvTranspose x2 +BN+ReLU, ConvTranspose x2 to one
# channel at the input's resolution): a probability map P = Sigmoid(.) and a
# threshold map T = Sigmoid(.), joined by DBNet's differentiable binarization
# B = Sigmoid(k (P - T)) with the paper's k = 50 (SEG_AMPLIFICATION). B is
# the output (DBNet keeps P at inference for speed; B, P thresholded by T made
# differentiable, crosses 0.5 where P = T). The exporter keeps the heads'
# BatchNorms after ConvTranspose as BatchNormalization nodes (it folds them into
# Conv only). 141k parameters. Loss: BCE on P
# and BCE on B (DBNet: BCE on P, Dice on B and L1 on T towards a map that
# rises near text borders; T is learnt here through B alone). AdamW with the
# one-cycle schedule of digits recipe 4, batch SEG_BATCH, one thread.
#
# Numerics: B's logits k (P - T) span -50..50, so an error e in P - T moves
# them by 50 e: one 8-bit step of P or T (1/255) alone is 0.2 there. With
# qconvert's defaults (qrun --per-layer, 20 held-out canvases) the heads'
# last ConvTranspose outputs (the logits of P and T) keep 18.0 and 13.2 dB vs
# float, P - T 17.8 dB, B 9.3 dB: the heads' 8-bit error, amplified by k, flips
# pixels (16% of float's foreground pixels have |k (P - T)| < 0.4).
# Measured 2026-11-26 with qrun (tests/zoo/iou.py, the 100 held-out canvases):
# float IoU vs the masks 0.725; with qconvert's defaults (target ort-x86) 9.3 dB
# SNR of B vs float and IoU 0.717 vs float's map (0.620 vs the masks); with
# int16 activations (--target tflite-int16x8) 34.8 dB and 0.988 (0.723); 8-bit
# with KL calibration instead of minmax 18.2 dB and 0.911 (ONNX Runtime,
# scripts/accuracy_table.sh).
# The same network exporting P instead (one head, BCE on P) reached IoU 0.81
# and kept 34.4 dB / 0.987 with the defaults: a model that quantizes well, of
# no use to show a precision search. The levels' 3x3 convs have no BatchNorm
# or ReLU, so the Concat joins tensors of different ranges, as FPN necks do.
SEG_SIZE = 64
SEG_TRAIN = 1536
SEG_TEST = 100
SEG_CALIB = 200
SEG_GLYPHS = (2, 5)
SEG_GLYPH_PX = (12, 28)
SEG_TRAIN_SEED = 1
SEG_TEST_SEED = 2
SEG_BATCH = 32
# DBNet's amplifying factor k of the differentiable binarization.
SEG_AMPLIFICATION = 50.0
MIN_SEG_IOU = 0.6


def conv_bn_relu(cin, cout, stride):
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False), torch.nn.BatchNorm2d(cout),
                               torch.nn.ReLU())


def probability_head(cin, inner):
    """DBNet's head: Conv+BN+ReLU, ConvTranspose x2+BN+ReLU, ConvTranspose x2 to
    one channel of logits at 4x the resolution of its input."""
    return torch.nn.Sequential(
        conv_bn_relu(cin, inner, 1),
        torch.nn.ConvTranspose2d(inner, inner, 2, 2), torch.nn.BatchNorm2d(inner), torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(inner, 1, 2, 2))


class FpnText(torch.nn.Module):
    """DBNet-style FPN with probability and threshold heads (see above). In
    training mode it returns the logits of P and of the approximate binary map,
    k (P - T) (the losses take logits: numerically stable); in eval mode (and
    the exported graph) the approximate binary map Sigmoid(k (P - T)), the
    model's output."""

    def __init__(self, channels=(16, 32, 48, 64), inner=32):
        super().__init__()
        c = (3,) + channels
        self.stages = torch.nn.ModuleList(
            torch.nn.Sequential(conv_bn_relu(c[k], c[k + 1], 2), conv_bn_relu(c[k + 1], c[k + 1], 1))
            for k in range(len(channels)))
        self.lateral = torch.nn.ModuleList(torch.nn.Conv2d(ch, inner, 1) for ch in channels[1:])
        self.top_down = torch.nn.ConvTranspose2d(inner, inner, 2, 2)
        self.level_out = torch.nn.ModuleList(torch.nn.Conv2d(inner, inner // 4, 3, padding=1) for _ in channels[1:])
        self.probability = probability_head(3 * (inner // 4), inner // 2)
        self.threshold = probability_head(3 * (inner // 4), inner // 2)

    def forward(self, x):
        features = []
        for stage in self.stages:
            x = stage(x)
            features.append(x)
        c4, c8, c16 = features[1:]  # 1/4, 1/8, 1/16 of the input
        interpolate = torch.nn.functional.interpolate
        p16 = self.lateral[2](c16)
        p8 = self.lateral[1](c8) + self.top_down(p16)
        p4 = self.lateral[0](c4) + interpolate(p8, scale_factor=2.0, mode="nearest")
        fused = torch.cat([self.level_out[0](p4),
                           interpolate(self.level_out[1](p8), scale_factor=2.0, mode="nearest"),
                           interpolate(self.level_out[2](p16), scale_factor=4.0, mode="bilinear", align_corners=False)],
                          dim=1)
        probability_logits = self.probability(fused)
        threshold = torch.sigmoid(self.threshold(fused))
        binary_logits = SEG_AMPLIFICATION * (torch.sigmoid(probability_logits) - threshold)
        if self.training:
            return probability_logits, binary_logits
        return torch.sigmoid(binary_logits)


# name: (recipe, build -> (model, opset, epochs, peak learning rate, weight decay))
SEGMENTATION_MODELS = {
    "fpn_text_digits": (1, lambda: (FpnText(), 13, 12, 3e-3, 5e-4)),
}


def text_canvases(glyphs, count, seed):
    """`count` canvases float32 [count, 3, S, S] and their masks uint8
    [count, 1, S, S] (S = SEG_SIZE), digits drawn from `glyphs` (8x8, 0..16)."""
    rng = np.random.default_rng(seed)
    images = np.empty((count, 3, SEG_SIZE, SEG_SIZE), np.float32)
    masks = np.zeros((count, 1, SEG_SIZE, SEG_SIZE), np.uint8)
    ramp = (np.arange(SEG_SIZE, dtype=np.float32) + 0.5) / SEG_SIZE - 0.5
    for i in range(count):
        colour = rng.uniform(-0.8, 0.8, 3).astype(np.float32)
        slope = rng.uniform(-0.5, 0.5, (3, 2)).astype(np.float32)
        canvas = (colour[:, None, None] + slope[:, 0, None, None] * ramp[:, None] + slope[:, 1, None, None] * ramp
                  + rng.normal(0.0, rng.uniform(0.05, 0.3), (3, SEG_SIZE, SEG_SIZE)).astype(np.float32))
        for _ in range(rng.integers(SEG_GLYPHS[0], SEG_GLYPHS[1] + 1)):
            glyph = glyphs[int(rng.integers(len(glyphs)))] / 16.0
            px = int(rng.integers(SEG_GLYPH_PX[0], SEG_GLYPH_PX[1] + 1))
            alpha = torch.nn.functional.interpolate(glyph[None, None], size=(px, px), mode="bilinear",
                                                    align_corners=False)[0, 0].numpy()
            r, c = (int(v) for v in rng.integers(0, SEG_SIZE - px + 1, 2))
            ink = colour + rng.choice([-1.0, 1.0]) * rng.uniform(0.6, 1.2, 3).astype(np.float32)
            area = canvas[:, r:r + px, c:c + px]
            area[...] = area * (1.0 - alpha) + ink[:, None, None] * alpha
            masks[i, 0, r:r + px, c:c + px] |= (alpha > 0.5).astype(np.uint8)
        images[i] = canvas
    return torch.from_numpy(images), torch.from_numpy(masks)


def one_cycle(model, optimizer, lr, steps, weight_decay=5e-4):
    """Digits recipe 4's optimizer and its one-cycle schedule."""
    if optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True, weight_decay=weight_decay)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    return opt, torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.25)


def pooled_iou(probabilities, masks):
    """IoU of the maps thresholded at 0.5 with the masks, pixels of all samples
    pooled (tests/zoo/iou.py's definition)."""
    predicted, truth = probabilities > 0.5, masks != 0
    return float((predicted & truth).sum()) / max(1.0, float((predicted | truth).sum()))


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


def done_field(done, key):
    """The value of DONE's line `key value`, or None."""
    try:
        with open(done) as f:
            for line in f:
                if line.startswith(key + " "):
                    return line[len(key) + 1:].strip()
    except OSError:
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


def digits_8x8_split():
    """scikit-learn's digits in the split of samples/digits: (train, y_train,
    test, y_test), images float32 [N, 8, 8] with pixel values 0..16."""
    from sklearn.datasets import load_digits  # only the trained models need it
    digits = load_digits()
    x = torch.from_numpy(digits.images.astype(np.float32))
    y = torch.from_numpy(digits.target.astype(np.int64))
    perm = torch.from_numpy(np.random.RandomState(DIGITS_SEED).permutation(len(x)))
    train, test = perm[:len(x) - DIGITS_TEST], perm[len(x) - DIGITS_TEST:]
    return x[train], y[train], x[test], y[test]


def digits_split(size=DIGITS_SIZE):
    """scikit-learn's digits as model inputs: (x_train, y_train, x_test, y_test)
    with x of shape [N, 3, size, size] (images) and the split of samples/digits."""
    x_train, y_train, x_test, y_test = digits_8x8_split()

    def as_input(images):
        # Pixel values are 0..16: scaled to [-1, 1], then upsampled (bilinear is
        # deterministic on CPU) and repeated over the 3 input channels.
        x = (images / 8.0 - 1.0)[:, None]
        return torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear",
                                               align_corners=False).repeat(1, 3, 1, 1)
    return as_input(x_train), y_train, as_input(x_test), y_test


def as_patches(images):
    """[N, 3, S, S] -> [N, (S/P)^2, P*P]: the first channel cut into P x P
    patches in row-major order, each flattened row by row."""
    n, p = images.shape[0], DIGITS_PATCH
    g = DIGITS_SIZE // p
    x = images[:, 0].reshape(n, g, p, g, p).permute(0, 1, 3, 2, 4)
    return x.reshape(n, g * g, p * p).contiguous()


def shift_images(images, pixels, generator):
    """Each image moved by a random offset in [-pixels, pixels] along each
    axis; what moves in is background (-1, a blank pixel of digits)."""
    n, size = images.shape[0], images.shape[-1]
    padded = torch.nn.functional.pad(images, (pixels,) * 4, value=-1.0)
    offsets = torch.randint(0, 2 * pixels + 1, (n, 2), generator=generator).tolist()
    return torch.stack([padded[i, :, r:r + size, c:c + size] for i, (r, c) in enumerate(offsets)])


def train_digits(model, x, y, epochs, lr, recipe, optimizer):
    """Mini-batches in a seeded order. Recipe 3: Adam on cross-entropy at a
    constant learning rate. Recipe 4: AdamW or SGD, one-cycle schedule, label
    smoothing, random shifts (see DIGITS_MODELS). Measured on mobilenet_v2 at
    32x32 (test accuracy): recipe 3, 5 epochs 89.4%; recipe 4, 5 epochs 90.3%,
    15 epochs 98.9%; BatchNorm statistics recomputed on the training images
    after training lowered it (98.3%; shufflenet 95.0% -> 92.8%), so they
    keep their running averages."""
    # One generator for the order and the shifts (recipe 4 draws both from it).
    order_gen = torch.Generator().manual_seed(DIGITS_SEED)
    steps = epochs * ((len(x) + DIGITS_BATCH - 1) // DIGITS_BATCH)
    if recipe == 3:
        opt, schedule, smoothing = torch.optim.Adam(model.parameters(), lr=lr), None, 0.0
    else:
        (opt, schedule), smoothing = one_cycle(model, optimizer, lr, steps), 0.1
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=order_gen)
        for i in range(0, len(x), DIGITS_BATCH):
            idx = order[i:i + DIGITS_BATCH]
            batch = x[idx] if recipe == 3 else shift_images(x[idx], x.shape[-1] // 16, order_gen)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(batch), y[idx], label_smoothing=smoothing).backward()
            opt.step()
            if schedule:
                schedule.step()
    model.eval()


def export_digits(name, out_dir):
    started = time.time(), time.process_time()
    recipe, build = DIGITS_MODELS[name]
    torch.manual_seed(DIGITS_SEED)
    model, form, opset, epochs, lr, size, optimizer = build()
    x_train, y_train, x_test, y_test = digits_split(size)
    if form == "patches":
        x_train, x_test = as_patches(x_train), as_patches(x_test)
    train_digits(model, x_train, y_train, epochs, lr, recipe, optimizer)
    with torch.no_grad():
        logits = model(x_test)
    accuracy = float((logits.argmax(dim=1) == y_test).float().mean())
    require_trained(name, "float test accuracy", accuracy, MIN_DIGITS_ACCURACY)
    d = os.path.join(out_dir, name)
    write_trained(d, model, opset, x_train[:DIGITS_CALIB], x_test, logits, ("labels.npy", y_test))
    write_done(d, name, started, f"test accuracy {accuracy:.4f}",
               torch=torch.__version__, torchvision=torchvision.__version__, opset=opset, seed=DIGITS_SEED,
               recipe=recipe, optimizer=optimizer, size=size, epochs=epochs, lr=f"{lr:g}", accuracy=f"{accuracy:.4f}")


def write_done(d, name, started, figure, **fields):
    """Writes a trained model's DONE ("key value" lines: `fields`, then wall
    and CPU seconds since `started`, a (time.time(), time.process_time())
    pair) and says so with `figure`, its float metric."""
    seconds, cpu = time.time() - started[0], time.process_time() - started[1]
    with open(os.path.join(d, "DONE"), "w") as f:
        for key, value in fields.items():
            f.write(f"{key} {value}\n")
        f.write(f"seconds {seconds:.1f}\ncpu_seconds {cpu:.1f}\n")
    print(f"make_zoo: {name}: trained ({fields['epochs']} epochs, {figure}) and exported in "
          f"{seconds:.1f} s ({cpu:.1f} s CPU)", file=sys.stderr)


def require_trained(name, metric, value, floor):
    """Fails the export of a model whose float metric is below `floor`: a
    recipe that no longer trains it."""
    if value < floor:
        raise RuntimeError(f"{name}: {metric} {value:.4f} is below {floor} (the recipe no longer trains it)")


def write_trained(d, model, opset, calib, inputs, outputs, truth):
    """A trained model's directory but DONE: DONE removed first (a run
    interrupted from here on leaves the model to re-export), model.onnx,
    calib/NNNN.npy, inputs/NNNN.npy and expected/NNNN.out0.npy (one sample
    per file), and the ground truth, truth = (file name, tensor)."""
    for sub in ("calib", "inputs", "expected"):
        # Emptied first: no stale samples of an older recipe stay behind.
        shutil.rmtree(os.path.join(d, sub), ignore_errors=True)
        os.makedirs(os.path.join(d, sub))
    done = os.path.join(d, "DONE")
    if os.path.exists(done):
        os.remove(done)
    tmp_model = os.path.join(d, "model.onnx.tmp")
    # As in export(): gradients enabled, so the transformer exports its plain path.
    torch.onnx.export(model, inputs[:1], tmp_model, opset_version=opset, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
    os.replace(tmp_model, os.path.join(d, "model.onnx"))
    for i in range(len(calib)):
        save_npy(os.path.join(d, "calib", f"{i:04d}.npy"), calib[i:i + 1].numpy())
    for i in range(len(inputs)):
        save_npy(os.path.join(d, "inputs", f"{i:04d}.npy"), inputs[i:i + 1].numpy())
        save_npy(os.path.join(d, "expected", f"{i:04d}.out0.npy"), outputs[i:i + 1].numpy())
    save_npy(os.path.join(d, truth[0]), truth[1].numpy())


def export_segmentation(name, out_dir):
    """Trains a SEGMENTATION_MODELS entry on text_canvases and exports it (the
    digits layout with masks.npy for labels.npy; see the module docstring)."""
    started = time.time(), time.process_time()
    recipe, build = SEGMENTATION_MODELS[name]
    torch.manual_seed(DIGITS_SEED)
    model, opset, epochs, lr, weight_decay = build()
    train_glyphs, _, test_glyphs, _ = digits_8x8_split()
    x_train, m_train = text_canvases(train_glyphs, SEG_TRAIN, SEG_TRAIN_SEED)
    x_test, m_test = text_canvases(test_glyphs, SEG_TEST, SEG_TEST_SEED)
    target = m_train.float()
    order_gen = torch.Generator().manual_seed(DIGITS_SEED)
    batches = len(x_train) // SEG_BATCH  # the last partial batch is dropped: BatchNorm on few samples is noisy
    opt, schedule = one_cycle(model, "adamw", lr, epochs * batches, weight_decay)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(x_train), generator=order_gen)
        for b in range(batches):
            idx = order[b * SEG_BATCH:(b + 1) * SEG_BATCH]
            opt.zero_grad()
            bce = torch.nn.functional.binary_cross_entropy_with_logits
            probability_logits, binary_logits = model(x_train[idx])
            (bce(probability_logits, target[idx]) + bce(binary_logits, target[idx])).backward()
            opt.step()
            schedule.step()
    model.eval()
    with torch.no_grad():
        probabilities = model(x_test)
    iou = pooled_iou(probabilities, m_test)
    require_trained(name, "float IoU on the held-out canvases", iou, MIN_SEG_IOU)
    d = os.path.join(out_dir, name)
    write_trained(d, model, opset, x_train[:SEG_CALIB], x_test, probabilities, ("masks.npy", m_test))
    write_done(d, name, started, f"held-out IoU {iou:.4f}",
               torch=torch.__version__, opset=opset, seed=DIGITS_SEED, recipe=recipe, optimizer="adamw",
               weight_decay=f"{weight_decay:g}", size=SEG_SIZE, training_canvases=SEG_TRAIN, epochs=epochs,
               lr=f"{lr:g}", iou=f"{iou:.4f}")


# The byte-level language model of scripts/make_byte_lm.py (issue 25: bits per
# byte under 4-bit weight rounding), trained on Python's standard library.
LM_MODELS = {"byte_lm": 1}  # name -> recipe


def export_byte_lm(name, out_dir):
    import make_byte_lm  # scripts/, this script's directory
    make_byte_lm.main(os.path.join(out_dir, name), recipe=LM_MODELS[name])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--force", action="store_true", help="re-export models that are already there")
    args = ap.parse_args()
    # The language model is built only when named (--only byte_lm): no zoo test
    # uses it, and the test suite's zoo build is most of CI's time.
    default = list(MODELS) + list(DIGITS_MODELS) + list(SEGMENTATION_MODELS)
    known = default + list(LM_MODELS)
    names = [n for n in args.only.split(",") if n] or default
    for n in names:
        if n not in known:
            print(f"error: unknown model '{n}' (known: {', '.join(known)})", file=sys.stderr)
            return 2
    threads = max(1, min(2, os.cpu_count() or 1))
    # Same bits on every run of a machine (CPU kernels; the thread count is fixed below).
    torch.use_deterministic_algorithms(True)
    def build(n):
        if n in MODELS:
            recipe, export_one = RECIPE, export
        elif n in DIGITS_MODELS:
            recipe, export_one = DIGITS_MODELS[n][0], export_digits
        elif n in LM_MODELS:
            recipe, export_one = LM_MODELS[n], export_byte_lm
        else:
            recipe, export_one = SEGMENTATION_MODELS[n][0], export_segmentation
        done = os.path.join(args.out, n, "DONE")
        if not args.force and done_field(done, "recipe") == str(recipe) and done_field(done, "kernels") == KERNELS:
            return
        # Digits recipe 4 and the segmentation models train on one thread (see DIGITS_MODELS).
        one_thread = (n in DIGITS_MODELS and recipe >= 4) or n in SEGMENTATION_MODELS
        torch.set_num_threads(1 if one_thread else threads)
        export_one(n, args.out)
        with open(done, "a") as f:
            f.write(f"kernels {KERNELS}\n")

    # Runs that overlap (the zoo tests under ctest -j) share the work: each
    # model has a lock; a run takes the next model nobody is building, and
    # waits only when every model left is being built by another run. Most
    # models train on one thread, so two runs use both cores.
    pending = list(names)
    while pending:
        for n in list(pending):
            with open(os.path.join(args.out, f".{n}.lock"), "w") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                build(n)
            pending.remove(n)
        if pending:  # all taken by other runs: wait for the first, then build it if that run did not
            with open(os.path.join(args.out, f".{pending[0]}.lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                build(pending[0])
            pending.pop(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
