#!/usr/bin/env bash
# The shell examples of README.md and docs/*.md (fenced blocks tagged `sh test`)
# run against the built tools on samples/, and shown output (`text output`
# blocks) must be what they print: a doc example that breaks fails here.
# Convention: tests/e2e/doc_examples.py, docs/development.md.
source "$(dirname "$0")/lib.sh"
/usr/bin/python3 "$src/tests/e2e/doc_examples.py" --bin "$bin" --src "$src" "$src/README.md" "$src"/docs/*.md
