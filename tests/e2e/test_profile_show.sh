#!/usr/bin/env bash
# qprofile show: the table (hardest tensors first), --json, --tensor's ASCII
# histogram with the clip range marked, --plot's PNGs and index.html.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
"$bin/qprofile" "$model" --data "$samples/digits/calib" --limit 50 -o "$tmp/p.json" --quiet
validate_profile "$tmp/p.json"

"$bin/qprofile" show "$tmp/p.json" >"$tmp/table.txt"
for m in minmax percentile kl mse; do grep -q "^  $m " "$tmp/table.txt" || fail "table lacks method $m"; done
[ "$(grep -c '<- chosen' "$tmp/table.txt")" -eq "$($py -c "import json; print(len(json.load(open('$tmp/p.json'))['tensors']))")" ] ||
  fail "not one chosen range per tensor"

"$bin/qprofile" show "$tmp/p.json" --json --calibration percentile >"$tmp/show.json"
$py - "$tmp/show.json" "$tmp/p.json" <<'PY' || fail "show --json is wrong"
import json, math, sys
show, prof = (json.load(open(p)) for p in sys.argv[1:])
ts = show["tensors"]
assert [t["name"] for t in ts] and {t["name"] for t in ts} == set(prof["tensors"])
assert show["calibration"] == "percentile"
# Hardest first: the chosen method's SQNR never decreases down the list (null = no noise = last).
keys = [math.inf if t["chosen"]["sqnr_db"] is None else t["chosen"]["sqnr_db"] for t in ts]
assert keys == sorted(keys), keys
for t in ts:
    p = prof["tensors"][t["name"]]
    assert t["min"] == p["min"] and t["max"] == p["max"] and t["count"] == p["count"]
    mm = t["methods"]["minmax"]
    assert mm["clipped"] == 0 and abs(mm["min"] - p["min"]) <= 1e-6 * max(1, abs(p["min"]))
    for m in ("percentile", "kl", "mse"):
        r = t["methods"][m]
        assert p["min"] - 1e-6 <= r["min"] <= r["max"] <= p["max"] + 1e-6, (t["name"], m, r)
        assert 0 <= r["clipped"] <= 1
    assert t["chosen"] == t["methods"]["percentile"]
PY

# --tensor: the ASCII histogram marks the clip points of the chosen method.
hardest=$($py -c "import json; print(json.load(open('$tmp/show.json'))['tensors'][0]['name'])")
"$bin/qprofile" show "$tmp/p.json" --tensor "$hardest" --calibration percentile:99 >"$tmp/one.txt"
grep -q "clip max" "$tmp/one.txt" || fail "--tensor: no clip max marked: $(cat "$tmp/one.txt")"
[ "$(grep -c '^  \[' "$tmp/one.txt")" -eq 40 ] || fail "--tensor: expected 40 histogram rows"
grep -q '|#' "$tmp/one.txt" || fail "--tensor: no kept bars"
expect_exit 2 "no tensor named 'nope'" "$bin/qprofile" show "$tmp/p.json" --tensor nope
expect_exit 2 "unknown calibration method 'magic'" "$bin/qprofile" show "$tmp/p.json" --calibration magic
printf '{"format": "qtool-profile", "version": 1, "model": 3}' >"$tmp/bad.json"
expect_exit 2 "bad.json: model: expected an object" "$bin/qprofile" show "$tmp/bad.json"

# --plot: one PNG per tensor plus index.html referencing each.
"$bin/qprofile" show "$tmp/p.json" --plot "$tmp/plots" >/dev/null
n=$($py -c "import json; print(len(json.load(open('$tmp/p.json'))['tensors']))")
[ "$(ls "$tmp/plots"/*.png | wc -l)" -eq "$n" ] || fail "--plot: expected $n PNGs, got $(ls "$tmp/plots")"
for f in "$tmp/plots"/*.png; do
  [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$f is not a PNG"
  grep -qF "$(basename "$f")" "$tmp/plots/index.html" || fail "index.html does not show $(basename "$f")"
done
echo "show ok"
