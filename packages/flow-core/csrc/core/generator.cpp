#include "generator.h"

#include <chrono>
#include <cstring>
#include <random>
#include <unordered_map>

#include "error.h"

namespace flow {

namespace {
std::mutex g_registry_mu;
std::unordered_map<int64_t, std::weak_ptr<Generator>>& registry() {
  static auto* r = new std::unordered_map<int64_t, std::weak_ptr<Generator>>();  // outlives static dtors
  return *r;
}
int64_t g_next_handle = 1;
}  // namespace

Generator::Generator(uint64_t seed) : seed_(seed) {}

Generator::~Generator() {
  if (handle_ != 0) {
    std::lock_guard<std::mutex> lk(g_registry_mu);
    registry().erase(handle_);
  }
}

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lk(mu_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t Generator::seed() {
  std::random_device rd;
  uint64_t s = (uint64_t(rd()) << 32) ^ rd() ^
               static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  manual_seed(s);
  return s;
}

uint64_t Generator::initial_seed() const {
  std::lock_guard<std::mutex> lk(mu_);
  return seed_;
}

PhiloxStream Generator::reserve(uint64_t blocks) {
  std::lock_guard<std::mutex> lk(mu_);
  PhiloxStream s{seed_, offset_};
  offset_ += blocks;
  return s;
}

std::vector<uint8_t> Generator::get_state() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<uint8_t> out(kStateBytes);
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<uint8_t>(seed_ >> (8 * i));
    out[8 + i] = static_cast<uint8_t>(offset_ >> (8 * i));
  }
  return out;
}

void Generator::set_state(const uint8_t* data, size_t nbytes) {
  FLOW_RUNTIME_CHECK(nbytes == kStateBytes, "RNG state is wrong size: expected ", kStateBytes, " bytes, got ", nbytes);
  uint64_t s = 0, o = 0;
  for (int i = 0; i < 8; ++i) {
    s |= uint64_t(data[i]) << (8 * i);
    o |= uint64_t(data[8 + i]) << (8 * i);
  }
  std::lock_guard<std::mutex> lk(mu_);
  seed_ = s;
  offset_ = o;
}

const std::shared_ptr<Generator>& default_generator() {
  static auto* g = new std::shared_ptr<Generator>(std::make_shared<Generator>());  // handle 0, never freed
  return *g;
}

std::shared_ptr<Generator> make_generator(uint64_t seed) {
  auto g = std::make_shared<Generator>(seed);
  std::lock_guard<std::mutex> lk(g_registry_mu);
  g->handle_ = g_next_handle++;
  registry()[g->handle_] = g;
  return g;
}

std::shared_ptr<Generator> generator_from_handle(int64_t handle) {
  if (handle == 0) return default_generator();
  std::lock_guard<std::mutex> lk(g_registry_mu);
  auto it = registry().find(handle);
  std::shared_ptr<Generator> g = it == registry().end() ? nullptr : it->second.lock();
  FLOW_RUNTIME_CHECK(g != nullptr, "generator: no live Generator has handle ", handle);
  return g;
}

}  // namespace flow
