#!/usr/bin/env bash
# Large-model path (DESIGN "Large models") on a small decoder whose weights are
# all in external data: qconvert streams every quantized weight to OUT.data
# (--external-data always, a tiny threshold, so the streaming paths run), the
# outputs load and run in qrun close to the float model, --external-data never
# writes one file, and a failed conversion leaves neither file behind.
source "$(dirname "$0")/lib.sh"
mkdir -p "$tmp/in" "$tmp/out"
/usr/bin/python3 "$src/scripts/make_decoder.py" "$tmp/in/dec.onnx" --layers 2 --hidden 64 --vocab 96 --tokens 8 \
  --inputs "$tmp/ids" >/dev/null
[ -f "$tmp/in/dec.onnx.data" ] || fail "the generator wrote no external data"

# only_external MODEL: every initializer of at least 16 bytes is in MODEL.data.
only_external() {
  /usr/bin/python3 - "$1" <<'PY' || fail "$1: initializers not in external data"
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
inline = [t.name for t in m.graph.initializer
          if t.data_location != onnx.TensorProto.EXTERNAL and len(t.raw_data) >= 16]
assert not inline, inline
assert any(t.data_location == onnx.TensorProto.EXTERNAL for t in m.graph.initializer)
onnx.checker.check_model(sys.argv[1])  # by path: the checker reads the data file too
PY
}

for w in int8 int4; do
  out="$tmp/out/dec_$w.onnx"
  "$bin/qconvert" "$tmp/in/dec.onnx" --dynamic --weights $w -o "$out" --external-data always \
    --external-data-threshold 16 --report "$tmp/out/$w.json"
  [ -f "$out.data" ] || fail "$w: no $out.data"
  only_external "$out"
  "$bin/qrun" "$out" --data "$tmp/ids" --reference "$tmp/in/dec.onnx" --min-snr 15 -o "$tmp/out/run_$w" --quiet ||
    fail "$w: qrun of the external-data output misses 15 dB against the float model"
done

# Static QDQ path: the profile comes from the mapped float weights.
"$bin/qprofile" "$tmp/in/dec.onnx" --data "$tmp/ids" -o "$tmp/p.json" --quiet
"$bin/qconvert" "$tmp/in/dec.onnx" --profile "$tmp/p.json" -o "$tmp/out/qdq.onnx" --external-data always \
  --external-data-threshold 16
only_external "$tmp/out/qdq.onnx"
"$bin/qrun" "$tmp/out/qdq.onnx" --data "$tmp/ids" --reference "$tmp/in/dec.onnx" --min-snr 15 -o "$tmp/out/run_qdq" \
  --quiet || fail "qdq: the external-data output misses 15 dB"

# never: one self-contained file; auto on a small model: one file too.
"$bin/qconvert" "$tmp/in/dec.onnx" --dynamic -o "$tmp/out/one.onnx" --external-data never
"$bin/qconvert" "$tmp/in/dec.onnx" --dynamic -o "$tmp/out/auto.onnx"
"$bin/qrun" "$tmp/out/dec_int8.onnx" --data "$tmp/ids" -o "$tmp/out/r_ext" --quiet
for f in one auto; do
  [ ! -e "$tmp/out/$f.onnx.data" ] || fail "$f: wrote a data file"
  "$bin/qrun" "$tmp/out/$f.onnx" --data "$tmp/ids" -o "$tmp/out/r_$f" --quiet
  diff -r "$tmp/out/r_$f" "$tmp/out/r_ext" >/dev/null || fail "$f: outputs differ from the external-data int8 model's"
done

# A conversion that fails after the data file was opened leaves nothing.
expect_refused "group size 48" "$tmp/out/bad.onnx" "$bin/qconvert" "$tmp/in/dec.onnx" --dynamic --weights int4 \
  --group-size 48 -o "$tmp/out/bad.onnx" --external-data always
expect_no_output "$tmp/out/bad.onnx.data"
expect_refused "--external-data" "$tmp/out/bad.onnx" "$bin/qconvert" "$tmp/in/dec.onnx" --dynamic \
  -o "$tmp/out/bad.onnx" --external-data sometimes
echo "external data ok"
