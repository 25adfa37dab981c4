#!/usr/bin/env bash
# The conformance layout through the real CLI: `qrun DIR/model.onnx --data DIR
# -o OUT` takes the test_data_set_* folders of DIR as samples (model.onnx and
# other files ignored) and writes OUT/test_data_set_0.out<k>.npy, equal to the
# suite's output_<k>.pb.
source "$(dirname "$0")/lib.sh"
for t in test_conv_with_strides_padding test_lstm_defaults test_resize_upsample_scales_linear; do
  d=/usr/share/libonnx-testdata/data/node/$t
  [ -d "$d" ] || fail "$d missing (libonnx-testdata)"
  "$bin/qrun" "$d/model.onnx" --data "$d" -o "$tmp/$t" --quiet >/dev/null
  [ "$(ls "$tmp/$t")" = "test_data_set_0.out0.npy" ] || [ -e "$tmp/$t/test_data_set_0.out0.npy" ] ||
    fail "$t: unexpected outputs: $(ls "$tmp/$t")"
  /usr/bin/python3 - "$d/test_data_set_0" "$tmp/$t" <<'PY' || fail "$t: output differs from output_0.pb"
import sys, glob, os
import numpy as np, onnx
from onnx import numpy_helper
ref, out = sys.argv[1], sys.argv[2]
for k, pb in enumerate(sorted(glob.glob(os.path.join(ref, "output_*.pb")))):
    t = onnx.TensorProto(); t.ParseFromString(open(pb, "rb").read())
    want = numpy_helper.to_array(t)
    got = np.load(os.path.join(out, f"test_data_set_0.out{k}.npy"))
    assert got.shape == want.shape and np.allclose(got, want, rtol=1e-3, atol=1e-5), (got, want)
PY
done
echo "conformance CLI ok"
