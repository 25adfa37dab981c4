#!/usr/bin/env bash
# Gates must fail when the outputs are NaN or Inf (issue 29): NaN < threshold
# is false, so a gate written as `metric < min` passes a model whose every
# output is NaN. Model: y = Sqrt(x) on negative x (all NaN), reference y = x.
source "$(dirname "$0")/lib.sh"
/usr/bin/python3 - "$tmp" <<'PY'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper
out = sys.argv[1]
def model(op, path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"])], op.lower(), [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
model("Sqrt", os.path.join(out, "sqrt.onnx"))
model("Identity", os.path.join(out, "identity.onnx"))
model("Reciprocal", os.path.join(out, "reciprocal.onnx"))
for name, rows in (("neg", [[-1.0, -2.0, -3.0, -4.0]]), ("zero", [[0.0, 1.0, 2.0, 4.0]])):
    os.makedirs(os.path.join(out, name))
    for i, r in enumerate(rows * 2):
        np.save(os.path.join(out, name, f"{i:04d}.npy"), np.array([r], np.float32) * (i + 1))
labels = np.zeros(2, np.int64)
np.save(os.path.join(out, "labels.npy"), labels)
PY

# The issue's command: every gate a user may pass, and none of them may let NaN through.
expect_exit 3 "output 'y' of sample '0000'" "$bin/qrun" "$tmp/sqrt.onnx" --data "$tmp/neg" \
  --reference "$tmp/identity.onnx" --min-snr 25 --min-cosine 0.99 --quiet
grep -qF "holds NaN or Inf" "$tmp/stderr" || fail "gate message lacks the reason: $(cat "$tmp/stderr")"
grep -qF "sqrt.onnx" "$tmp/stderr" || fail "gate message does not name the model with NaN: $(cat "$tmp/stderr")"
grep -qF "non-finite values: 8" "$tmp/stdout" || fail "summary lacks the NaN count: $(cat "$tmp/stdout")"
# The printed metrics are NaN, not a reassuring 0 error and 100% agreement.
grep -q "^max abs error: .*nan" "$tmp/stdout" || fail "max abs error is not NaN: $(cat "$tmp/stdout")"
grep -qF "top-1 agreement: 0.00%" "$tmp/stdout" || fail "NaN rows agree: $(cat "$tmp/stdout")"
for gate in "--min-cosine 0.99" "--min-snr 25" "--labels $tmp/labels.npy --max-accuracy-drop 100" ""; do
  # shellcheck disable=SC2086
  expect_exit 3 "holds NaN or Inf" "$bin/qrun" "$tmp/sqrt.onnx" --data "$tmp/neg" --reference "$tmp/identity.onnx" $gate --quiet
done
# NaN in the reference is as bad, and so is Inf (1/0); --json reports NaN as "nan".
expect_exit 3 "(${tmp}/sqrt.onnx)" "$bin/qrun" "$tmp/identity.onnx" --data "$tmp/neg" --reference "$tmp/sqrt.onnx" --quiet
expect_exit 3 "output 'y' of sample '0000' (${tmp}/reciprocal.onnx)" "$bin/qrun" "$tmp/reciprocal.onnx" \
  --data "$tmp/zero" --reference "$tmp/identity.onnx" --min-snr -1000 --json --quiet
/usr/bin/python3 - "$tmp/stdout" <<'PY' || fail "--json: $(cat "$tmp/stdout")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["snr_db"] == "nan" and d["cosine"] == "nan" and d["max_abs_error"] == "nan", d
assert d["nonfinite_values"] == 2, d
PY
# Finite outputs still pass.
"$bin/qrun" "$tmp/identity.onnx" --data "$tmp/neg" --reference "$tmp/identity.onnx" --min-snr 25 --min-cosine 0.99 \
  --quiet >/dev/null || fail "identical finite outputs fail the gates"

# The Python gate helpers: compare_outputs.py (every interop test) and the zoo's agreement.py and iou.py.
"$bin/qrun" "$tmp/sqrt.onnx" --data "$tmp/neg" -o "$tmp/out_sqrt" --quiet >/dev/null
"$bin/qrun" "$tmp/identity.onnx" --data "$tmp/neg" -o "$tmp/out_id" --quiet >/dev/null
compare=("/usr/bin/python3" "$src/tests/interop/compare_outputs.py")
for check in "--atol 1e30" "--min-snr -1000" "--top1" ""; do
  code=0
  # shellcheck disable=SC2086
  "${compare[@]}" "$tmp/out_sqrt" "$tmp/out_id" $check >"$tmp/cmp.txt" 2>&1 || code=$?
  [ "$code" -eq 1 ] || fail "compare_outputs.py $check exited $code on NaN outputs: $(cat "$tmp/cmp.txt")"
  grep -qF "hold NaN or Inf" "$tmp/cmp.txt" || fail "compare_outputs.py $check does not say why: $(cat "$tmp/cmp.txt")"
done
"${compare[@]}" "$tmp/out_id" "$tmp/out_id" --atol 0 --min-snr 100 --top1 >/dev/null ||
  fail "compare_outputs.py fails identical finite outputs"
# Their own gates off (iou.py has none by default): only the NaN fails.
for gate in "agreement.py --min-agreement 0 --max-drop 100" iou.py; do
  code=0
  # shellcheck disable=SC2086
  /usr/bin/python3 "$src/tests/zoo/"$gate nan "$tmp/out_sqrt" "$tmp/out_id" >"$tmp/gate.txt" 2>&1 || code=$?
  [ "$code" -eq 1 ] || fail "${gate%% *} exited $code on NaN outputs: $(cat "$tmp/gate.txt")"
  grep -qF "hold NaN or Inf" "$tmp/gate.txt" || fail "${gate%% *} does not say why: $(cat "$tmp/gate.txt")"
  # shellcheck disable=SC2086
  /usr/bin/python3 "$src/tests/zoo/"$gate same "$tmp/out_id" "$tmp/out_id" >/dev/null ||
    fail "${gate%% *} fails identical finite outputs"
done
echo "gates on non-finite outputs ok"
