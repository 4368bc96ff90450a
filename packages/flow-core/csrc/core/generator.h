// Random number generation: Philox4x32-10, a counter-based generator (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC'11). Block k of a stream is philox(counter = offset + k, key = seed): any thread can
// compute any block directly, so kernels split work across threads and still produce the same numbers for any
// thread count. A Generator is just (seed, offset); an op reserves the blocks it will use by advancing the
// offset, so consecutive ops draw disjoint blocks.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace flow {

using PhiloxBlock = std::array<uint32_t, 4>;

// One Philox4x32-10 block for a 128-bit counter and a 64-bit key.
inline PhiloxBlock philox4x32_10(PhiloxBlock ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t(kM0) * ctr[0];
    uint64_t p1 = uint64_t(kM1) * ctr[2];
    ctr = {uint32_t(p1 >> 32) ^ ctr[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ ctr[3] ^ k1, uint32_t(p0)};
    k0 += kW0;
    k1 += kW1;
  }
  return ctr;
}

// What a kernel needs to draw its blocks: block k of this draw is philox(offset + k, seed).
struct PhiloxStream {
  uint64_t seed = 0;
  uint64_t offset = 0;
  PhiloxBlock block(uint64_t k) const {
    uint64_t c = offset + k;
    return philox4x32_10({uint32_t(c), uint32_t(c >> 32), 0u, 0u}, uint32_t(seed), uint32_t(seed >> 32));
  }
};

class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;  // PyTorch's default initial seed
  static constexpr size_t kStateBytes = 16;                    // seed and offset, little-endian uint64s

  explicit Generator(uint64_t seed = kDefaultSeed);
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  void manual_seed(uint64_t seed);  // also rewinds the stream
  uint64_t seed();                  // reseeds from a non-deterministic source; returns the new seed
  uint64_t initial_seed() const;
  // Reserves `blocks` Philox blocks for one draw (thread-safe).
  PhiloxStream reserve(uint64_t blocks);
  std::vector<uint8_t> get_state() const;
  void set_state(const uint8_t* data, size_t nbytes);  // raises on a wrong size
  // The number that names this generator in op attributes (see generator_from_handle). 0 is the default one.
  int64_t handle() const { return handle_; }

 private:
  friend std::shared_ptr<Generator> make_generator(uint64_t);
  mutable std::mutex mu_;
  uint64_t seed_;
  uint64_t offset_ = 0;
  int64_t handle_ = 0;
};

// The default CPU generator (what manual_seed seeds and random ops use without generator=).
const std::shared_ptr<Generator>& default_generator();
// A new generator registered under a fresh handle (unregistered when destroyed).
std::shared_ptr<Generator> make_generator(uint64_t seed = Generator::kDefaultSeed);
// The generator named by `handle` (0: the default); raises RuntimeError for an unknown or dead handle.
std::shared_ptr<Generator> generator_from_handle(int64_t handle);

}  // namespace flow
