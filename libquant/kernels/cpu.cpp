#include "libquant/kernels/cpu.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace quant::kernels {
namespace {

bool parse_cap(const char* s, IsaCap& cap) {
  if (!s || !*s || std::strcmp(s, "amx") == 0) cap = IsaCap::Amx;
  else if (std::strcmp(s, "vnni") == 0) cap = IsaCap::Vnni;
  else if (std::strcmp(s, "avx512") == 0) cap = IsaCap::Avx512;
  else if (std::strcmp(s, "avx2") == 0) cap = IsaCap::Avx2;
  else if (std::strcmp(s, "portable") == 0) cap = IsaCap::Portable;
  else return false;
  return true;
}

bool host_avxvnni() {
#if defined(__x86_64__)
  // CPUID leaf 7 subleaf 1, EAX bit 4 (AVX-VNNI); the OS's AVX state is
  // checked through avx2.
  if (!__builtin_cpu_supports("avx2")) return false;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(1));
  return (eax & (1u << 4)) != 0;
#else
  return false;
#endif
}

// AMX-TILE and AMX-INT8 (CPUID leaf 7 subleaf 0, EDX bits 24 and 25), the
// OS saving the tile state (XCR0 bits 17 and 18), and Linux's permission to
// use it: a process asks once for the tile data state (arch_prctl
// ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 18; Linux 5.16 on), without
// which the first tile instruction of any thread faults. Asked here, once,
// before any kernel may take the AMX path. AVX-512 (BW, VL) comes with every
// AMX CPU so far; the AMX kernels' output stage uses it, so it is required too.
bool host_amx() {
#if defined(__x86_64__) && defined(__linux__)
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl"))
    return false;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(0));
  if ((edx & (3u << 24)) != (3u << 24)) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & (3u << 17)) != (3u << 17)) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

bool host_supports(const char* f) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (std::strcmp(f, "avx2") == 0) return __builtin_cpu_supports("avx2");
  if (std::strcmp(f, "fma") == 0) return __builtin_cpu_supports("fma");
  if (std::strcmp(f, "bmi2") == 0) return __builtin_cpu_supports("bmi2");
  if (std::strcmp(f, "avx512f") == 0) return __builtin_cpu_supports("avx512f");
  if (std::strcmp(f, "avx512bw") == 0) return __builtin_cpu_supports("avx512bw");
  if (std::strcmp(f, "avx512vl") == 0) return __builtin_cpu_supports("avx512vl");
  if (std::strcmp(f, "avx512vbmi") == 0) return __builtin_cpu_supports("avx512vbmi");
  if (std::strcmp(f, "avx512vnni") == 0) return __builtin_cpu_supports("avx512vnni");
  if (std::strcmp(f, "avxvnni") == 0) return host_avxvnni();
  if (std::strcmp(f, "amx") == 0) {
    static const bool amx = host_amx();
    return amx;
  }
#else
  (void)f;
#endif
  return false;
}

// The lowest cap a feature needs to stay enabled.
IsaCap level_of(const char* f) {
  if (std::strcmp(f, "amx") == 0) return IsaCap::Amx;
  if (std::strcmp(f, "avx512vnni") == 0 || std::strcmp(f, "avxvnni") == 0) return IsaCap::Vnni;
  if (std::strncmp(f, "avx512", 6) == 0) return IsaCap::Avx512;
  return IsaCap::Avx2;
}

// QTOOL_L2_KB's value in bytes: a whole number of KiB in [64, 65536].
bool parse_l2_kb(const char* s, int64_t& bytes) {
  if (!s || !*s) return false;
  char* end = nullptr;
  errno = 0;
  const long long kb = std::strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0' || kb < 64 || kb > 65536) return false;
  bytes = static_cast<int64_t>(kb) << 10;
  return true;
}

}  // namespace

int64_t l2_cache_bytes() {
  static const int64_t bytes = [] {
    // A value that does not parse counts as unset, as QTOOL_ISA's does
    // (reported by kernel_env_error()).
    if (int64_t b = 0; parse_l2_kb(std::getenv("QTOOL_L2_KB"), b)) return b;
#if defined(_SC_LEVEL2_CACHE_SIZE)
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l2 > 0) return static_cast<int64_t>(l2);
#endif
    return kDefaultL2Bytes;
  }();
  return bytes;
}

IsaCap isa_cap() {
  static const IsaCap cap = [] {
    IsaCap c = IsaCap::Amx;
    if (!parse_cap(std::getenv("QTOOL_ISA"), c)) c = IsaCap::Amx;  // reported by kernel_env_error()
    return c;
  }();
  return cap;
}

bool cpu_supports(const char* feature) {
  return static_cast<int>(isa_cap()) >= static_cast<int>(level_of(feature)) && host_supports(feature);
}

bool float_path_runs(IsaCap level) {
  switch (level) {
    case IsaCap::Portable: return true;
    case IsaCap::Avx2: return cpu_supports("avx2") && cpu_supports("fma");
    case IsaCap::Avx512: return cpu_supports("avx512f");
    case IsaCap::Vnni:
    case IsaCap::Amx: return false;
  }
  return false;
}

const char* isa_cap_name(IsaCap cap) {
  switch (cap) {
    case IsaCap::Portable: return "portable";
    case IsaCap::Avx2: return "avx2";
    case IsaCap::Avx512: return "avx512";
    case IsaCap::Vnni: return "vnni";
    case IsaCap::Amx: return "amx";
  }
  return "?";
}

std::string effective_isa() {
  if (cpu_supports("amx") && cpu_supports("avx512vnni")) return "avx512-vnni+amx";
  if (cpu_supports("avx512vnni")) return "avx512-vnni";
  if (cpu_supports("avx512f") && cpu_supports("avx512bw")) return cpu_supports("avxvnni") ? "avx512+avx-vnni" : "avx512";
  if (cpu_supports("avxvnni")) return "avx-vnni";
  if (cpu_supports("avx2") && cpu_supports("fma")) return "avx2";
  return "portable";
}

std::string kernel_setup() {
  return "isa " + effective_isa() + ", l2 " + std::to_string(l2_cache_bytes() >> 10) + " KiB";
}

std::string kernel_env_error() {
  const char* s = std::getenv("QTOOL_ISA");
  IsaCap cap;
  if (!parse_cap(s, cap)) return std::string("QTOOL_ISA=") + s + " is not one of portable, avx2, avx512, vnni, amx";
  const char* l2 = std::getenv("QTOOL_L2_KB");
  int64_t bytes = 0;
  if (l2 && *l2 && !parse_l2_kb(l2, bytes))
    return std::string("QTOOL_L2_KB=") + l2 + " is not a whole number of KiB from 64 to 65536";
  return "";
}

}  // namespace quant::kernels
