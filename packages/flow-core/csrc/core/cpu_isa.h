// Which SIMD level the CPU kernels run at, and the means to compile them for more than one.
//
// A portable build (the default; CMake defines FLOW_CPU_DISPATCH) compiles the library for the x86-64-v2
// baseline and, in addition, every parallel_for body (elementwise, reductions, normalisation, optimizer
// steps: parallel.h) for AVX2+FMA, and for AVX-512 too with FLOW_CPU_DISPATCH_AVX512 (CMake option
// FLOW_DISPATCH_AVX512; each variant costs about one more compile of those files: see CMakeLists.txt). The
// hand-written AVX2 kernels (the packed GEMMs, Winograd) are compiled for AVX2+FMA only, between
// FLOW_AVX2_BEGIN/END. The variant is chosen once, at the first call, from what the CPU supports
// (__builtin_cpu_supports), so one wheel runs on any x86-64-v2 machine and still uses the wide units where
// they exist. A native build (FLOW_NATIVE=ON) compiles everything for the build machine instead
// (-march=native) and dispatches nothing.
//
// Only the variant's own code may use the wider instructions: functions and templates defined between
// FLOW_AVX2_BEGIN and FLOW_AVX2_END get that target, so every header shared with baseline code must be
// included before FLOW_AVX2_BEGIN (a shared inline function first defined inside would be emitted for
// AVX2 and might be the copy the linker keeps).
#pragma once

namespace flow {

enum class CpuIsa : int { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };

// The strongest level the CPU (and OS) supports, lowered (never raised) by the environment variable
// FLOW_CPU_CAPABILITY=default|avx2|avx512 (PyTorch's ATEN_CPU_CAPABILITY), read once. Libraries that
// dispatch on their own (oneDNN) run at this level.
CpuIsa cpu_capability();
// The level our kernels run at: cpu_capability(), capped at the strongest variant this build has.
CpuIsa cpu_isa();
// PyTorch's names for it: "DEFAULT", "AVX2", "AVX512".
const char* cpu_isa_name(CpuIsa isa);
// How this library was compiled: "x86-64-v2+dispatch(avx2)" (or "...(avx2,avx512)") for the portable
// build, "native" for -march=native (runs only on CPUs with the build machine's instruction sets).
const char* build_isa();

}  // namespace flow

#if defined(FLOW_CPU_DISPATCH) && defined(__x86_64__) && defined(__GNUC__)
#define FLOW_TARGET_AVX2_STR "avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,popcnt"
#define FLOW_TARGET_AVX512_STR FLOW_TARGET_AVX2_STR ",avx512f,avx512cd,avx512bw,avx512dq,avx512vl"
#define FLOW_TARGET_AVX2 __attribute__((target(FLOW_TARGET_AVX2_STR)))
#define FLOW_TARGET_AVX512 __attribute__((target(FLOW_TARGET_AVX512_STR)))
// Everything defined between these two is compiled for AVX2 + FMA (and runs only where cpu_isa() says so).
#define FLOW_AVX2_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,popcnt\")")
#define FLOW_AVX2_END _Pragma("GCC pop_options")
// Whether the hand-written AVX2 + FMA kernels are in this build (they still need cpu_isa() >= kAvx2).
#define FLOW_KERNELS_AVX2 1

namespace flow::isa_detail {
// f with every call it makes inlined (flatten), compiled for the variant's instructions: the loops the
// compiler vectorises get that width, FMA contraction and the extra registers.
#if defined(FLOW_CPU_DISPATCH_AVX512)
template <typename F>
FLOW_TARGET_AVX512 __attribute__((flatten, noinline)) void run_avx512(F& f) {
  f();
}
#endif
template <typename F>
FLOW_TARGET_AVX2 __attribute__((flatten, noinline)) void run_avx2(F& f) {
  f();
}
}  // namespace flow::isa_detail

namespace flow {
// f(), as the variant for cpu_isa().
template <typename F>
inline void with_cpu_isa(F&& f) {
  switch (cpu_isa()) {
#if defined(FLOW_CPU_DISPATCH_AVX512)
    case CpuIsa::kAvx512: isa_detail::run_avx512(f); return;
#endif
    case CpuIsa::kAvx2: isa_detail::run_avx2(f); return;
    default: f();
  }
}
}  // namespace flow

#else  // native or non-x86 build: one variant, compiled for the target the compiler was given

#define FLOW_AVX2_BEGIN
#define FLOW_AVX2_END
#if defined(__AVX2__) && defined(__FMA__)
#define FLOW_KERNELS_AVX2 1
#else
#define FLOW_KERNELS_AVX2 0
#endif

namespace flow {
template <typename F>
inline void with_cpu_isa(F&& f) {
  f();
}
}  // namespace flow

#endif
