#!/usr/bin/env bash
# Hostile and broken images in --data directories: qprofile and qrun exit 2 with
# one `error:` line naming the file and what is wrong, and write nothing. Sizes
# are checked from the header before decoding; a file cut short is refused, not
# padded with zeros (stb_image does that for BMP, JPEG and PPM).
source "$(dirname "$0")/lib.sh"
hostile relu_shaped "$tmp/m.onnx" 1,3,8,8

# both PATTERN DIR [qprofile flags]: qprofile and qrun refuse the images in DIR.
both() {
  local pattern=$1 dir=$2
  shift 2
  expect_refused "$pattern" "$tmp/out.json" "$bin/qprofile" "$tmp/m.onnx" --data "$dir" -o "$tmp/out.json" "$@"
  expect_refused "$pattern" "$tmp/outdir" "$bin/qrun" "$tmp/m.onnx" --data "$dir" -o "$tmp/outdir"
}
# check KIND FILE PATTERN: DIR holds one hostile image FILE.
check() {
  rm -rf "$tmp/data" && mkdir -p "$tmp/data"
  hostile "$1" "$tmp/data/$2"
  both "$tmp/data/$2: $3" "$tmp/data"
}

# The good image is read by both tools: the refusals below are about the file.
mkdir -p "$tmp/good" && hostile image_ok "$tmp/good/a.png"
"$bin/qprofile" "$tmp/m.onnx" --data "$tmp/good" -o "$tmp/good.json" --quiet
"$bin/qrun" "$tmp/m.onnx" --data "$tmp/good" -o "$tmp/good_out" --quiet >/dev/null
[ -f "$tmp/good_out/a.out0.npy" ] || fail "qrun did not run a good image"

check image_corrupt a.png "cannot decode image"
check image_truncated_png a.png "cannot decode image"
check image_truncated_jpg a.jpg "cannot decode image (JPEG data is truncated"
check image_truncated_bmp a.bmp "cannot decode image (BMP pixel data is truncated"
check image_truncated_ppm a.ppm "cannot decode image (PNM pixel data is truncated (191 of 192 bytes))"
check image_overflow_ppm a.ppm "cannot decode image (PNM header has a number with more than 9 digits)"
check image_empty_ppm a.ppm "image is 0x8 pixels, which holds no pixels"
check image_absurd_ppm a.ppm "image is 100000x100000 pixels: shape [1,3,100000,100000] float32 needs more than"
# A PNG named .jpg is still a PNG; a GIF named .png is not decoded at all.
rm -rf "$tmp/data" && mkdir -p "$tmp/data"
printf 'GIF89a\x01\x00\x01\x00\x00\x00\x00;' >"$tmp/data/a.png"
both "$tmp/data/a.png: cannot decode image" "$tmp/data"

# Wrong size for the model: --image-size against a fixed 8x8 input.
expect_refused "input 'x' has shape [1,3,4,4], the model expects [1,3,8,8]" "$tmp/out.json" \
  "$bin/qprofile" "$tmp/m.onnx" --data "$tmp/good" --image-size 4x4 -o "$tmp/out.json"
# A model declaring images too large to resize to keeps the image's own size
# (instead of wrapping the size to a negative int) and the shape check names both.
hostile relu_shaped "$tmp/huge.onnx" 1,3,3000000000,3000000000
expect_refused "input 'x' has shape [1,3,8,8], the model expects [1,3,3000000000,3000000000]" "$tmp/out.json" \
  "$bin/qprofile" "$tmp/huge.onnx" --data "$tmp/good" -o "$tmp/out.json"
expect_refused "input 'x' has shape [1,3,8,8], the model expects [1,3,3000000000,3000000000]" "$tmp/outdir" \
  "$bin/qrun" "$tmp/huge.onnx" --data "$tmp/good" -o "$tmp/outdir"
# Images of different sizes cannot share a --batch.
hostile relu_shaped "$tmp/dyn.onnx" N,3,h,w
mkdir -p "$tmp/mixed" && hostile image_ok "$tmp/mixed/a.png" 8x8 && hostile image_ok "$tmp/mixed/b.png" 6x8
expect_refused "which cannot be stacked along dim 0 with sample 'a'" "$tmp/out.json" \
  "$bin/qprofile" "$tmp/dyn.onnx" --data "$tmp/mixed" --batch 2 -o "$tmp/out.json"
echo "robust images ok"
