#!/usr/bin/env bash
# Shards merge to the unsharded profile; --threads N equals --threads 1 byte for
# byte; merge is commutative and associative and refuses other models' profiles.
source "$(dirname "$0")/lib.sh"
calib="$samples/digits/calib"
py=/usr/bin/python3

"$bin/qprofile" "$model" --data "$calib" --limit 90 -o "$tmp/all.json" --quiet
for i in 0 1 2; do
  "$bin/qprofile" "$model" --data "$calib" --limit 90 --shard $i/3 -o "$tmp/s$i.json" --quiet
done
"$bin/qprofile" merge "$tmp/s0.json" "$tmp/s1.json" "$tmp/s2.json" -o "$tmp/m012.json"
"$bin/qprofile" merge "$tmp/s2.json" "$tmp/s0.json" -o "$tmp/m20.json"
"$bin/qprofile" merge "$tmp/s1.json" "$tmp/m20.json" -o "$tmp/m1_20.json"
validate_profile "$tmp/all.json" "$tmp/s0.json" "$tmp/m012.json" "$tmp/m1_20.json"

# Everything but the double sums (and the mean from them) must match exactly, whatever the grouping.
$py - "$tmp/all.json" "$tmp/m012.json" "$tmp/m1_20.json" <<'PY' || fail "merged shards differ from the unsharded profile"
import json, sys
whole, *merged = (json.load(open(p)) for p in sys.argv[1:])
for m in merged:
    assert m["samples"] == whole["samples"] == 90, m["samples"]
    assert m["model"] == whole["model"]
    assert m["tensors"].keys() == whole["tensors"].keys()
    for name, t in whole["tensors"].items():
        u = m["tensors"][name]
        for k in ("count", "min", "max", "nan", "inf", "histogram", "dtype"):
            assert u[k] == t[k], (name, k)
        assert abs(u["sum"] - t["sum"]) <= 1e-9 * max(1.0, abs(t["sum"])), (name, u["sum"], t["sum"])
PY

# Threads: the same bytes.
"$bin/qprofile" "$model" --data "$calib" --threads 1 -o "$tmp/t1.json" --quiet
"$bin/qprofile" "$model" --data "$calib" --threads 2 -o "$tmp/t2.json" --quiet
"$bin/qprofile" "$model" --data "$calib" --threads 3 -o "$tmp/t3.json" --quiet
cmp -s "$tmp/t1.json" "$tmp/t2.json" || fail "--threads 2 wrote a different profile than --threads 1"
cmp -s "$tmp/t1.json" "$tmp/t3.json" || fail "--threads 3 wrote a different profile than --threads 1"
validate_profile "$tmp/t2.json"
# A few samples (one or two chunks of runs): the threads the chunks leave idle go
# to the kernels of each run; still the same bytes.
for n in 5 12; do
  "$bin/qprofile" "$model" --data "$calib" --limit $n --threads 1 -o "$tmp/few1.json" --quiet
  "$bin/qprofile" "$model" --data "$calib" --limit $n --threads 3 -o "$tmp/few3.json" --quiet
  cmp -s "$tmp/few1.json" "$tmp/few3.json" || fail "--threads 3 on $n samples wrote a different profile than --threads 1"
done

# Another model's profile is refused, naming both files; nothing is written.
/usr/bin/python3 "$src/tests/e2e/make_fixtures.py" "$tmp/fx"
"$bin/qprofile" "$tmp/fx/dyn.onnx" --data "$tmp/fx/dyn_npy" -o "$tmp/other.json" --quiet
expect_exit 2 "other.json: profile of another model" "$bin/qprofile" merge "$tmp/s0.json" "$tmp/other.json" -o "$tmp/bad.json"
grep -qF "s0.json" "$tmp/stderr" || fail "the refusal does not name the first profile"
expect_exit 2 "garbage.json" "$bin/qprofile" merge "$tmp/s0.json" "$tmp/garbage.json" -o "$tmp/bad.json"
printf '{"format": "qtool-profile", "version": 1}' >"$tmp/garbage.json"
expect_exit 2 "garbage.json: model: missing" "$bin/qprofile" merge "$tmp/s0.json" "$tmp/garbage.json" -o "$tmp/bad.json"
[ ! -e "$tmp/bad.json" ] || fail "a refused merge wrote its output"

# qconvert refuses a profile of another model naming both, unless --force.
expect_exit 2 "another model" "$bin/qconvert" "$model" --profile "$tmp/other.json" -o "$tmp/q.onnx"
grep -qF "other.json" "$tmp/stderr" && grep -qF "dyn.onnx" "$tmp/stderr" || fail "qconvert's refusal names not both"
echo "merge ok"
