#!/usr/bin/env bash
# Issue 27: a small detector (NonMaxSuppression, RoiAlign, GridSample in the
# graph) and a log-mel front end (HannWindow, STFT, MelWeightMatrix, DFT and
# its inverse) run in qrun and match ONNX Runtime: integer outputs exactly,
# float outputs within 1e-4 relative (max |qrun - ORT| <= 1e-4 * max |ORT| per
# output). Then qconvert keeps every one of these ops float and its report
# says why.
set -euo pipefail
source "${QTOOL_SOURCE_DIR:?}/tests/interop/ort_env.sh"
/usr/bin/python3 "$src/tests/interop/make_signal_detection_models.py" "$tmp"
for m in detector logmel; do
  "$bin/qrun" "$tmp/$m.onnx" --data "$tmp/${m}_data" -o "$tmp/qrun_$m" --quiet
  node "$src/tests/interop/ort_run.js" "$tmp/$m.onnx" "$tmp/${m}_data" "$tmp/ort_$m"
  /usr/bin/python3 - "$tmp/qrun_$m" "$tmp/ort_$m" <<'PY'
import os, sys
import numpy as np
a_dir, b_dir = sys.argv[1:]
names = sorted(os.listdir(b_dir))
worst = 0.0
assert names and names == sorted(os.listdir(a_dir)), f"output files differ: {sorted(os.listdir(a_dir))} vs {names}"
for f in names:
    a, b = np.load(os.path.join(a_dir, f)), np.load(os.path.join(b_dir, f))
    assert a.shape == b.shape and a.dtype == b.dtype, f"{f}: {a.dtype}{a.shape} vs ORT {b.dtype}{b.shape}"
    if np.issubdtype(b.dtype, np.integer):
        assert np.array_equal(a, b), f"{f}: qrun {a.tolist()} vs ORT {b.tolist()}"
    else:
        assert np.all(np.isfinite(a)) and np.all(np.isfinite(b)), f"{f}: non-finite values"
        rel = np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30)
        assert rel <= 1e-4, f"{f}: relative difference {rel:.3g} > 1e-4"
        worst = max(worst, rel)
print(f"{a_dir}: {len(names)} outputs match ONNX Runtime (worst relative difference {worst:.2g})")
PY
  "$bin/qprofile" "$tmp/$m.onnx" --data "$tmp/${m}_data" -o "$tmp/$m.json" --quiet
  "$bin/qconvert" "$tmp/$m.onnx" --profile "$tmp/$m.json" -o "$tmp/$m.q.onnx" --report "$tmp/$m.report.json"
  /usr/bin/python3 - "$tmp/$m.report.json" "$tmp/$m.q.onnx" <<'PY'
import json, sys
import onnx
new_ops = {"NonMaxSuppression", "RoiAlign", "GridSample", "HannWindow", "STFT", "MelWeightMatrix", "DFT"}
report = json.load(open(sys.argv[1]))
seen = [n for n in report["nodes"] if n["op_type"] in new_ops]
assert seen, "the report lists none of the new ops"
for n in seen:
    assert not n["quantized"] and n["reason"], f"{n['op_type']} should stay float with a reason: {n}"
model = onnx.load(sys.argv[2])
ops = {n.op_type for n in model.graph.node}
assert new_ops & ops, f"the converted model lost the ops: {ops}"
print(f"{sys.argv[1]}: {len(seen)} nodes stay float: " + "; ".join(sorted({n['op_type'] + ': ' + n['reason'] for n in seen})))
PY
  "$bin/qrun" "$tmp/$m.q.onnx" --data "$tmp/${m}_data" -o "$tmp/qrun_q_$m" --quiet
done
echo "signal and detection ops match ONNX Runtime and stay float in qconvert"
