// Random ops (random.cpp) as C++ calls, and the pieces other families need to draw random numbers in their own
// kernels (dropout, rrelu, ...): resolve the `generator` attribute, reserve blocks, convert bits to numbers.
#pragma once
#include <optional>

#include "../core/generator.h"
#include "../kernels/cpu/parallel.h"
#include "functions.h"

namespace flow {

// The generator named by an `int? generator` attribute: None is the default CPU generator.
inline std::shared_ptr<Generator> generator_attr(const Attrs& a, int k) {
  return a.none(k) ? default_generator() : generator_from_handle(a.i(k));
}

// Uniform [0, 1) with the mantissa width of T (so the result, rounded to T, stays below 1; PyTorch does the same).
template <typename T>
constexpr int uniform_bits() {
  if constexpr (std::is_same_v<T, Half>) return 11;
  else if constexpr (std::is_same_v<T, BFloat16>) return 8;
  else if constexpr (std::is_same_v<T, double>) return 53;
  else return 24;
}
inline float u01_float(uint32_t x, int bits) { return static_cast<float>(x >> (32 - bits)) * (1.0f / float(1u << bits)); }
inline double u01_double(uint32_t hi, uint32_t lo) {
  return static_cast<double>(((uint64_t(hi) << 32) | lo) >> 11) * (1.0 / 9007199254740992.0);
}

// Calls f(block, first_element, count) for every Philox block covering n elements, `per_block` elements per
// block, in parallel; element i always comes from block i / per_block, whatever the thread count.
template <typename F>
void for_each_philox_block(const PhiloxStream& s, int64_t n, int per_block, F&& f) {
  int64_t blocks = (n + per_block - 1) / per_block;
  parallel_for(blocks, 4096, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      int64_t i = b * per_block;
      f(s.block(static_cast<uint64_t>(b)), i, static_cast<int>(std::min<int64_t>(per_block, n - i)));
    }
  });
}

namespace ops {
// In-place fills (on a tensor that does not require grad, or under no_grad, as nn.init uses them).
Tensor uniform_(const Tensor& self, double from = 0.0, double to = 1.0, std::optional<int64_t> generator = {});
Tensor normal_(const Tensor& self, double mean = 0.0, double std = 1.0, std::optional<int64_t> generator = {});
// Draws 0/1 with probabilities `p` (a floating tensor), same dtype and shape as p.
Tensor bernoulli(const Tensor& p, std::optional<int64_t> generator = {});
Tensor bernoulli(const Tensor& self, double p, std::optional<int64_t> generator = {});
}  // namespace ops

}  // namespace flow
