#!/usr/bin/env bash
# qprofile records the values computed inside If/Loop/Scan bodies, named
# "<node>/<attribute>/<value>" (profiles/README.md): on a Silero-style model
# (tests/e2e/subgraph_models.py) each If branch's tensors over the samples that
# took it, on a Loop every iteration in the body's histograms; `qprofile merge`
# of two shards gives the same bytes as one run, and `qprofile show` explains a
# body's tensor by its scoped name.
source "$(dirname "$0")/lib.sh"

py=/usr/bin/python3
models="$src/tests/e2e/subgraph_models.py"
$py "$models" make "$tmp/m"

"$bin/qprofile" "$tmp/m/silero.onnx" --data "$tmp/m/in" -o "$tmp/full.json" --quiet
$py "$models" check_profile "$tmp/full.json" || fail "If branches' tensors"

for i in 0 1; do
  "$bin/qprofile" "$tmp/m/silero.onnx" --data "$tmp/m/in" --shard "$i/2" -o "$tmp/shard_$i.json" --quiet
done
"$bin/qprofile" merge "$tmp/shard_0.json" "$tmp/shard_1.json" -o "$tmp/merged.json"
cmp -s "$tmp/full.json" "$tmp/merged.json" || fail "merged shards differ from the full profile"

"$bin/qprofile" show "$tmp/full.json" --tensor branches/else_branch/else_c2 >"$tmp/show.txt"
grep -q "^branches/else_branch/else_c2 .*float32 \[1,48,64\]" "$tmp/show.txt" || fail "show: $(cat "$tmp/show.txt")"
grep -q "then_branch" "$tmp/show.txt" && fail "show --tensor printed another tensor: $(cat "$tmp/show.txt")"

"$bin/qprofile" "$tmp/m/loop.onnx" --data "$tmp/m/loop_in" -o "$tmp/loop.json" --quiet
$py "$models" check_loop_profile "$tmp/loop.json" "$tmp/m/loop_in" || fail "Loop body"
echo "subgraph profile ok"
