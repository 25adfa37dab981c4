#!/usr/bin/env bash
# Whoever clones qtool alone has every file its documents, scripts and tests
# name: no file of the repository refers to a path outside it (the design
# document is docs/DESIGN.md, fixtures live under tests/). Checks the
# repository's files for the sibling and machine paths that have crept in.
source "$(dirname "$0")/lib.sh"
cd "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z >"$tmp/files"
else
  find . -path ./.git -prune -o -path './build*' -prune -o -path ./.cache -prune -o -type f -print0 >"$tmp/files"
fi
if xargs -0 grep -n -I -E '\.\./shared|/wor[k]/' <"$tmp/files" >"$tmp/hits"; then
  fail "files refer to paths outside the repository:
$(cat "$tmp/hits")"
fi
echo "$(tr -cd '\0' <"$tmp/files" | wc -c) files, none refers to a path outside the repository"
