#!/usr/bin/env bash
# The --html pages (issue 24) as a browser shows them: headless Chromium
# (Debian's chromium, installed by scripts/setup.sh) renders the qrun
# --per-layer, qrun --sensitivity and qprofile show pages of the digits CNN.
# Each screenshot must show the charts (the SNR bars' colour, many colours in
# all, a good share of non-white pixels), the DOM must hold the expected
# elements, and the console no error. Not skipped when chromium is missing:
# CI installs it, and a check that did not run must not pass.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
browser=$(command -v chromium || true)
[ -n "$browser" ] || fail "chromium is not installed (scripts/setup.sh installs it)"

"$bin/qprofile" "$model" --data "$samples/digits/calib" --limit 40 -o "$tmp/p.json" --quiet
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/q.onnx" >/dev/null
"$bin/qrun" "$tmp/q.onnx" --data "$samples/digits/test" --limit 30 --reference "$model" --per-layer --quiet \
  --html "$tmp/layers.html" >/dev/null
"$bin/qrun" "$tmp/q.onnx" --data "$samples/digits/test" --limit 4 --reference "$model" --sensitivity --quiet \
  --html "$tmp/sens.html" >/dev/null
"$bin/qprofile" show "$tmp/p.json" --html "$tmp/profile.html" >/dev/null

# render PAGE: screenshot to PAGE.png, DOM to PAGE.dom, console to PAGE.log.
# Chromium runs as root here, which its sandbox refuses: --no-sandbox. A
# profile directory of our own keeps runs apart from any other Chromium.
render() {
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/chromium-profile" \
    --enable-logging=stderr --v=0 --window-size=1200,2000 --screenshot="$1.png" --dump-dom "file://$1" \
    >"$1.dom" 2>"$1.log" || fail "chromium failed on $1: $(tail -5 "$1.log")"
  if grep -E 'CONSOLE|Uncaught|Refused to|net::ERR' "$1.log"; then fail "$1: console errors or blocked loads in chromium"; fi
}
for page in layers sens profile; do render "$tmp/$page.html"; done

$py - "$tmp" "$bin" <<'PY' || fail "a rendered page is blank or lacks its charts"
import subprocess, sys
import numpy as np
d, b = sys.argv[1:3]

def read_png(path):
    """The screenshot as H x W x 3 uint8, decoded by qtool's reader (png_to_npy: stb_image)."""
    subprocess.run([f"{b}/png_to_npy", path, path + ".npy"], check=True)
    return np.rint(np.load(path + ".npy")[0] * 255).astype(np.uint8)

for page, bar in (("layers", (0x3b, 0x6f, 0xb6)), ("sens", (0xe0, 0x7b, 0x1a)), ("profile", None)):
    img = read_png(f"{d}/{page}.html.png")
    assert img.shape[:2] == (2000, 1200), img.shape
    nonwhite = np.any(img < 245, axis=2).mean()
    packed = (img[:, :, 0].astype(np.uint32) << 16) | (img[:, :, 1].astype(np.uint32) << 8) | img[:, :, 2]
    _, counts = np.unique(packed, return_counts=True)
    many = int((counts > 20).sum())
    print(f"{page}: {100 * nonwhite:.1f}% non-white, {many} colours over 20 pixels")
    assert nonwhite > 0.03, (page, nonwhite)
    assert many >= 12, (page, many)
    if bar:  # the first chart's bars, drawn opaque in that colour
        assert np.all(img == np.array(bar, np.uint8), axis=2).sum() > 200, page

# The DOM as the browser built it: the charts and tables are there.
for page, svgs in (("layers", 2), ("sens", 1), ("profile", 2)):
    dom = open(f"{d}/{page}.html.dom").read()
    assert dom.count("<svg") >= svgs and "<table" in dom and "<h1>" in dom, page
PY
echo "html render ok"
