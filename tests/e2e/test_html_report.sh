#!/usr/bin/env bash
# --html (issue 24): qrun --per-layer, qrun --sensitivity and qprofile show
# write one self-contained page. On the digits CNN with every node and tensor
# renamed to hold < > & and quotes: each page parses as XML (so every SVG is
# well-formed and every name was escaped), names read back exactly, nothing
# outside the page is referenced, and the charts and tables hold what --json
# reports. A bad path is refused before the run (exit 2) and leaves no file.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py - "$model" "$tmp/m.onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1])
keep = {v.name for v in list(m.graph.input) + list(m.graph.output)} | {i.name for i in m.graph.initializer}
new = lambda s: s if s in keep else s + ' <a&"b\'>'
for n in m.graph.node:
    n.name = new(n.name)
    n.input[:] = [new(s) for s in n.input]
    n.output[:] = [new(s) for s in n.output]
for v in m.graph.value_info:
    v.name = new(v.name)
onnx.save(m, sys.argv[2])
PY
"$bin/qprofile" "$tmp/m.onnx" --data "$samples/digits/calib" --limit 40 -o "$tmp/p.json" --quiet
"$bin/qconvert" "$tmp/m.onnx" --profile "$tmp/p.json" -o "$tmp/q.onnx" >/dev/null
"$bin/qrun" "$tmp/q.onnx" --data "$samples/digits/test" --limit 30 --reference "$tmp/m.onnx" --per-layer --json --quiet \
  --html "$tmp/layers.html" >"$tmp/layers.json"
"$bin/qrun" "$tmp/q.onnx" --data "$samples/digits/test" --limit 6 --reference "$tmp/m.onnx" --sensitivity --json --quiet \
  --html "$tmp/sens.html" >"$tmp/sens.json"
"$bin/qprofile" show "$tmp/p.json" --html "$tmp/profile.html" --json >"$tmp/show.json"

$py - "$tmp" <<'PY' || fail "the --html pages are wrong"
import json, math, re, sys
import xml.etree.ElementTree as ET
d = sys.argv[1]
SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = ' <a&"b\'>'

def page(name):
    text = open(f"{d}/{name}", encoding="utf-8").read()
    # Self-contained: no script, no file or URL it would fetch.
    assert "<script" not in text and "src=" not in text and "href=" not in text and "url(" not in text, name
    assert re.findall(r"https?://[^\"]*", text) == ["http://www.w3.org/2000/svg"] * text.count("<svg "), name
    root = ET.fromstring(text.split("\n", 1)[1])  # past <!DOCTYPE html>: the rest is well-formed XML
    return root, "".join(root.itertext())

def cells(table):
    return [["".join(td.itertext()) for td in tr] for tr in table.iter("tr")][1:]

def close(cell, want, rel=0.01):
    """A table cell ("12.5", "3%", "inf") against a --json number (or "inf"/"nan")."""
    a, b = float(cell.rstrip("%")), float(want)
    return a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= rel * max(1, abs(b))

# qrun --per-layer
layers = json.load(open(f"{d}/layers.json"))["layers"]
root, text = page("layers.html")
svgs = list(root.iter(SVG + "svg"))
assert len(svgs) == 1 + min(6, len(layers)), len(svgs)
chart = svgs[0]
bars = [r for r in chart.iter(SVG + "rect") if r.find(SVG + "title") is not None]
order = sorted(layers, key=lambda l: l["order"])
assert len(bars) == sum(1 for l in layers if math.isfinite(float(l["snr_db"]))), (len(bars), len(layers))
# The x labels read the tensor names, escaped and back, in execution order.
labels = [t.find(SVG + "title").text for t in chart.iter(SVG + "text") if t.find(SVG + "title") is not None]
assert labels == [l["tensor"] for l in order], labels
assert any(HOSTILE in l["tensor"] for l in layers)
table = cells(next(root.iter("table")))
assert [r[2] for r in table] == [l["tensor"] for l in order]
for r, l in zip(table, order):
    assert close(r[4], l["snr_db"]), (r, l)
    if l["dequantized"]:
        assert close(r[7], 100 * l["clipped"], 1e-3), (r, l)
    else:
        assert r[7] == "-" and r[8] == "float", r
# The worst layers' histograms: float and quantized outlines, the quantized range dashed.
for svg, l in zip(svgs[1:], layers):
    assert svg.find(SVG + "title").text.startswith(l["tensor"]), (svg.find(SVG + "title").text, l["tensor"])
    assert len(list(svg.iter(SVG + "polygon"))) == 2
    if l["dequantized"]:
        assert len([x for x in svg.iter(SVG + "line") if x.get("stroke-dasharray")]) >= 1
assert "clipped:" in text and "float values outside the quantized range" in text

# qrun --sensitivity
sens = json.load(open(f"{d}/sens.json"))
root, text = page("sens.html")
svgs = list(root.iter(SVG + "svg"))
assert len(svgs) == 1
legend = "".join(svgs[0].itertext())
for s in ("only this layer quantized [full-run]", "only this layer float [full-run]", "layer alone [layer-alone]"):
    assert s in legend, s
rows = cells(next(root.iter("table")))
assert [r[1] for r in rows] == [l["node"] for l in sens["layers"]], rows
assert any(HOSTILE in r[1] for r in rows)
head = ["".join(th.itertext()) for th in next(root.iter("table")).iter("th")]
assert "only quantized: SNR (dB) [full-run]" in head and "layer alone: SNR (dB) [layer-alone]" in head, head
for r, l in zip(rows, sens["layers"]):
    assert close(r[4], l["only_quantized"]["snr_db"]) and close(r[6], l["only_float"]["snr_db"]), (r, l)
    assert close(r[9], l["alone"]["snr_db"]), (r, l)

# qprofile show
show = json.load(open(f"{d}/show.json"))["tensors"]
root, text = page("profile.html")
rows = cells(next(root.iter("table")))
assert [r[0] for r in rows] == [t["name"] for t in show], rows
assert any(HOSTILE in t["name"] for t in show)
for r, t in zip(rows, show):
    assert close(r[4], t["min"], 1e-5) and close(r[5], t["max"], 1e-5), (r, t)
    assert close(r[11], 100 * t["chosen"]["clipped"], 1e-3), (r, t)
svgs = list(root.iter(SVG + "svg"))
assert len(svgs) == len(show)
for svg, t in zip(svgs, show):
    assert svg.find(SVG + "title").text.startswith(t["name"])
    # Four methods, min and max each: solid minmax, dashed others (lines coinciding are all drawn).
    assert len([x for x in svg.iter(SVG + "line") if x.get("stroke-width") == "2"]) == 8
PY

# Bad paths: refused before anything runs, one error line naming the file, no page and no temp file.
expect_refused "$tmp/no/r.html" "$tmp/no/r.html" \
  "$bin/qrun" "$tmp/q.onnx" --data "$samples/digits/test" --limit 2 --reference "$tmp/m.onnx" --per-layer --html "$tmp/no/r.html"
expect_refused "$tmp/no/s.html" "$tmp/no/s.html" \
  "$bin/qrun" "$tmp/q.onnx" --data "$samples/digits/test" --limit 2 --reference "$tmp/m.onnx" --sensitivity --html "$tmp/no/s.html"
expect_refused "$tmp/no/p.html" "$tmp/no/p.html" "$bin/qprofile" show "$tmp/p.json" --html "$tmp/no/p.html"
mkdir "$tmp/dir.html"
expect_exit 2 "$tmp/dir.html: is a directory" "$bin/qprofile" show "$tmp/p.json" --html "$tmp/dir.html"
expect_refused "--html writes the report of --per-layer or --sensitivity" "$tmp/plain.html" \
  "$bin/qrun" "$tmp/q.onnx" --data "$samples/digits/test" --limit 2 --reference "$tmp/m.onnx" --html "$tmp/plain.html"
echo "html report ok"
