#!/usr/bin/env bash
# Every relative link of README.md and docs/*.md ([text](path) or
# [text](path#anchor)) names a file of the repository, and an anchor names a
# heading of that file, so that moving or renaming a page breaks a test rather
# than the docs.
source "$(dirname "$0")/lib.sh"
/usr/bin/python3 - "$src" "$src/README.md" "$src"/docs/*.md <<'PY'
import os, re, sys
root, files = sys.argv[1], sys.argv[2:]
link = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")

def anchors(path):
    # GitHub's heading ids: lower case, punctuation dropped, spaces to dashes.
    with open(path, encoding="utf-8") as f:
        heads = [l.lstrip("#").strip() for l in f if l.startswith("#")]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in heads}

bad = []
for md in files:
    text = open(md, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # links only outside code blocks
    for target in link.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # http:, mailto:
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
        where = os.path.relpath(md, root)
        if not full.startswith(root + os.sep) or not os.path.exists(full):
            bad.append(f"{where}: link to {target}: no such file in the repository")
        elif anchor and full.endswith(".md") and anchor not in anchors(full):
            bad.append(f"{where}: link to {target}: no heading with that anchor")
for b in bad:
    print("FAIL:", b)
print(f"{len(files)} files checked, {len(bad)} broken links")
sys.exit(1 if bad else 0)
PY
