#!/usr/bin/env bash
# QTOOL_ISA caps the kernels' ISA (libquant/kernels/cpu.h), so that the AVX2
# and portable paths run on hosts that have AVX-512 (issue 22), and the VNNI
# ones on hosts that have AMX. Integer
# results are the same bits on every path; float outputs and profiles stay
# within rounding of each other; the bench line names the ISA used; a value
# that is not an ISA is refused. QTOOL_L2_KB (the cache size the blocking
# assumes) changes no output and refuses what is not a size.
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
"$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/p.json" --quiet
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/u8.onnx"
"$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/s8.onnx" --target ort-x86-vnni
# The host's ISA as CPUID reports it to processes (what qrun's dispatch reads;
# scripts/cpuid_avx2.c can hide parts of it, /proc/cpuinfo still lists them),
# AMX only where Linux lists it too (it leaves AMX out where it cannot enable
# the tile state).
"$src/tests/cpuid_flags.sh" "$tmp/cpuid_flags"
host=$("$tmp/cpuid_flags" | tr ' ' '\n' | sed -n 's/=1$//p' | tr '\n' ' ')
grep -qw amx_int8 /proc/cpuinfo || host=${host//amx_int8/}
for isa in portable avx2 avx512 vnni amx; do
  for m in u8 s8; do
    QTOOL_ISA=$isa "$bin/qrun" "$tmp/$m.onnx" --data "$samples/digits/test" --limit 40 -o "$tmp/$isa.$m" --quiet >/dev/null
  done
  QTOOL_ISA=$isa "$bin/qrun" "$model" --data "$samples/digits/test" --limit 40 -o "$tmp/$isa.f32" --quiet >/dev/null
  QTOOL_ISA=$isa "$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/$isa.profile.json" --quiet
  line=$(QTOOL_ISA=$isa "$bin/qrun" "$tmp/u8.onnx" --data "$samples/digits/test" --limit 2 --bench 1 --quiet)
  case $isa in
    portable) want=portable ;;
    avx2) want=$([[ $host == *avx2* ]] && echo avx2 || echo portable) ;;
    *) want="" ;;  # depends on the host's AVX-512 flavour
  esac
  [ -z "$want" ] || grep -q "isa $want, l2 [0-9]* KiB)" <<<"$line" || fail "QTOOL_ISA=$isa: bench line says: $line"
  # AMX (the default) where the host has it and Linux lets the process use
  # it; never under a lower cap.
  if [ "$isa" = amx ] && [[ $host == *amx_int8* && $host == *avx512* ]]; then
    grep -q "isa avx512-vnni+amx," <<<"$line" || fail "QTOOL_ISA=amx on an AMX host: bench line says: $line"
  elif grep -q "+amx," <<<"$line"; then
    fail "QTOOL_ISA=$isa: AMX taken: $line"
  fi
done
line=$("$bin/qrun" "$tmp/u8.onnx" --data "$samples/digits/test" --limit 2 --bench 1 --quiet)
line_amx=$(QTOOL_ISA=amx "$bin/qrun" "$tmp/u8.onnx" --data "$samples/digits/test" --limit 2 --bench 1 --quiet)
[ "${line##*isa }" = "${line_amx##*isa }" ] || fail "QTOOL_ISA unset is not amx: '$line' vs '$line_amx'"
$py - "$tmp" <<'PY' || fail "the ISA paths disagree"
import glob, json, os, sys
import numpy as np
d = sys.argv[1]
for m in ("u8", "s8"):
    for f in sorted(glob.glob(f"{d}/vnni.{m}/*.npy")):
        ref = np.load(f)
        for isa in ("portable", "avx2", "avx512", "amx"):
            got = np.load(f.replace("/vnni.", f"/{isa}."))
            assert np.array_equal(ref, got), f"{m} {isa} {os.path.basename(f)}: integer paths differ"
for f in sorted(glob.glob(f"{d}/vnni.f32/*.npy")):
    ref = np.load(f)
    assert np.array_equal(ref, np.load(f.replace("/vnni.", "/amx."))), f"f32 amx {os.path.basename(f)}: AMX changed float"
    for isa in ("portable", "avx2", "avx512"):
        got = np.load(f.replace("/vnni.", f"/{isa}."))
        assert np.allclose(ref, got, rtol=1e-4, atol=1e-5), f"f32 {isa} {os.path.basename(f)}"
# Float kernels sum in another order per ISA, so profiles agree to rounding;
# VNNI and AMX change only integer kernels, so avx512, vnni and amx profile
# the same bits.
tensors = lambda isa: json.load(open(f"{d}/{isa}.profile.json"))["tensors"]
ref = tensors("vnni")
assert tensors("avx512") == ref, "profiles under avx512 and vnni differ"
assert tensors("amx") == ref, "profiles under amx and vnni differ"
for isa in ("portable", "avx2"):
    got = tensors(isa)
    assert got.keys() == ref.keys(), isa
    for k, t in ref.items():
        for field in ("min", "max"):
            assert abs(got[k][field] - t[field]) <= 1e-4 * max(1.0, abs(t[field])), (isa, k, field, got[k][field], t[field])
PY
# QTOOL_L2_KB: the column blocks of a 256 KiB L2 give the same bits.
for m in u8 s8 f32; do
  src=$tmp/$m.onnx
  [ "$m" = f32 ] && src=$model
  QTOOL_L2_KB=256 "$bin/qrun" "$src" --data "$samples/digits/test" --limit 40 -o "$tmp/l2.$m" --quiet >/dev/null
  diff -r "$tmp/vnni.$m" "$tmp/l2.$m" >/dev/null || fail "QTOOL_L2_KB=256 changed the $m outputs"
done
line=$(QTOOL_L2_KB=256 "$bin/qrun" "$tmp/u8.onnx" --data "$samples/digits/test" --limit 2 --bench 1 --quiet)
grep -q ", l2 256 KiB)\$" <<<"$line" || fail "QTOOL_L2_KB=256: bench line says: $line"
expect_exit 2 "QTOOL_L2_KB=32 is not a whole number of KiB from 64 to 65536" env QTOOL_L2_KB=32 "$bin/qrun" "$model" --data "$samples/digits/test" --limit 1
expect_exit 2 "QTOOL_L2_KB=1M is not a whole number" env QTOOL_L2_KB=1M "$bin/qconvert" "$model" --profile "$tmp/p.json" -o "$tmp/x.onnx"
[ ! -e "$tmp/x.onnx" ] || fail "qconvert wrote a model under a bad QTOOL_L2_KB"
expect_exit 2 "QTOOL_ISA=sse4 is not one of portable, avx2, avx512, vnni, amx" env QTOOL_ISA=sse4 "$bin/qrun" "$model" --data "$samples/digits/test" --limit 1
expect_exit 2 "QTOOL_ISA=AVX2 is not one of" env QTOOL_ISA=AVX2 "$bin/qprofile" "$model" --data "$samples/digits/calib" -o "$tmp/x.json"
[ ! -e "$tmp/x.json" ] || fail "qprofile wrote a profile under a bad QTOOL_ISA"
echo "isa cap ok"
