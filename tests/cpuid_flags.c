/* The CPUID feature bits the tests decide by, as this process sees them
 * (scripts/cpuid_avx2.c may hide some; /proc/cpuinfo would still list them):
 * one "name=0|1" per flag on one line. Leaf 7: EBX bit 5 AVX2, bit 16
 * AVX512F; ECX bit 11 AVX512_VNNI; EDX bit 24 AMX_TILE, bit 25 AMX_INT8;
 * subleaf 1 EAX bit 4 AVX_VNNI. Built by the tests with `cc`. */
#include <cpuid.h>
#include <stdio.h>

int main(void) {
  unsigned a = 0, b = 0, c = 0, d = 0, a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  if (__get_cpuid_max(0, 0) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    __cpuid_count(7, 1, a1, b1, c1, d1);
  }
  printf("avx2=%u avx512f=%u avx512_vnni=%u avx_vnni=%u amx_tile=%u amx_int8=%u\n", (b >> 5) & 1, (b >> 16) & 1,
         (c >> 11) & 1, (a1 >> 4) & 1, (d >> 24) & 1, (d >> 25) & 1);
  return 0;
}
