#!/usr/bin/env bash
# cmake --install into a temporary prefix: the three tools run from there
# (--version names the tool, --help ends with examples) and each man page
# reads with man -l, with the generated and the hand-written sections
# (docs/man/*.h2m) and without a formatter warning.
source "$(dirname "$0")/lib.sh"
prefix="$tmp/prefix"
cmake --install "$bin" --prefix "$prefix" >"$tmp/install.log" || fail "cmake --install failed: $(cat "$tmp/install.log")"
for t in qprofile qconvert qrun; do
  [ -x "$prefix/bin/$t" ] || fail "$prefix/bin/$t not installed"
  "$prefix/bin/$t" --version >"$tmp/version" || fail "$t --version failed"
  grep -qE "^$t [0-9]+\.[0-9]+\.[0-9]+$" "$tmp/version" || fail "$t --version printed '$(cat "$tmp/version")'"
  "$prefix/bin/$t" --help >"$tmp/help" || fail "$t --help failed"
  [ "$(sed -n '/^Examples:$/,$p' "$tmp/help" | grep -c "^    \$ $t ")" -ge 2 ] || fail "$t --help does not end with examples"
  page="$prefix/share/man/man1/$t.1"
  [ -f "$page" ] || fail "$page not installed (was help2man missing when the build was configured? scripts/setup.sh installs it)"
  MANPAGER=cat MANWIDTH=100 man -l "$page" >"$tmp/$t.txt" 2>"$tmp/$t.err" || fail "man -l $page failed: $(cat "$tmp/$t.err")"
  [ ! -s "$tmp/$t.err" ] || fail "man -l $page warned: $(cat "$tmp/$t.err")"
  for section in NAME SYNOPSIS DESCRIPTION OPTIONS EXAMPLES "EXIT STATUS" "SEE ALSO"; do
    grep -q "^$section\$" "$tmp/$t.txt" || fail "$t.1 has no $section section"
  done
  grep -q "^ *\$ $t " "$tmp/$t.txt" || fail "$t.1: no example from --help in EXAMPLES"
done
echo "installed and read: $(ls "$prefix/bin" | tr '\n' ' ')"
