// An AVX2-only view of an x86 host, for benchmarks and tests (issue #22):
// preloaded into a process, this library hides AVX-512, AVX-VNNI, AVX10 and
// AMX from the CPUID instruction, so that the process (qrun, ONNX Runtime's
// MLAS, PyTorch, glibc's later checks) picks the kernels it would pick on a
// CPU with AVX2 and FMA only.
//
//   cc -O2 -shared -fPIC -o cpuid_avx2.so scripts/cpuid_avx2.c -ldl
//   LD_PRELOAD=$PWD/cpuid_avx2.so node scripts/ort_bench.js ...
//
// CPUID_VIEW=avx512 in the environment hides AMX alone (AMX-TILE, -INT8,
// -BF16, -FP16): the view of an AVX-512 VNNI CPU without AMX (Ice Lake,
// Cascade Lake, Zen 4), whose int8 kernels are VPDPBUSD's. ONNX Runtime's
// MLAS takes AMX tiles for its u8 x s8 GEMMs where CPUID lists them (4th
// generation Xeon and later), and so do qrun's int8 convolutions: on such a
// host this view compares the two on the same VNNI instructions. Any other value
// of CPUID_VIEW stops the process (exit 2, one `error:` line).
//
// How: Linux can make CPUID fault in user space (arch_prctl ARCH_SET_CPUID,
// on CPUs with "cpuid_fault" in /proc/cpuinfo; the setting is per thread and
// threads inherit it). The fault arrives as SIGSEGV; the handler runs the real
// CPUID with faulting briefly off, clears the feature bits below and steps
// over the instruction. A SIGSEGV handler the program installs itself (Node's
// WebAssembly trap handler) is kept aside and called for every other fault.
// Where CPUID cannot fault, the process stops at once with exit code 2 and
// an `error:` line: a benchmark must not run on the wide kernels unawares.
//
// Where CPUID cannot fault (AMD hosts, most VMs), the programs themselves are
// patched instead: scripts/cpuid_patch.py copies a program or library with
// each CPUID replaced by HLT; NOP, which faults the same way in user space.
// CPUID_PATCHED=1 in the environment tells this library to take those faults
// and not to ask for CPUID faulting: only the patched files see the view
// (ONNX Runtime's library, qtool's programs); every other program in the
// process tree sees the host as it is.
//
// Not hidden: XGETBV (XCR0 still enables the AVX-512 state; every library
// checks CPUID's feature bits as well), and CPUID already run before this
// library's constructor (the dynamic loader's own, which picks glibc's
// string functions).
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

typedef int (*SigactionFn)(int, const struct sigaction*, struct sigaction*);
static SigactionFn real_sigaction_fn;
static struct sigaction program_action;  // the SIGSEGV action the program asked for (SIG_DFL at first)

// libc's sigaction, which the one below stands in front of.
static int real_sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (!real_sigaction_fn) real_sigaction_fn = (SigactionFn)dlsym(RTLD_NEXT, "sigaction");
  if (!real_sigaction_fn) {
    errno = ENOSYS;
    return -1;
  }
  return real_sigaction_fn(sig, act, old);
}

static uint32_t bit(int i) { return (uint32_t)1 << i; }

// What hide() clears: everything past AVX2 (the default), or AMX alone.
static int amx_only;
// CPUID faults (arch_prctl); otherwise only the patched HLT; NOP pairs do.
static int faulting;

// Feature bits from the Intel SDM, vol. 2A, CPUID leaf 07H (and AMD's APM,
// which uses the same ones for the features it has).
static void hide(uint32_t leaf, uint32_t subleaf, uint32_t r[4]) {
  if (amx_only) {
    // Leaf 7.0 EDX: AMX-BF16 22, AMX-TILE 24, AMX-INT8 25; leaf 7.1 EAX: AMX-FP16 21.
    if (leaf == 7 && subleaf == 0) r[3] &= ~(bit(22) | bit(24) | bit(25));
    if (leaf == 7 && subleaf == 1) r[0] &= ~bit(21);
    return;
  }
  if (leaf == 7 && subleaf == 0) {
    // EBX: AVX512F 16, DQ 17, IFMA 21, PF 26, ER 27, CD 28, BW 30, VL 31.
    r[1] &= ~(bit(16) | bit(17) | bit(21) | bit(26) | bit(27) | bit(28) | bit(30) | bit(31));
    // ECX: AVX512_VBMI 1, VBMI2 6, VNNI 11, BITALG 12, VPOPCNTDQ 14.
    r[2] &= ~(bit(1) | bit(6) | bit(11) | bit(12) | bit(14));
    // EDX: AVX512_4VNNIW 2, 4FMAPS 3, VP2INTERSECT 8, AMX-BF16 22, AVX512_FP16 23, AMX-TILE 24, AMX-INT8 25.
    r[3] &= ~(bit(2) | bit(3) | bit(8) | bit(22) | bit(23) | bit(24) | bit(25));
  } else if (leaf == 7 && subleaf == 1) {
    // EAX: AVX-VNNI 4, AVX512_BF16 5, AMX-FP16 21, AVX-IFMA 23; EDX: AVX-VNNI-INT8 4, AVX10 19.
    r[0] &= ~(bit(4) | bit(5) | bit(21) | bit(23));
    r[3] &= ~(bit(4) | bit(19));
  }
}

static void on_segv(int sig, siginfo_t* info, void* context) {
  greg_t* reg = ((ucontext_t*)context)->uc_mcontext.gregs;
  const uint8_t* ip = (const uint8_t*)reg[REG_RIP];
  // A faulting CPUID, like a patched one (HLT; NOP from cpuid_patch.py), is a
  // general-protection fault (SI_KERNEL); only then is the instruction
  // pointer's code read (it is the code that just ran).
  if (info->si_code == SI_KERNEL &&
      ((faulting && ip[0] == 0x0f && ip[1] == 0xa2) || (ip[0] == 0xf4 && ip[1] == 0x90))) {
    const uint32_t leaf = (uint32_t)reg[REG_RAX], subleaf = (uint32_t)reg[REG_RCX];
    uint32_t r[4];
    if (faulting) syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(subleaf));
    if (faulting) syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0);
    hide(leaf, subleaf, r);
    reg[REG_RAX] = r[0];
    reg[REG_RBX] = r[1];
    reg[REG_RCX] = r[2];
    reg[REG_RDX] = r[3];
    reg[REG_RIP] += 2;
    return;
  }
  if (program_action.sa_flags & SA_SIGINFO) {
    program_action.sa_sigaction(sig, info, context);
  } else if (program_action.sa_handler != SIG_DFL && program_action.sa_handler != SIG_IGN) {
    program_action.sa_handler(sig);
  } else if (program_action.sa_handler == SIG_IGN && info->si_code <= 0) {
    // Ignored, as the kernel ignores a sent SIGSEGV (a fault it never lets be ignored: below).
  } else {
    // The default action, as without this library: a fault happens again
    // when the instruction runs again on return; a signal sent by kill() is
    // sent again, and arrives when the handler returns.
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    real_sigaction(SIGSEGV, &dfl, NULL);
    if (info->si_code <= 0) raise(sig);
  }
}

// The program's own SIGSEGV handler is recorded, not installed: on_segv stays first.
int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (sig != SIGSEGV) return real_sigaction(sig, act, old);
  if (old) *old = program_action;
  if (act) program_action = *act;
  return 0;
}

sighandler_t signal(int sig, sighandler_t handler) {
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART;
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

__attribute__((constructor)) static void start(void) {
  const char* view = getenv("CPUID_VIEW");
  if (view && *view && strcmp(view, "avx2") != 0) {
    if (strcmp(view, "avx512") != 0) {
      fprintf(stderr, "error: cpuid_avx2: CPUID_VIEW must be avx2 or avx512, not '%s'\n", view);
      _exit(2);
    }
    amx_only = 1;
  }
  const char* patched = getenv("CPUID_PATCHED");
  if (patched && *patched && strcmp(patched, "1") != 0) {
    fprintf(stderr, "error: cpuid_avx2: CPUID_PATCHED must be 1 or unset, not '%s'\n", patched);
    _exit(2);
  }
  struct sigaction act;
  memset(&act, 0, sizeof act);
  act.sa_sigaction = on_segv;
  act.sa_flags = SA_SIGINFO;
  if (real_sigaction(SIGSEGV, &act, NULL) != 0) {
    fprintf(stderr, "error: cpuid_avx2: cannot install the SIGSEGV handler: %s\n", strerror(errno));
    _exit(2);
  }
  if (patched && *patched) return;  // only the patched files' CPUIDs fault
  if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) {
    fprintf(stderr, "error: cpuid_avx2: CPUID cannot be made to fault here (arch_prctl ARCH_SET_CPUID: %s), "
            "so %s cannot be hidden (CPUID_PATCHED=1 with files from scripts/cpuid_patch.py can)\n",
            strerror(errno), amx_only ? "AMX" : "AVX-512");
    _exit(2);
  }
  faulting = 1;
}
