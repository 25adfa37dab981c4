#!/usr/bin/env python3
"""Runs the shell examples of Markdown files, so that the docs cannot rot.

    doc_examples.py --bin BUILD_DIR --src REPO_DIR FILE.md...

A fenced block whose info string is `sh test` is an example: the blocks of one
file run in order, each with `bash -e -o pipefail`, in one fresh directory per
file where `build`, `samples` and `scripts` are symbolic links to the build
directory and to the repository's folders, so that examples read exactly as a
user types them from a checkout. `sh test exit=N` expects exit code N (a gate
that fails on purpose). A block tagged `text output` that follows a test block
(blank lines between allowed) must equal what it printed on stdout and stderr;
a line `...` in it matches any number of lines. Other blocks are not run.

Exit code 0 when every example passes, 1 when one fails, 2 on bad usage.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^(```+)\s*(.*)$")


class Block:
    """One fenced block: `line` is where its opening fence is (1-based), `end`
    the index of its closing fence (0-based)."""

    def __init__(self, path, line, end, info, text):
        self.path, self.line, self.end, self.info, self.text = path, line, end, info, text


def read_blocks(path):
    """Fenced blocks of a Markdown file, with the line their fence opens on."""
    blocks = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(1), m.group(2).strip(), i + 1
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise ValueError(f"{path}:{start}: fenced block never closed")
        blocks.append(Block(path, start, i, info, "\n".join(body) + "\n"))
        i += 1
    return blocks, lines


def adjacent(lines, a, b):
    """Whether only blank lines separate block a from the block b after it."""
    return all(not lines[k].strip() for k in range(a.end + 1, b.line - 1))


def expected_exit(info):
    """None when the block is not an example, else the exit code it expects."""
    words = info.split()
    if words[:2] != ["sh", "test"]:
        return None
    code = 0
    for w in words[2:]:
        if not w.startswith("exit="):
            raise ValueError(f"unknown option '{w}' in '{info}' (expected exit=N)")
        code = int(w[len("exit="):])
    return code


def output_matches(expected, actual):
    exp = expected.rstrip("\n").split("\n")
    act = actual.rstrip("\n").split("\n")

    def match(i, j):
        if i == len(exp):
            return j == len(act)
        if exp[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(act) + 1))
        return j < len(act) and exp[i].rstrip() == act[j].rstrip() and match(i + 1, j + 1)

    return match(0, 0)


def run_file(path, bin_dir, src_dir, keep):
    blocks, lines = read_blocks(path)
    work = tempfile.mkdtemp(prefix="qtool_doc_")
    for name, target in (("build", bin_dir), ("samples", os.path.join(src_dir, "samples")),
                         ("scripts", os.path.join(src_dir, "scripts"))):
        os.symlink(target, os.path.join(work, name))
    env = dict(os.environ, QTOOL_BIN=bin_dir, LC_ALL="C")
    ran = failed = 0
    try:
        for n, block in enumerate(blocks):
            code = expected_exit(block.info)
            if code is None:
                continue
            ran += 1
            where = f"{os.path.relpath(path, src_dir)}:{block.line}"
            proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.text], cwd=work, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            problem = None
            if proc.returncode != code:
                problem = f"exit code {proc.returncode}, expected {code}"
            elif n + 1 < len(blocks) and blocks[n + 1].info == "text output" and adjacent(lines, block, blocks[n + 1]):
                if not output_matches(blocks[n + 1].text, proc.stdout):
                    problem = "output differs from the `text output` block that follows it"
            if problem:
                failed += 1
                print(f"FAIL {where}: {problem}\n--- example\n{block.text}--- printed\n{proc.stdout}---")
            else:
                print(f"ok   {where}")
    finally:
        if keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return ran, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="build directory holding qprofile, qconvert, qrun")
    ap.add_argument("--src", required=True, help="repository root")
    ap.add_argument("--keep", action="store_true", help="keep the work directories")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    bin_dir, src_dir = os.path.abspath(args.bin), os.path.abspath(args.src)
    total = failures = 0
    for path in args.files:
        try:
            ran, failed = run_file(os.path.abspath(path), bin_dir, src_dir, args.keep)
        except (OSError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        total += ran
        failures += failed
    print(f"{total - failures} of {total} doc examples pass")
    if total == 0:
        print("error: no `sh test` block found", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
