#!/usr/bin/env bash
# scripts/profile_sharded.sh: N shards through GNU parallel, merged, equal the
# unsharded profile (min/max/count/histograms); a failing shard fails the script.
source "$(dirname "$0")/lib.sh"
command -v parallel >/dev/null || fail "GNU parallel is missing (scripts/setup.sh installs it)"
export QPROFILE="$bin/qprofile"
"$src/scripts/profile_sharded.sh" -n 2 -o "$tmp/merged.json" "$model" --data "$samples/digits/calib" --limit 40 2>/dev/null
"$bin/qprofile" "$model" --data "$samples/digits/calib" --limit 40 -o "$tmp/all.json" --quiet
validate_profile "$tmp/merged.json"
/usr/bin/python3 - "$tmp/all.json" "$tmp/merged.json" <<'PY' || fail "sharded script's profile differs from the unsharded one"
import json, sys
a, m = (json.load(open(p)) for p in sys.argv[1:])
assert a["samples"] == m["samples"] == 40
for name, t in a["tensors"].items():
    for k in ("count", "min", "max", "histogram"):
        assert m["tensors"][name][k] == t[k], (name, k)
PY
code=0
"$src/scripts/profile_sharded.sh" -n 2 -o "$tmp/bad.json" "$model" --data "$tmp/missing" 2>"$tmp/err" || code=$?
[ "$code" -ne 0 ] || fail "the script succeeded on a missing data directory"
grep -q "error:" "$tmp/err" || fail "no error line from the failing shard: $(cat "$tmp/err")"
[ ! -e "$tmp/bad.json" ] || fail "the failing run wrote a profile"
echo "sharded script ok"
