#!/usr/bin/env bash
# scripts/torch_fx_calib.py (scripts/bench.sh qprofile's PyTorch side): bad
# arguments give one error: line and exit 2; where python3-torch and
# torchvision import, it calibrates resnet18 (built as make_zoo.py builds it)
# on two generated inputs and prints its line. Its time is never asserted.
source "$(dirname "$0")/lib.sh"
script="$src/scripts/torch_fx_calib.py"

mkdir -p "$tmp/empty"
expect_exit 2 "no .npy samples" /usr/bin/python3 "$script" resnet18 "$tmp/empty"

/usr/bin/python3 -c "import torch, torchvision" 2>/dev/null || { echo "skip: python3-torch/torchvision missing"; exit 77; }
mkdir -p "$tmp/in"
/usr/bin/python3 - "$tmp/in" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(3)
for k in range(2):
    np.save(f"{sys.argv[1]}/s{k}.npy", rng.standard_normal((1, 3, 224, 224)).astype(np.float32))
PY
expect_exit 2 "unknown zoo model 'nosuch'" /usr/bin/python3 "$script" nosuch "$tmp/in"
expect_exit 2 "--runs must be at least 1" /usr/bin/python3 "$script" resnet18 "$tmp/in" --runs 0
/usr/bin/python3 "$script" resnet18 "$tmp/in" --runs 1 >"$tmp/out.txt" 2>"$tmp/err.txt" ||
  fail "torch_fx_calib.py failed: $(cat "$tmp/err.txt")"
grep -Eq '^torch-fx: [0-9.]+ ms per sample \(CPU time; wall [0-9.]+ ms; median of 1 rounds over 2 samples, 1 thread, torch [^,]+, kernels host\)$' \
  "$tmp/out.txt" || fail "unexpected line: $(cat "$tmp/out.txt")"
echo "torch_fx_calib ok"
