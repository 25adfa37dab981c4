#!/usr/bin/env bash
# Profiles a dataset in N shards with GNU parallel, then merges the shard
# profiles into one (qprofile --shard I/N takes the I-th of N interleaved parts;
# `qprofile merge` gives exactly the min, max, count and histograms of one run).
#
#   scripts/profile_sharded.sh -n 8 -o profile.json MODEL.onnx --data DIR [qprofile flags...]
#
# Extra GNU parallel options go in PARALLEL_OPTS, e.g. to spread the shards over
# machines that see the same paths (shared filesystem) and have qprofile installed:
#   PARALLEL_OPTS="--sshlogin 4/node1,4/node2 --workdir ." scripts/profile_sharded.sh -n 8 ...
# QPROFILE names the qprofile binary (default: build/qprofile of this checkout).
# A Slurm array-job version of the same is scripts/profile_sharded.slurm.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
qprofile=${QPROFILE:-$repo/build/qprofile}
shards=4
output=""
usage() { echo "usage: $0 -n SHARDS -o OUT.json MODEL.onnx --data DIR [qprofile flags...]" >&2; exit 2; }
while getopts "n:o:h" opt; do
  case $opt in
    n) shards=$OPTARG ;;
    o) output=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] && [ -n "$output" ] || usage
[[ "$shards" =~ ^[1-9][0-9]*$ ]] || { echo "error: -n '$shards': expected a positive number of shards" >&2; exit 2; }
command -v parallel >/dev/null || {
  echo "error: GNU parallel is not installed (Debian: sudo apt-get install parallel)" >&2
  exit 2
}
[ -x "$qprofile" ] || { echo "error: $qprofile: no qprofile binary (build first: scripts/setup.sh)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/qprofile_shards.XXXXXX")
trap 'rm -rf "$work"' EXIT
# {} is the shard index 0..N-1; --halt stops every shard once one fails, and
# the failing shard's own `error:` line is what the user sees.
# shellcheck disable=SC2086
seq 0 $((shards - 1)) | parallel --will-cite --halt now,fail=1 ${PARALLEL_OPTS:-} \
  "$qprofile" "$@" --quiet --shard "{}/$shards" -o "$work/shard_{}.json"
parts=()
for ((i = 0; i < shards; ++i)); do parts+=("$work/shard_$i.json"); done
"$qprofile" merge "${parts[@]}" -o "$output"
echo "profile_sharded: $shards shards merged into $output" >&2
