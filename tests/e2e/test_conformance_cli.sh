#!/usr/bin/env bash
# The conformance layout through the real CLI: `qrun DIR/model.onnx --data DIR
# -o OUT` takes the test_data_set_* folders of DIR as samples (model.onnx and
# other files ignored) and writes OUT/test_data_set_0.out<k>.npy, equal to the
# suite's output_<k>.pb. test_constant's model has no inputs: its sample
# folder holds only the expected output, and is one run.
source "$(dirname "$0")/lib.sh"
for t in test_conv_with_strides_padding test_lstm_defaults test_resize_upsample_scales_linear test_constant; do
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

# The runner itself (issue 29): a run that checks nothing, or checks against a
# known-failures file it could not read, must not pass; a known failure must
# fail for the listed reason class. A small suite: test_wrong (Identity whose
# expected output is wrong: mismatch) and test_noop (an operator the
# interpreter lacks: unsupported).
conf="$bin/conformance"
/usr/bin/python3 - "$tmp/suite" <<'PY'
import os, sys
import numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
root = sys.argv[1]
def test(name, op, expected):
    d = os.path.join(root, name, "test_data_set_0")
    os.makedirs(d)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"])], name, [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(root, name, "model.onnx"))
    for f, v in (("input_0.pb", [1.0, 2.0]), ("output_0.pb", expected)):
        t = numpy_helper.from_array(np.array(v, np.float32), "x" if f.startswith("input") else "y")
        open(os.path.join(d, f), "wb").write(t.SerializeToString())
test("test_wrong", "Identity", [1.0, 3.0])
test("test_noop", "NoSuchOperator", [1.0, 2.0])
test("test_right", "Identity", [1.0, 2.0])
PY
mkdir "$tmp/empty"
expect_exit 2 "/nonexistent: not a directory" "$conf" /nonexistent
expect_exit 2 "no tests found" "$conf" "$tmp/empty"
expect_exit 2 "no tests found" "$conf" "$tmp/suite" --filter no_such_test
expect_exit 2 "$tmp/missing.txt: cannot read" "$conf" "$tmp/suite" --known-failures "$tmp/missing.txt"
printf 'test_wrong  wrong-values  output 0 differs\n' >"$tmp/bad_class.txt"
expect_exit 2 "bad_class.txt:1: 'wrong-values' is not a failure class" "$conf" "$tmp/suite" --known-failures "$tmp/bad_class.txt"
# Without a list every failure is new, with its class.
expect_exit 1 "" "$conf" "$tmp/suite"
grep -qF "NEW FAILURE test_wrong: mismatch" "$tmp/stdout" || fail "mismatch not reported: $(cat "$tmp/stdout")"
grep -qF "NEW FAILURE test_noop: unsupported" "$tmp/stdout" || fail "unsupported op not reported: $(cat "$tmp/stdout")"
# --write-failures writes the list that makes the same run pass.
expect_exit 1 "" "$conf" "$tmp/suite" --write-failures "$tmp/known.txt"
grep -q "^test_wrong  mismatch  " "$tmp/known.txt" || fail "written list: $(cat "$tmp/known.txt")"
"$conf" "$tmp/suite" --known-failures "$tmp/known.txt" >"$tmp/out.txt" || fail "listed failures fail: $(cat "$tmp/out.txt")"
grep -qF "1 passed, 2 failed" "$tmp/out.txt" || fail "counts: $(cat "$tmp/out.txt")"
# Listed under another class: reported, exit 1.
sed 's/^test_noop  unsupported/test_noop  mismatch/' "$tmp/known.txt" >"$tmp/swapped.txt"
expect_exit 1 "" "$conf" "$tmp/suite" --known-failures "$tmp/swapped.txt"
grep -qF "NEW FAILURE test_noop: fails as unsupported, listed as mismatch" "$tmp/stdout" ||
  fail "class change not reported: $(cat "$tmp/stdout")"
echo "conformance CLI ok"
