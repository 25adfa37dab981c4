#!/usr/bin/env bash
# qconvert --equalize and --bias-correction (issue 25): per-tensor weights of a
# model whose layers have channel ranges 100:1 apart gain SNR, the report and
# the metadata say what was done, and every bad combination is one error line
# with exit 2.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py "$src/tests/e2e/equalize_model.py" "$tmp"
m="$tmp/eq.onnx"
d="$tmp/data"
"$bin/qprofile" "$m" --data "$d" -o "$tmp/p.json" --quiet
convert() { "$bin/qconvert" "$m" --profile "$tmp/p.json" --per-tensor "$@"; }
snr() {
  "$bin/qrun" "$1" --reference "$m" --data "$d" --json --quiet | $py -c "import json,sys; print(json.load(sys.stdin)['snr_db'])"
}

# Flags that do not fit together: one error line, exit 2, no model written.
expect_refused "--equalize needs --data" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --equalize
expect_refused "--bias-correction needs --data" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --bias-correction
expect_refused "--bias-correction needs --data" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --bias-correction --equalize
expect_refused "--equalize-relu6 goes with --equalize" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --equalize-relu6 --data "$d"
expect_refused "not --dynamic" "$tmp/x.onnx" "$bin/qconvert" "$m" --dynamic -o "$tmp/x.onnx" --equalize --data "$d"
expect_refused "go with an accuracy target" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --data "$d"
expect_refused "--labels goes with an accuracy target" "$tmp/x.onnx" \
  convert -o "$tmp/x.onnx" --equalize --data "$d" --labels "$samples/digits/test_labels.npy"
expect_refused "$tmp/nowhere" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --equalize --data "$tmp/nowhere"

convert -o "$tmp/plain.onnx"
convert -o "$tmp/eq.q.onnx" --equalize --data "$d" --report "$tmp/eq.json"
convert -o "$tmp/eq6.q.onnx" --equalize --equalize-relu6 --data "$d" --report "$tmp/eq6.json"
convert -o "$tmp/bc.q.onnx" --bias-correction --data "$d" --report "$tmp/bc.json"
convert -o "$tmp/both.q.onnx" --equalize --equalize-relu6 --bias-correction --data "$d" --limit 16 --report "$tmp/both.json"

# The report: the pairs equalized (conv1 -> Relu -> conv2 always; through the
# ReLU6 only with --equalize-relu6), the biases corrected, the options.
$py - "$tmp" <<'PY' || fail "the reports do not record the passes"
import json, sys
t = sys.argv[1]
eq = json.load(open(f"{t}/eq.json"))
notes = "\n".join(eq["notes"])
assert "equalize: 2 pairs" in notes and "'conv1' -> Relu -> 'conv2'" in notes and "'dw' -> 'conv3'" in notes, notes
assert "skipped 'conv2' -> Clip -> 'dw'" in notes, notes
assert eq["options"]["equalize"] and not eq["options"]["bias_correction"], eq["options"]
eq6 = "\n".join(json.load(open(f"{t}/eq6.json"))["notes"])
assert "equalize: 3 pairs" in eq6 and "Clip 'relu6' replaced by Relu" in eq6, eq6
bc = json.load(open(f"{t}/bc.json"))
corrected = [n for n in bc["notes"] if n.startswith("bias correction:") and "(W_q - W) E[x]" in n]
assert len(corrected) == 4, bc["notes"]
assert bc["options"]["bias_correction"], bc["options"]
PY
$py - "$tmp/both.q.onnx" <<'PY' || fail "metadata_props do not record the passes"
import sys, onnx
meta = {p.key: p.value for p in onnx.load(sys.argv[1]).metadata_props}
assert meta.get("qtool.equalize") == "relu6-to-relu" and meta.get("qtool.bias_correction") == "empirical", meta
PY

# Per-tensor weights: equalization gains (conv1's 100:1 channels), and so
# does bias correction (in dB, over the same data).
plain=$(snr "$tmp/plain.onnx")
eq=$(snr "$tmp/eq.q.onnx")
bc=$(snr "$tmp/bc.q.onnx")
both=$(snr "$tmp/both.q.onnx")
echo "per-tensor SNR: plain $plain, --equalize $eq, --bias-correction $bc, both (+relu6) $both"
$py -c "import sys; p, e, b = map(float, sys.argv[1:4]); sys.exit(0 if e > p + 6 and b > p + 0.2 else 1)" "$plain" "$eq" "$bc" ||
  fail "SNR did not improve: plain $plain, --equalize $eq, --bias-correction $bc"
