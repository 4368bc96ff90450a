// Random ops (random.cpp) as C++ calls, and the pieces other families need to draw random numbers in their own
// kernels (dropout, rrelu, ...): resolve the `generator` attribute, reserve blocks, convert bits to numbers.
#pragma once
#include <optional>

#include "../core/generator.h"
#include "../kernels/cpu/parallel.h"
#include "functions.h"

namespace flow {

// The generator named by an `int? generator` attribute: None is the default CPU generator.
inline std::shared_ptr<Generator> generator_attr(const Attrs& a, const char* name) {
  return a.none(name) ? default_generator() : generator_from_handle(a.i(name));
}

// Uniform [0, 1) with the mantissa width of T (so the result, rounded to T, stays below 1; PyTorch does the same).
template <typename T>
constexpr int uniform_bits() {
  if constexpr (std::is_same_v<T, Half>) return 11;
  else if constexpr (std::is_same_v<T, BFloat16>) return 8;
  else if constexpr (std::is_same_v<T, double>) return 53;
  else return 24;
}
inline float u01_float(uint32_t x, int bits) {
  return static_cast<float>(x >> (32 - bits)) * (1.0f / float(1u << bits));
}
inline double u01_double(uint32_t hi, uint32_t lo) {
  return static_cast<double>(((uint64_t(hi) << 32) | lo) >> 11) * (1.0 / 9007199254740992.0);
}

// kBatch consecutive Philox blocks computed lane-parallel (the loops vectorise: 32x32->64-bit multiplies).
constexpr int kPhiloxBatch = 16;
inline void philox_batch(const PhiloxStream& s, uint64_t first, PhiloxBlock* out) {
  uint32_t c0[kPhiloxBatch], c1[kPhiloxBatch], c2[kPhiloxBatch], c3[kPhiloxBatch];
  for (int l = 0; l < kPhiloxBatch; ++l) {
    uint64_t c = s.offset + first + static_cast<uint64_t>(l);
    c0[l] = uint32_t(c);
    c1[l] = uint32_t(c >> 32);
    c2[l] = 0;
    c3[l] = 0;
  }
  uint32_t k0 = uint32_t(s.seed), k1 = uint32_t(s.seed >> 32);
  for (int r = 0; r < 10; ++r) {
#pragma omp simd
    for (int l = 0; l < kPhiloxBatch; ++l) {
      uint64_t p0 = uint64_t(0xD2511F53u) * c0[l];
      uint64_t p1 = uint64_t(0xCD9E8D57u) * c2[l];
      uint32_t n0 = uint32_t(p1 >> 32) ^ c1[l] ^ k0, n2 = uint32_t(p0 >> 32) ^ c3[l] ^ k1;
      c1[l] = uint32_t(p1);
      c3[l] = uint32_t(p0);
      c0[l] = n0;
      c2[l] = n2;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int l = 0; l < kPhiloxBatch; ++l) out[l] = {c0[l], c1[l], c2[l], c3[l]};
}

// Calls f(batch, first_block, count) for runs of up to kPhiloxBatch consecutive Philox blocks covering the
// blocks of n elements (`per_block` each), in parallel; block b always holds the same numbers, whatever the
// thread count. For kernels that transform a whole batch in one vectorised loop.
template <typename F>
void for_each_philox_batch(const PhiloxStream& s, int64_t n, int per_block, F&& f) {
  int64_t blocks = (n + per_block - 1) / per_block;
  parallel_for(blocks, 4096, [&](int64_t b0, int64_t b1) {
    PhiloxBlock batch[kPhiloxBatch];
    for (int64_t b = b0; b < b1; b += kPhiloxBatch) {
      philox_batch(s, static_cast<uint64_t>(b), batch);
      f(static_cast<const PhiloxBlock*>(batch), b, static_cast<int>(std::min<int64_t>(kPhiloxBatch, b1 - b)));
    }
  });
}

// Calls f(block, first_element, count) for every Philox block covering n elements, `per_block` elements per
// block, in parallel; element i always comes from block i / per_block, whatever the thread count.
template <typename F>
void for_each_philox_block(const PhiloxStream& s, int64_t n, int per_block, F&& f) {
  for_each_philox_batch(s, n, per_block, [&](const PhiloxBlock* batch, int64_t b, int nb) {
    for (int64_t l = 0; l < nb; ++l) {
      int64_t i = (b + l) * per_block;
      f(batch[l], i, static_cast<int>(std::min<int64_t>(per_block, n - i)));
    }
  });
}

// The `shard` attribute of the random ops (`int[]? shard=None`): `out` is the block of a larger logical tensor
// that starts at `lo` (one index per dim), given as the logical shape then `lo`. The kernel writes the values
// the whole tensor has there and reserves the whole tensor's blocks, so a global tensor's shards equal a
// single process's tensor of the same seed (and later draws stay in step) without any rank making the whole.
struct ShardWindow {
  std::vector<int64_t> logical, lo;  // empty: `out` is the whole tensor
  int64_t total = 0;                 // the logical element count
  bool active() const { return !logical.empty() || total > 0; }
  // The logical row-major index of element i (row-major) of a block of shape `local`.
  int64_t logical_index(const Shape& local, int64_t i) const {
    int64_t r = 0, stride = 1;
    for (int64_t d = static_cast<int64_t>(local.size()) - 1; d >= 0; --d) {
      r += (lo[d] + i % local[d]) * stride;
      i /= local[d];
      stride *= logical[d];
    }
    return r;
  }
};
// The window of `out` named by attribute `shard` (inactive when it is None); `op` names the op in errors.
ShardWindow shard_attr(const Attrs& a, const Tensor& out, const char* op);

namespace ops {
// In-place fills (on a tensor that does not require grad, or under no_grad, as nn.init uses them).
Tensor uniform_(const Tensor& self, double from = 0.0, double to = 1.0, std::optional<int64_t> generator = {});
Tensor normal_(const Tensor& self, double mean = 0.0, double std = 1.0, std::optional<int64_t> generator = {});
// Draws 0/1 with probabilities `p` (a floating tensor), same dtype and shape as p.
Tensor bernoulli(const Tensor& p, std::optional<int64_t> generator = {});
Tensor bernoulli(const Tensor& self, double p, std::optional<int64_t> generator = {});
}  // namespace ops

}  // namespace flow
