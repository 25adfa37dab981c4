#!/usr/bin/python3
"""Copies an x86-64 ELF program or library with every CPUID instruction
replaced by HLT; NOP, for the AVX2 view on hosts where CPUID cannot fault
(issue #22; scripts/cpuid_avx2.c explains the view).

    scripts/cpuid_patch.py IN OUT

HLT is privileged: in user space it raises a general-protection fault, which
Linux delivers as SIGSEGV, just as a faulting CPUID. scripts/cpuid_avx2.c,
preloaded with CPUID_PATCHED=1, takes that fault, runs the real CPUID,
clears the hidden feature bits and steps over the two bytes. Both
instructions are two bytes long (0F A2 and F4 90), so nothing else in the
file moves. Compilers never emit HLT in user code, so the pair cannot be
mistaken for the program's own.

The instructions are found by objdump's disassembly of the executable
segments (binutils), not by searching the bytes: 0F A2 also occurs inside
other instructions and in data. Every address found is checked to hold 0F A2
in the file before it is patched. Prints how many were patched; a file with
none is still copied (the view then shows that program the host as it is).
Bad input (not an x86-64 ELF file, unreadable, objdump missing) gets one
`error:` line and exit code 2, and OUT is not written.
"""
import os
import re
import struct
import subprocess
import sys
import tempfile

CPUID = b"\x0f\xa2"
HLT_NOP = b"\xf4\x90"


def fail(message):
    print(f"error: cpuid_patch: {message}", file=sys.stderr)
    sys.exit(2)


def executable_segments(data, path):
    """(vaddr, offset, size) of each PT_LOAD segment with PF_X, from the ELF64 program headers."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        fail(f"{path}: not an ELF file")
    if data[4] != 2 or data[5] != 1:
        fail(f"{path}: not a 64-bit little-endian ELF file")
    (machine,) = struct.unpack_from("<H", data, 18)
    if machine != 62:  # EM_X86_64
        fail(f"{path}: not an x86-64 ELF file (e_machine {machine})")
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    if phentsize < 56 or phoff + phnum * phentsize > len(data):
        fail(f"{path}: program headers out of the file")
    segments = []
    for i in range(phnum):
        p_type, p_flags, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and p_flags & 1:  # PT_LOAD, PF_X
            segments.append((p_vaddr, p_offset, p_filesz))
    return segments


def cpuid_addresses(path):
    """Virtual addresses of the CPUID instructions objdump decodes in PATH."""
    try:
        run = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-w", path], capture_output=True, text=True)
    except FileNotFoundError:
        fail("objdump not found (Debian's binutils)")
    if run.returncode != 0:
        fail(f"{path}: objdump failed: {run.stderr.strip().splitlines()[-1] if run.stderr.strip() else run.returncode}")
    line = re.compile(r"^\s*([0-9a-f]+):\s+cpuid\s*$")
    return [int(m.group(1), 16) for m in map(line.match, run.stdout.splitlines()) if m]


def main(argv):
    if len(argv) != 3:
        fail("usage: cpuid_patch.py IN OUT")
    src, dst = argv[1], argv[2]
    try:
        with open(src, "rb") as f:
            data = bytearray(f.read())
    except OSError as e:
        fail(f"{src}: {e.strerror}")
    segments = executable_segments(data, src)
    patched = 0
    for address in cpuid_addresses(src):
        offset = next((address - v + o for v, o, n in segments if v <= address < v + n), None)
        if offset is None or data[offset:offset + 2] != CPUID:
            fail(f"{src}: objdump's cpuid at {address:#x} is not 0F A2 in an executable segment")
        data[offset:offset + 2] = HLT_NOP
        patched += 1
    # Written next to OUT and renamed: never a half-written file.
    directory = os.path.dirname(os.path.abspath(dst))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".cpuid_patch.")
    except OSError as e:
        fail(f"{dst}: {e.strerror}")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, os.stat(src).st_mode & 0o7777)
        os.replace(tmp, dst)
    except OSError as e:
        os.unlink(tmp)
        fail(f"{dst}: {e.strerror}")
    print(f"{dst}: {patched} CPUID instructions patched")


if __name__ == "__main__":
    main(sys.argv)
