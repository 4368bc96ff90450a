#include "cpu_isa.h"

#include <strings.h>
#include <cstdlib>

namespace flow {
namespace {

// Whether the CPU (and the OS, which must save the wide registers: libgcc checks XGETBV) has every
// instruction set the variant is compiled with: FLOW_TARGET_AVX2_STR / FLOW_TARGET_AVX512_STR.
CpuIsa detect() {
#if defined(FLOW_CPU_DISPATCH) && defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
                    __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
                    __builtin_cpu_supports("lzcnt") && __builtin_cpu_supports("movbe") &&
                    __builtin_cpu_supports("popcnt");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl");
  CpuIsa isa = avx512 ? CpuIsa::kAvx512 : avx2 ? CpuIsa::kAvx2 : CpuIsa::kBaseline;
  // a lower level on request (tests of the other variants, or a comparison): never a higher one
  if (const char* want = std::getenv("FLOW_CPU_CAPABILITY")) {
    CpuIsa cap = isa;
    if (strcasecmp(want, "default") == 0) cap = CpuIsa::kBaseline;
    if (strcasecmp(want, "avx2") == 0) cap = CpuIsa::kAvx2;
    if (strcasecmp(want, "avx512") == 0) cap = CpuIsa::kAvx512;
    if (static_cast<int>(cap) < static_cast<int>(isa)) isa = cap;
  }
  return isa;
#elif defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
  return CpuIsa::kAvx512;  // compiled for it: the library runs only where it is
#elif defined(__AVX2__) && defined(__FMA__)
  return CpuIsa::kAvx2;
#else
  return CpuIsa::kBaseline;
#endif
}

}  // namespace

CpuIsa cpu_capability() {
  static const CpuIsa isa = detect();
  return isa;
}

CpuIsa cpu_isa() {
#if defined(FLOW_CPU_DISPATCH) && !defined(FLOW_CPU_DISPATCH_AVX512)
  static const CpuIsa isa = cpu_capability() == CpuIsa::kAvx512 ? CpuIsa::kAvx2 : cpu_capability();
#else
  static const CpuIsa isa = cpu_capability();
#endif
  return isa;
}

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx512: return "AVX512";
    case CpuIsa::kAvx2: return "AVX2";
    default: return "DEFAULT";
  }
}

const char* build_isa() {
#if defined(FLOW_NATIVE_BUILD)
  return "native";
#elif defined(FLOW_CPU_DISPATCH) && defined(FLOW_CPU_DISPATCH_AVX512) && defined(__x86_64__)
  return "x86-64-v2+dispatch(avx2,avx512)";
#elif defined(FLOW_CPU_DISPATCH) && defined(__x86_64__)
  return "x86-64-v2+dispatch(avx2)";
#elif defined(__x86_64__)
  return "x86-64";
#else
  return "generic";
#endif
}

}  // namespace flow
