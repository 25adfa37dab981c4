# Sourced after ort_env.sh by the tests that show processes an AVX2-only CPU
# (issue #22; scripts/cpuid_avx2.c explains the view). Two ways:
#   fault    CPUID faults in every process of the view (arch_prctl, hosts
#            with cpuid_fault in /proc/cpuinfo);
#   patched  any x86-64 host: only copies whose CPUIDs scripts/cpuid_patch.py
#            replaced fault (CPUID_PATCHED=1): ONNX Runtime's library (found
#            before the installed one through LD_LIBRARY_PATH) and whatever
#            view_patch copies.
# view_modes prints the ways this host can show; in_view MODE CMD... runs CMD
# in that view (CPUID_VIEW as set, avx2 by default); view_patch FILE OUT
# copies FILE with its CPUIDs patched.
shim="$tmp/cpuid_avx2.so"
[ -f "$shim" ] || cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$shim" "$src/scripts/cpuid_avx2.c" -ldl
view_patch() { /usr/bin/python3 "$src/scripts/cpuid_patch.py" "$1" "$2" >/dev/null; }
view_modes() {
  if grep -qw cpuid_fault /proc/cpuinfo; then echo fault patched; else echo patched; fi
}
in_view() {
  local mode=$1
  shift
  case $mode in
    fault) LD_PRELOAD="$shim" CPUID_VIEW="${CPUID_VIEW:-avx2}" "$@" ;;
    patched)
      [ -f "$tmp/ort-view/libonnxruntime.so.1" ] || "$src/scripts/ort_lib_patched.sh" "$tmp/ort-view"
      LD_PRELOAD="$shim" CPUID_VIEW="${CPUID_VIEW:-avx2}" CPUID_PATCHED=1 \
        LD_LIBRARY_PATH="$tmp/ort-view${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@" ;;
    *) echo "in_view: no view '$mode'" >&2; return 2 ;;
  esac
}
