// Internal to the Winograd kernels (winograd.cpp: forward and backward-data; winograd_weight_grad.cpp:
// backward-weight): the geometry as run, the register block's sizes and the scratch helpers. AVX2 + FMA
// builds only: they define FLOW_WINOGRAD, which the kernels' files test.
#pragma once
#include "../../core/cpu_isa.h"
#if FLOW_KERNELS_AVX2
#define FLOW_WINOGRAD 1
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "../../core/error.h"
#include "../../core/scratch.h"
#include "parallel.h"
#include "sgemm_packed.h"

FLOW_AVX2_BEGIN
namespace flow {
namespace winograd_detail {

constexpr int64_t MR = kSgemmMR, NR = kSgemmNR;

// The convolution as run: x is N x C x H x W, y is N x K x OH x OW, padding (ph, pw). Outputs are covered by
// TH x TW tiles of 2x2 per image; tile (th, tw) reads rows 2th..2th+3 and columns 2tw..2tw+3 of the input
// zero-padded to Hp x Wp.
struct Wino {
  int64_t N, C, K, H, W, OH, OW, ph, pw, TH, TW, Hp, Wp;
  int64_t T() const { return N * TH * TW; }
  int64_t KP() const { return (K + MR - 1) / MR; }  // output channels in panels of MR
  int64_t plane() const { return Hp * Wp; }
};

inline Wino make_wino(int64_t N, int64_t C, int64_t K, int64_t H, int64_t W, int64_t ph, int64_t pw) {
  Wino s{N, C, K, H, W, H + 2 * ph - 2, W + 2 * pw - 2, ph, pw, 0, 0, 0, 0};
  s.TH = (s.OH + 1) / 2, s.TW = (s.OW + 1) / 2;
  s.Hp = 2 * s.TH + 2, s.Wp = 2 * s.TW + 2;
  return s;
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

// A thread's scratch, grown on demand and kept (the same layers come back every step). Throws on failure
// with the buffer left empty; parallel_for carries the error out of the region.
inline float* grow(std::unique_ptr<float[], FreeDeleter>& buf, size_t& cap, size_t n) {
  if (n > cap) {
    cap = 0;
    buf.reset(static_cast<float*>(std::aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64)));
    FLOW_CHECK(buf != nullptr, Runtime, "conv: out of memory for the Winograd scratch (", n * sizeof(float), " bytes)");
    cap = n;
  }
  return buf.get();
}

// Distance in floats between the 16 element-wise products' operands: n rounded to whole 64-byte lines and
// kept off multiples of 2 KiB, where the transforms' 16 streams would all fall into the same L1 sets
// (64 input channels x 64 tiles is exactly 16 KiB; with the aliasing, backward-weight's transform ran 4x
// slower).
inline int64_t xi_stride(int64_t n) {
  n = (n + 15) / 16 * 16;
  return n % 512 == 0 ? n + 16 : n;
}

}  // namespace winograd_detail
}  // namespace flow
FLOW_AVX2_END

#endif  // AVX2 + FMA
