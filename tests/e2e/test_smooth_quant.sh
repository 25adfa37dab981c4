#!/usr/bin/env bash
# qconvert --smooth-quant[=ALPHA|auto] (issue 25): on a transformer-like model
# with activation outlier channels, static int8 gains SNR with SmoothQuant
# (folded into a LayerNorm and into an affine Mul/Add; a Mul inserted where
# nothing folds); the report and the
# metadata say what was done; a version 1 profile and bad flags are one error
# line with exit 2.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py "$src/tests/e2e/smooth_model.py" "$tmp"
m="$tmp/sq.onnx"
d="$tmp/data"
"$bin/qprofile" "$m" --data "$d" -o "$tmp/p.json" --quiet
validate_profile "$tmp/p.json"
convert() { "$bin/qconvert" "$m" --profile "$tmp/p.json" "$@"; }
snr() {
  "$bin/qrun" "$1" --reference "$m" --data "$d" --json --quiet | $py -c "import json,sys; print(json.load(sys.stdin)['snr_db'])"
}

# The profile records the channel absmax of the MatMul inputs (and only those).
$py - "$tmp/p.json" <<'PY' || fail "the profile lacks the per-channel absmax of the MatMul inputs"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["version"] == 2, p["version"]
with_channels = sorted(n for n, t in p["tensors"].items() if "channel_absmax" in t)
assert with_channels == ["a", "ln", "r"], with_channels
ln = p["tensors"]["ln"]["channel_absmax"]
assert len(ln) == 32 and ln[3] > 20 * max(ln[j] for j in range(32) if j not in (3, 17)), ln
PY

# qprofile merge of two shards gives the whole run's channel absmax (element-wise max).
"$bin/qprofile" "$m" --data "$d" --shard 0/2 -o "$tmp/s1.json" --quiet
"$bin/qprofile" "$m" --data "$d" --shard 1/2 -o "$tmp/s2.json" --quiet
"$bin/qprofile" merge "$tmp/s1.json" "$tmp/s2.json" -o "$tmp/merged.json"
$py - "$tmp/p.json" "$tmp/s1.json" "$tmp/merged.json" <<'PY' || fail "merged shards lost or changed the channel absmax"
import json, sys
whole, s1, merged = (json.load(open(f))["tensors"] for f in sys.argv[1:])
for name in ("a", "ln", "r"):
    assert merged[name]["channel_absmax"] == whole[name]["channel_absmax"], name
assert s1["ln"]["channel_absmax"] != whole["ln"]["channel_absmax"]  # each shard alone sees less
PY

expect_refused "--smooth-quant needs --data" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --smooth-quant
expect_refused "alpha is a number in [0, 1], or auto" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --smooth-quant=1.5 --data "$d"
expect_refused "alpha is a number in [0, 1], or auto" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --smooth-quant=half --data "$d"
expect_refused "not --dynamic" "$tmp/x.onnx" "$bin/qconvert" "$m" --dynamic -o "$tmp/x.onnx" --smooth-quant --data "$d"
expect_refused "keeps activations float" "$tmp/x.onnx" convert -o "$tmp/x.onnx" --weights int4 --smooth-quant --data "$d"
# A version 1 profile (as an older qprofile wrote it) still converts, but has no channel absmax.
$py - "$tmp/p.json" "$tmp/p1.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["version"] = 1
for t in p["tensors"].values():
    t.pop("channel_absmax", None)
json.dump(p, open(sys.argv[2], "w"))
PY
"$bin/qconvert" "$m" --profile "$tmp/p1.json" -o "$tmp/v1.onnx" || fail "a version 1 profile no longer converts"
for a in --smooth-quant --smooth-quant=auto; do
  expect_refused "needs a profile made by this qprofile" "$tmp/x.onnx" \
    "$bin/qconvert" "$m" --profile "$tmp/p1.json" -o "$tmp/x.onnx" $a --data "$d"
done

convert -o "$tmp/plain.onnx"
convert -o "$tmp/sq.q.onnx" --smooth-quant --data "$d" --report "$tmp/sq.json"
convert -o "$tmp/auto.q.onnx" --smooth-quant=auto --data "$d" --report "$tmp/auto.json"
$py - "$tmp" <<'PY' || fail "the reports do not record the smoothing"
import json, sys
t = sys.argv[1]
sq = json.load(open(f"{t}/sq.json"))
notes = "\n".join(sq["notes"])
assert "smooth-quant: 3 activations smoothed" in notes, notes
assert "'ln' -> 'q', 'k' alpha 0.50" in notes and "folded into LayerNormalization 'ln'" in notes, notes
assert "'a' -> 'v' alpha 0.50" in notes and "folded into Add 'shift'" in notes, notes
assert "'r' -> 'o' alpha 0.50" in notes and "Mul 'r_smooth' inserted (float)" in notes, notes
assert sq["options"]["smooth_quant"] == "0.5", sq["options"]
auto = "\n".join(json.load(open(f"{t}/auto.json"))["notes"])
assert auto.count("smooth-quant auto: ") == 3, auto
PY
$py - "$tmp/auto.q.onnx" <<'PY' || fail "the smoothed model does not keep its Mul float or lacks metadata"
import sys, onnx
m = onnx.load(sys.argv[1])
meta = {p.key: p.value for p in m.metadata_props}
assert meta.get("qtool.smooth_quant") == "auto", meta
mul = [n for n in m.graph.node if n.name == "r_smooth"]
assert len(mul) == 1 and mul[0].op_type == "Mul", [n.name for n in m.graph.node]
# It stays float: its output is quantized for the MatMul, it is no QLinear node.
readers = [n.op_type for n in m.graph.node if mul[0].output[0] in n.input]
assert readers == ["QuantizeLinear"], readers
PY

# The sums after the MatMuls (uint8 Adds) cap the output near 31 dB; the
# MatMul outputs themselves gain about 6 dB (qrun --per-layer).
plain=$(snr "$tmp/plain.onnx")
sq=$(snr "$tmp/sq.q.onnx")
auto=$(snr "$tmp/auto.q.onnx")
echo "static int8 SNR: plain $plain, --smooth-quant $sq, --smooth-quant=auto $auto"
$py -c "import sys; p, s, a = map(float, sys.argv[1:4]); sys.exit(0 if s > p + 3 and a >= s - 0.5 else 1)" "$plain" "$sq" "$auto" ||
  fail "SNR did not improve: plain $plain, --smooth-quant $sq, auto $auto"
