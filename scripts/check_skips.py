#!/usr/bin/python3
"""Fails CI when a test that must run on every host was skipped.

    check_skips.py CTEST_JUNIT.xml

Unit tests skip only through QTOOL_SKIP, whose reasons are a CPU feature the
host lacks (AVX2, AVX-512, SHA-NI): those skips are allowed. End-to-end,
interop, zoo and conformance tests skip (exit 77) when a prerequisite is
missing (the zoo, ONNX Runtime): on CI, which installs and builds them all,
such a skip means the check did not run, so it fails. Exit 1 listing them, 2
on a missing or unreadable report.
"""
import sys
import xml.etree.ElementTree as ET

MUST_RUN = ("e2e.", "interop.", "zoo.", "conformance.")


def main():
    if len(sys.argv) != 2:
        print("usage: check_skips.py CTEST_JUNIT.xml", file=sys.stderr)
        return 2
    try:
        root = ET.parse(sys.argv[1]).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"error: {sys.argv[1]}: {e}", file=sys.stderr)
        return 2
    skipped = [(case.get("name", ""), case.find("skipped")) for case in root.iter("testcase")]
    skipped = [(name, s) for name, s in skipped if s is not None]
    bad = [name for name, _ in skipped if name.startswith(MUST_RUN)]
    for name, s in skipped:
        print(f"skipped: {name} ({s.get('message', '')})")
    if bad:
        print(f"error: {len(bad)} test(s) that must run on every host were skipped: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
