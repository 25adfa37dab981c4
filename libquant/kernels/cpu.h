// The CPU features the kernels may use: the host's, capped by the
// environment variable QTOOL_ISA so that any ISA path can be run and measured
// on a host that has a wider one (DESIGN "Kernels"):
//   QTOOL_ISA=portable  no SIMD path (plain C++)
//   QTOOL_ISA=avx2      AVX2 + FMA (+ BMI2): as an AVX2-only x86 host (AMD Zen 1-3, Intel before Skylake-X)
//   QTOOL_ISA=avx512    AVX-512 F/BW/VL/VBMI as well, no VNNI of either kind (Skylake-X)
//   QTOOL_ISA=vnni      AVX-512 VNNI / AVX-VNNI as well, no AMX (Ice Lake, Cascade Lake, Zen 4)
//   QTOOL_ISA=amx       everything the host has, AMX-INT8 tiles included (the default when unset)
// The cap only removes features: asking for more than the host has gives
// the host's. It is read once, at the first question; every kernel's
// dispatch asks here instead of __builtin_cpu_supports. QTOOL_L2_KB (below)
// does the same for the cache size the blocking is worked out for.
#pragma once

#include <cstdint>
#include <string>

namespace quant::kernels {

enum class IsaCap { Portable, Avx2, Avx512, Vnni, Amx };

// Whether the kernels may use `feature`: one of the names
// __builtin_cpu_supports takes ("avx2", "fma", "bmi2", "avx512f",
// "avx512bw", "avx512vl", "avx512vbmi", "avx512vnni"), "avxvnni" (read
// from CPUID, which GCC 12's builtin does not know) or "amx" (AMX-TILE and
// AMX-INT8 with the OS's leave to use them, and AVX-512 BW / VL: the AMX
// kernels' needs, cpu.cpp). Unknown names: false.
bool cpu_supports(const char* feature);

// Whether the float kernels' path of one level may run here, under the cap
// and on this CPU: Portable always, Avx2 with AVX2 + FMA, Avx512 with
// AVX-512F; Vnni and Amx have no float path of their own (false). For
// kernels that keep one function per level and tests that compare them.
bool float_path_runs(IsaCap level);

// The cap in force, and its name ("portable", "avx2", "avx512", "vnni", "amx").
IsaCap isa_cap();
const char* isa_cap_name(IsaCap cap);
// The widest level the kernels use on this host under the cap: what a
// benchmark reports as the ISA it ran ("portable", "avx2", "avx512",
// "avx512-vnni", "avx512-vnni+amx" or "avx-vnni").
std::string effective_isa();

// The per-core L2 cache in bytes, which sizes the GEMMs' column blocks
// (gemm_packed.h, qconv_fast.cpp): the OS's figure (sysconf, from CPUID),
// kDefaultL2Bytes where it gives none, or QTOOL_L2_KB (KiB, 64 to 65536) set,
// so that the blocking of a smaller-cache CPU (256 KiB on Intel client cores
// before Ice Lake, 512 KiB on AMD Zen 1-3) can be run and tested on any
// host. Read once.
inline constexpr int64_t kDefaultL2Bytes = int64_t{256} << 10;
int64_t l2_cache_bytes();

// "isa <effective_isa()>, l2 <l2_cache_bytes() in KiB> KiB": what the bench
// lines of qrun and qprofile print of the kernels they ran (scripts/bench.sh
// parses it).
std::string kernel_setup();

// An error message when QTOOL_ISA is set to something else than the five
// names above, or QTOOL_L2_KB to something else than a whole number of KiB in
// its range (the apps turn it into exit code 2), else empty.
std::string kernel_env_error();

}  // namespace quant::kernels
