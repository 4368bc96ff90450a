#include "kv_store.h"

#include "row_log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace flow_embedding {
namespace {

constexpr int64_t kChunkShift = 14;  // rows per RAM chunk: 16384
constexpr int64_t kChunkRows = int64_t{1} << kChunkShift;
constexpr int64_t kAhead = 8;  // software prefetch distance, in keys, of the loops over random rows
constexpr char kMagic[8] = {'O', 'F', 'E', 'M', 'B', 'S', 'N', 'P'};
constexpr uint32_t kVersion = 1;

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t key_hash(int32_t table, int64_t id) {
  return mix(static_cast<uint64_t>(id) ^ mix(static_cast<uint64_t>(static_cast<uint32_t>(table))));
}

std::string errno_text(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

// float16 storage: IEEE binary16 with round-to-nearest-even (values are computed in float32 and only stored
// as halves, so the conversions stay at the tier's boundary).
uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u | (ax > 0x7F800000u ? 0x200u : 0u));
  if (ax >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to infinity
  if (ax < 0x38800000u) {  // a subnormal half: scale so that one unit is 2**-24, round to the nearest even
    float a;
    std::memcpy(&a, &ax, 4);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
  }
  return static_cast<uint16_t>(sign | ((ax + 0xC8000FFFu + ((ax >> 13) & 1u)) >> 13));
}

float from_half(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0) {
    const float f = static_cast<float>(man) * 5.9604644775390625e-8f;  // 2**-24
    return sign ? -f : f;
  }
  if (exp == 31) bits = sign | 0x7F800000u | (man << 13);
  else bits = sign | ((exp + 112) << 23) | (man << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Header of a snapshot file; the payload is tables (int32[n]), ids (int64[n]), rows (float[n * row_floats]).
struct SnapshotHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;
  int64_t dim;
  int64_t row_floats;
  int64_t num_keys;
  uint64_t checksum;
};

// A word-at-a-time running hash over the payload (detects torn or corrupted files, not an adversary).
struct Checksum {
  uint64_t h = 0x6A09E667F3BCC909ull;
  void add(const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * 0x100000001B3ull;
      h ^= h >> 29;
    }
    for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  }
};

void write_all(std::FILE* f, const void* data, size_t bytes, const std::string& path) {
  if (bytes && std::fwrite(data, 1, bytes, f) != bytes) throw std::runtime_error(errno_text("cannot write", path));
}

void read_all(std::FILE* f, void* data, size_t bytes, const std::string& path) {
  if (bytes && std::fread(data, 1, bytes, f) != bytes)
    throw std::runtime_error("snapshot file '" + path + "' is truncated or unreadable");
}

}  // namespace

float initial_value(uint64_t seed, int32_t table, int64_t id, int64_t col, const InitSegment& seg) {
  const uint64_t k =
      mix(mix(seed ^ mix(static_cast<uint64_t>(static_cast<uint32_t>(table)) + 1)) ^ mix(static_cast<uint64_t>(id)));
  auto unit = [&](uint64_t j) {  // in [0, 1)
    return static_cast<double>(mix(k + j * 0xD1B54A32D192ED03ull) >> 11) * 0x1.0p-53;
  };
  switch (seg.kind) {
    case InitKind::kUniform: return static_cast<float>(seg.a + (seg.b - seg.a) * unit(static_cast<uint64_t>(col)));
    case InitKind::kNormal: {
      const double u1 = 1.0 - unit(2 * static_cast<uint64_t>(col));  // in (0, 1]: log stays finite
      const double u2 = unit(2 * static_cast<uint64_t>(col) + 1);
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      return static_cast<float>(seg.a + seg.b * z);
    }
    case InitKind::kConstant: return static_cast<float>(seg.a);
  }
  return 0.f;
}

struct Backing {
  int64_t row_floats = 0;
  int64_t elem = 4;  // bytes per stored value: 4 (float32) or 2 (float16)
  bool cached = false;
  int64_t cache_rows = 0;
  StoreStats* stats = nullptr;

  // index: open addressing over (table, id) -> slot. A bucket keeps its key and slot side by side (one cache
  // line per probe, where three arrays cost three misses): `packed` is slot << kTableBits | table, kEmpty when
  // the bucket is free.
  struct Bucket {
    int64_t id;
    uint64_t packed;
  };
  static constexpr int kTableBits = 24;
  static constexpr uint64_t kTableMask = (uint64_t{1} << kTableBits) - 1;
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  std::vector<Bucket> buckets;
  uint64_t mask = 0;
  // The keys of the last resolve and their slots: an update resolves the keys its lookup just did (slots never
  // move within a Backing, so the memo stays right until the keys differ).
  std::vector<int32_t> memo_tables;
  std::vector<int64_t> memo_ids, memo_slots;
  bool memo_padding = false;
  int64_t memo_padding_idx = 0;
  // slot -> key
  std::vector<int32_t> slot_table;
  std::vector<int64_t> slot_id;

  // full tier
  std::vector<std::unique_ptr<unsigned char[]>> chunks;

  // cached tier: the rows' persistent copies live in `log`; the cache holds `cache_rows` lines over it
  std::unique_ptr<RowLog> log;
  std::vector<int32_t> line_of_slot;
  std::vector<int64_t> line_slot;
  std::vector<uint8_t> dirty;
  // Segmented LRU: a line enters the probation list; a hit there in a later lookup than the one that loaded it
  // promotes it to the protected list (at most `protected_cap` lines, its least recent one demoted back).
  // Victims come from probation's tail, so an id seen once (most of a zipf stream's tail) cannot push out rows
  // that are used step after step. The update that follows a lookup touches the same rows again, which is why
  // promotion counts lookups (`epoch`), not hits, and why probation keeps a quarter of the cache: one batch's
  // misses should stay cached until its update (protected holds the other three quarters, as W-TinyLFU's main
  // region does: on the bench's zipf stream lookup hits rose 79.1% -> 80.0% over half and half).
  std::vector<int32_t> prev, next;
  std::vector<uint8_t> in_protected;
  std::vector<uint32_t> line_epoch;  // the lookup that loaded (or demoted) the line
  std::vector<uint32_t> line_seen;   // the last lookup that used the line: its update leaves the order alone
  uint32_t epoch = 0;
  int32_t head[2] = {-1, -1}, tail[2] = {-1, -1};  // [0] probation, [1] protected; head: most recently used
  int64_t protected_lines = 0, protected_cap = 0;
  // Admission by frequency (TinyLFU's rule): a sketch counts each slot's lookups (one saturating byte per
  // hashed slot, halved every `freq_period` counts so that it follows the stream). A miss whose row is looked
  // up less often than the row probation would evict next is still loaded (its update follows), but when the
  // next lookup begins it moves to probation's tail, the first line a miss takes: rows seen now and then no
  // longer push out rows seen step after step (on a Zipf stream most misses are such rows).
  std::vector<uint8_t> freq;
  uint64_t freq_mask = 0;
  int64_t freq_count = 0, freq_period = 0;
  std::vector<std::pair<int32_t, int64_t>> low_lines;  // (line, its slot) loaded by the last lookup, not admitted
  int64_t used_lines = 0;
  std::vector<unsigned char> lines;

  Backing() = default;
  Backing(const Backing&) = delete;
  Backing& operator=(const Backing&) = delete;

  int64_t size() const { return static_cast<int64_t>(slot_id.size()); }
  int64_t row_bytes() const { return row_floats * elem; }

  void encode(unsigned char* dst, const float* src, int64_t n) const {
    if (elem == 4) {
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t h = to_half(src[i]);
      std::memcpy(dst + 2 * i, &h, 2);
    }
  }

  void decode(float* dst, const unsigned char* src, int64_t n) const {
    if (elem == 4) {
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      dst[i] = from_half(h);
    }
  }

  void init_index(int64_t want) {
    uint64_t cap = 16;
    while (cap < static_cast<uint64_t>(want)) cap <<= 1;
    buckets.assign(cap, Bucket{0, kEmpty});
    mask = cap - 1;
  }

  int64_t find(int32_t table, int64_t id) const {
    const uint64_t t = static_cast<uint32_t>(table);
    for (uint64_t b = key_hash(table, id) & mask;; b = (b + 1) & mask) {
      const Bucket& k = buckets[b];
      if (k.packed == kEmpty) return -1;
      if (k.id == id && (k.packed & kTableMask) == t) return static_cast<int64_t>(k.packed >> kTableBits);
    }
  }

  void put(int32_t table, int64_t id, int64_t slot) {
    uint64_t b = key_hash(table, id) & mask;
    while (buckets[b].packed != kEmpty) b = (b + 1) & mask;
    buckets[b] = Bucket{id, static_cast<uint64_t>(slot) << kTableBits | static_cast<uint32_t>(table)};
  }

  void grow_if_needed() {
    if (static_cast<uint64_t>(size() + 1) * 2 <= mask + 1) return;
    if (size() + 1 >= (int64_t{1} << (64 - kTableBits - 1)))
      throw std::length_error("embedding store: more rows than one shard's index can address");
    std::vector<Bucket> old = std::move(buckets);
    init_index(static_cast<int64_t>(old.size()) * 2);
    for (const Bucket& k : old)
      if (k.packed != kEmpty)
        put(static_cast<int32_t>(k.packed & kTableMask), k.id, static_cast<int64_t>(k.packed >> kTableBits));
  }

  // ---- cached tier ------------------------------------------------------------------------------------
  void unlink_line(int32_t l) {
    const int q = in_protected[l];
    if (prev[l] >= 0) next[prev[l]] = next[l];
    else head[q] = next[l];
    if (next[l] >= 0) prev[next[l]] = prev[l];
    else tail[q] = prev[l];
    protected_lines -= q;
  }

  void push_front(int32_t l, int q) {
    in_protected[l] = static_cast<uint8_t>(q);
    protected_lines += q;
    prev[l] = -1;
    next[l] = head[q];
    if (head[q] >= 0) prev[head[q]] = l;
    head[q] = l;
    if (tail[q] < 0) tail[q] = l;
  }

  // A cache hit: refreshes the line, promoting a probation line loaded by an earlier lookup.
  void touch(int32_t l) {
    line_seen[l] = epoch;
    const int q = in_protected[l] || (protected_cap > 0 && line_epoch[l] != epoch);
    unlink_line(l);
    push_front(l, q);
    if (q && protected_lines > protected_cap) {
      const int32_t d = tail[1];
      unlink_line(d);
      push_front(d, 0);
      line_epoch[d] = epoch;
    }
  }

  uint8_t& freq_of(int64_t slot) { return freq[mix(static_cast<uint64_t>(slot)) & freq_mask]; }

  void count(int64_t slot) {
    uint8_t& f = freq_of(slot);
    if (f < 255) ++f;
    if (++freq_count >= freq_period) {
      for (uint8_t& c : freq) c >>= 1;
      freq_count = 0;
    }
  }

  // Whether a missed row looked up less often than the row a miss would evict next is (not admitted).
  bool loses_admission(int64_t slot) {
    if (used_lines < cache_rows || tail[0] < 0) return false;
    return freq_of(slot) <= freq_of(line_slot[tail[0]]);
  }

  // A new lookup: the last one's rows that lost admission go to probation's tail, unless used since.
  void demote_low() {
    for (const auto& [l, slot] : low_lines) {
      if (line_slot[l] != slot || in_protected[l] || tail[0] == l) continue;
      unlink_line(l);
      push_back(l);
    }
    low_lines.clear();
  }

  void push_back(int32_t l) {  // onto probation's tail
    in_protected[l] = 0;
    next[l] = -1;
    prev[l] = tail[0];
    if (tail[0] >= 0) next[tail[0]] = l;
    tail[0] = l;
    if (head[0] < 0) head[0] = l;
  }

  // A line for a new resident row: a free one, else the least recently used (written back when dirty).
  int32_t take_line() {
    int32_t l;
    if (used_lines < cache_rows) {
      l = static_cast<int32_t>(used_lines++);
    } else {
      l = tail[0] >= 0 ? tail[0] : tail[1];
      unlink_line(l);
      const int64_t old = line_slot[l];
      if (dirty[l]) {
        log->append(old, line_ptr(l));
        ++stats->writebacks;
      }
      line_of_slot[old] = -1;
      ++stats->evictions;
    }
    push_front(l, 0);
    line_epoch[l] = line_seen[l] = epoch;
    dirty[l] = 0;
    return l;
  }

  unsigned char* line_ptr(int32_t l) { return &lines[static_cast<size_t>(l * row_bytes())]; }
  const unsigned char* line_ptr(int32_t l) const { return &lines[static_cast<size_t>(l * row_bytes())]; }
  unsigned char* chunk_ptr(int64_t slot) const {
    return chunks[slot >> kChunkShift].get() + (slot & (kChunkRows - 1)) * row_bytes();
  }

  // ---- rows -------------------------------------------------------------------------------------------
  // The row of an existing slot (loaded into the cache in the cached tier; `write` marks it dirty).
  unsigned char* row(int64_t slot, bool write) {
    unsigned char* out = nullptr;
    rows(&slot, 1, write, [&](int64_t, unsigned char* r) { out = r; });
    return out;
  }

  // fn(i, row) for each slots[i] >= 0, the rows loaded as `row` does.
  template <class Fn>
  void rows(const int64_t* slots, int64_t n, bool write, Fn&& fn) {
    rows_windows(slots, n, write, [&](int64_t lo, int64_t hi, unsigned char* const* ptrs) {
      for (int64_t i = lo; i < hi; ++i)
        if (ptrs[i - lo]) fn(i, ptrs[i - lo]);
    });
  }

  // fn(lo, hi, ptrs): the rows of slots[lo, hi) (ptrs[i - lo], null where slots[i] < 0), valid until fn returns.
  // The full tier gives every row at once. The cached tier takes a window of keys at a time: their lines first
  // (hits refreshed, misses given lines, evicting), then every miss of the window read in one batch in file
  // order, then fn. A window is at most a sixteenth of the cache, so that its lines (at most two pushes to
  // probation's front per key, and probation keeps a quarter of the cache) are not evicted within it.
  template <class Fn>
  void rows_windows(const int64_t* slots, int64_t n, bool write, Fn&& fn) {
    std::vector<unsigned char*> ptrs;
    if (!cached) {
      ptrs.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) ptrs[i] = slots[i] >= 0 ? chunk_ptr(slots[i]) : nullptr;
      if (n) fn(0, n, ptrs.data());
      return;
    }
    const int64_t window = std::clamp<int64_t>(cache_rows / 16, 1, 1 << 16);
    std::vector<int32_t> win_lines(static_cast<size_t>(std::min(n, window)));
    ptrs.resize(win_lines.size());
    std::vector<int64_t> miss_slots, deferred;
    std::vector<unsigned char*> miss_dst;
    for (int64_t lo = 0; lo < n; lo += window) {
      const int64_t hi = std::min(n, lo + window);
      miss_slots.clear();
      miss_dst.clear();
      deferred.clear();
      for (int64_t i = lo; i < hi; ++i) {
        // the slot -> line map is several MiB for a large table: its entries a few keys ahead load meanwhile
        if (i + kAhead < hi && slots[i + kAhead] >= 0) __builtin_prefetch(&line_of_slot[slots[i + kAhead]]);
        const int64_t slot = slots[i];
        int32_t l = -1;
        if (slot >= 0) {
          if (!write) count(slot);
          l = line_of_slot[slot];
          if (l >= 0) {
            // The update after a lookup reads the rows that lookup just placed: neither a cache decision
            // (counted as a hit) nor news for the LRU order.
            if (!write) ++stats->hits;
            if (!write || line_seen[l] != epoch) touch(l);
          } else {
            deferred.push_back(i);
          }
        }
        win_lines[i - lo] = l;
      }
      if (!deferred.empty() && write)  // lines are taken below: the rows an update left in place go first
        for (int64_t i = lo; i < hi; ++i)
          if (win_lines[i - lo] >= 0) touch(win_lines[i - lo]);
      for (const int64_t i : deferred) {
        const int64_t slot = slots[i];
        int32_t l = line_of_slot[slot];
        if (l >= 0) {  // a repeat of a key this window's earlier miss placed
          if (!write) ++stats->hits;
        } else {
          ++stats->misses;
          const bool low = !write && loses_admission(slot);
          l = take_line();
          if (low) low_lines.emplace_back(l, slot);
          line_slot[l] = slot;
          line_of_slot[slot] = l;
          miss_slots.push_back(slot);
          miss_dst.push_back(line_ptr(l));
        }
        win_lines[i - lo] = l;
      }
      log->read_batch(miss_slots.data(), miss_dst.data(), static_cast<int64_t>(miss_slots.size()));
      for (int64_t i = lo; i < hi; ++i) {
        const int32_t l = win_lines[i - lo];
        ptrs[i - lo] = nullptr;
        if (l < 0) continue;
        if (line_slot[l] != slots[i]) throw std::logic_error("embedding cache: a line was reused within its window");
        if (write) dirty[l] = 1;  // only now: a line evicted before its read must not write garbage back
        ptrs[i - lo] = line_ptr(l);
      }
      fn(lo, hi, ptrs.data());
    }
  }

  // Appends a key; returns its row, to be filled by the caller.
  unsigned char* append(int32_t table, int64_t id) {
    grow_if_needed();
    const int64_t slot = size();
    put(table, id, slot);
    slot_table.push_back(table);
    slot_id.push_back(id);
    if (!cached) {
      if ((slot >> kChunkShift) >= static_cast<int64_t>(chunks.size()))
        chunks.emplace_back(new unsigned char[static_cast<size_t>(kChunkRows * row_bytes())]);
      return row(slot, true);
    }
    line_of_slot.push_back(-1);
    const int32_t l = take_line();
    line_slot[l] = slot;
    line_of_slot[slot] = l;
    dirty[l] = 1;
    return line_ptr(l);
  }

  // Copies a row without changing the cache (snapshots).
  void peek(int64_t slot, float* dst) const {
    if (!cached) return decode(dst, chunk_ptr(slot), row_floats);
    const int32_t l = line_of_slot[slot];
    if (l >= 0) return decode(dst, line_ptr(l), row_floats);
    std::vector<unsigned char> tmp(static_cast<size_t>(row_bytes()));
    log->read(slot, tmp.data());
    decode(dst, tmp.data(), row_floats);
  }

  // Every dirty line into the log, and the log into its file.
  void flush() {
    if (!cached) return;
    for (int64_t l = 0; l < used_lines; ++l) {
      if (dirty[l]) {
        log->append(line_slot[l], line_ptr(static_cast<int32_t>(l)));
        dirty[l] = 0;
        ++stats->writebacks;
      }
    }
    log->sync();
  }
};

Store::Store(int64_t dim, int64_t row_floats, int64_t capacity, bool cached, int64_t cache_rows, std::string data_dir,
             int64_t block_size, uint64_t seed, std::vector<std::vector<InitSegment>> tables, bool half,
             bool write_back_thread)
    : dim_(dim), row_floats_(row_floats), elem_(half ? 2 : 4), write_back_thread_(write_back_thread),
      capacity_(capacity), cached_(cached), cache_rows_(cache_rows), data_dir_(std::move(data_dir)),
      block_size_(block_size), seed_(seed), tables_(std::move(tables)) {
  if (dim <= 0) throw std::invalid_argument("embedding_dim must be positive, got " + std::to_string(dim));
  if (row_floats < dim) throw std::invalid_argument("row width must be at least embedding_dim");
  if (tables_.empty()) throw std::invalid_argument("at least one table is needed");
  if (tables_.size() >= (size_t{1} << Backing::kTableBits))
    throw std::invalid_argument("at most " + std::to_string(Backing::kTableMask) + " tables per store");
  if (block_size <= 0 || (block_size & (block_size - 1)))
    throw std::invalid_argument("physical_block_size must be a positive power of two, got " +
                                std::to_string(block_size));
  if (cached && cache_rows < 1)
    throw std::invalid_argument("the cache budget holds no row: raise cache_budget_mb (a row takes " +
                                std::to_string(row_floats * elem_) + " bytes)");
  for (size_t t = 0; t < tables_.size(); ++t)
    for (const auto& s : tables_[t])
      if (s.start < 0 || s.len < 0 || s.start + s.len > dim)
        throw std::invalid_argument("table " + std::to_string(t) + ": column range outside embedding_dim");
  backing_ = make_backing(generation_);
}

Store::~Store() = default;

std::unique_ptr<Backing> Store::make_backing(int generation) const {
  auto b = std::make_unique<Backing>();
  b->row_floats = row_floats_;
  b->elem = elem_;
  b->cached = cached_;
  b->stats = const_cast<StoreStats*>(&stats_);
  b->init_index(1024);
  if (cached_) {
    b->cache_rows = cache_rows_;
    const std::string file =
        data_dir_ + "/rows-" + std::to_string(::getpid()) + "-" + std::to_string(generation) + ".bin";
    // segments of up to 4 MiB (one pwrite each), smaller for small caches so that the cleaner's granularity
    // stays fine next to the table
    const int64_t cache_bytes = cache_rows_ * row_floats_ * elem_;
    b->log = std::make_unique<RowLog>(file, row_floats_ * elem_, block_size_,
                                      std::clamp<int64_t>(cache_bytes / 8, block_size_, int64_t{4} << 20),
                                      write_back_thread_);
    b->lines.resize(static_cast<size_t>(cache_rows_ * row_floats_ * elem_));
    b->line_slot.assign(cache_rows_, -1);
    b->dirty.assign(cache_rows_, 0);
    b->prev.assign(cache_rows_, -1);
    b->next.assign(cache_rows_, -1);
    b->in_protected.assign(cache_rows_, 0);
    b->line_epoch.assign(cache_rows_, 0);
    b->line_seen.assign(cache_rows_, 0);
    uint64_t fcap = 64;
    while (fcap < static_cast<uint64_t>(cache_rows_) * 8) fcap <<= 1;
    b->freq.assign(fcap, 0);
    b->freq_mask = fcap - 1;
    b->freq_period = cache_rows_ * 16;
    b->protected_cap = cache_rows_ * 3 / 4;
  }
  return b;
}

void Store::init_row(int32_t table, int64_t id, float* row) const {
  std::fill(row, row + row_floats_, 0.f);
  for (const auto& seg : tables_[table])
    for (int64_t c = seg.start; c < seg.start + seg.len; ++c) row[c] = initial_value(seed_, table, id, c, seg);
}

void Store::check_keys(const int32_t* tables, const int64_t* ids, int64_t n, bool has_padding,
                       int64_t padding_idx) const {
  const int64_t nt = num_tables();
  for (int64_t i = 0; i < n; ++i) {
    if (tables[i] < 0 || tables[i] >= nt)
      throw std::out_of_range("table_ids: table id " + std::to_string(tables[i]) + " is out of range for " +
                              std::to_string(nt) + " table(s)");
    if (ids[i] < 0 && !(has_padding && ids[i] == padding_idx))
      throw std::invalid_argument("ids: negative id " + std::to_string(ids[i]) + " (ids must be >= 0)");
  }
}

namespace {

// Slots of n keys, inserting (and initialising) the unseen ones. The capacity is checked before anything is
// inserted, so a batch that does not fit leaves the table as it was.
template <class Init>
void resolve(Backing& b, const int32_t* tables, const int64_t* ids, int64_t n, bool has_padding, int64_t padding_idx,
             int64_t capacity, Init&& init, std::vector<int64_t>& slots) {
  slots.resize(static_cast<size_t>(n));
  std::vector<std::pair<int32_t, int64_t>> unseen;
  for (int64_t i = 0; i < n; ++i) {
    if (has_padding && ids[i] == padding_idx) {
      slots[i] = -2;
      continue;
    }
    slots[i] = b.find(tables[i], ids[i]);
    if (slots[i] < 0) unseen.emplace_back(tables[i], ids[i]);
  }
  if (unseen.empty()) return;
  if (capacity >= 0) {
    std::sort(unseen.begin(), unseen.end());
    const int64_t fresh = std::unique(unseen.begin(), unseen.end()) - unseen.begin();
    if (b.size() + fresh > capacity)
      throw std::length_error("embedding capacity exhausted: the store holds " + std::to_string(b.size()) +
                              " rows and this batch adds " + std::to_string(fresh) + " new ids, beyond capacity " +
                              std::to_string(capacity) + " (raise `capacity` in the store options)");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (slots[i] != -1) continue;
    int64_t s = b.find(tables[i], ids[i]);  // an earlier duplicate in this batch may have inserted it
    if (s < 0) {
      s = b.size();
      init(tables[i], ids[i], b.append(tables[i], ids[i]));
    }
    slots[i] = s;
  }
}

}  // namespace

void Store::resolve_or_init(Backing& b, const int32_t* tables, const int64_t* ids, int64_t n, bool has_padding,
                            int64_t padding_idx, std::vector<int64_t>& slots) const {
  const auto un = static_cast<size_t>(n);
  if (b.memo_ids.size() == un && b.memo_padding == has_padding && (!has_padding || b.memo_padding_idx == padding_idx) &&
      std::equal(ids, ids + n, b.memo_ids.begin()) && std::equal(tables, tables + n, b.memo_tables.begin())) {
    slots = b.memo_slots;
    return;
  }
  std::vector<float> scratch(static_cast<size_t>(row_floats_));
  resolve(b, tables, ids, n, has_padding, padding_idx, capacity_, [&](int32_t t, int64_t id, unsigned char* row) {
    init_row(t, id, scratch.data());
    b.encode(row, scratch.data(), row_floats_);
  }, slots);
  b.memo_tables.assign(tables, tables + n);
  b.memo_ids.assign(ids, ids + n);
  b.memo_slots = slots;
  b.memo_padding = has_padding;
  b.memo_padding_idx = padding_idx;
}

void Store::lookup(const int32_t* tables, const int64_t* ids, int64_t n, float* out, bool has_padding,
                   int64_t padding_idx) {
  std::lock_guard<std::mutex> lock(mu_);
  check_keys(tables, ids, n, has_padding, padding_idx);
  Backing& b = *backing_;
  ++b.epoch;
  if (b.cached) b.demote_low();
  std::vector<int64_t> slots;
  resolve_or_init(b, tables, ids, n, has_padding, padding_idx, slots);
  const size_t bytes = static_cast<size_t>(dim_) * 4;
  for (int64_t i = 0; i < n; ++i)
    if (slots[i] < 0) std::memset(out + i * dim_, 0, bytes);
  b.rows(slots.data(), n, false, [&](int64_t i, const unsigned char* raw) { b.decode(out + i * dim_, raw, dim_); });
}

namespace {

int64_t state_columns(OptKind kind, const std::vector<double>& h) {
  switch (kind) {
    case OptKind::kSgd: return h[1] != 0.0 ? 1 : 0;
    case OptKind::kAdam: return h[5] != 0.0 ? 3 : 2;
    case OptKind::kAdagrad: return 1;
    case OptKind::kFtrl: return 2;
  }
  return 0;
}

size_t hyper_count(OptKind kind) {
  switch (kind) {
    case OptKind::kSgd: return 6;
    case OptKind::kAdam: return 9;
    case OptKind::kAdagrad: return 5;
    case OptKind::kFtrl: return 7;
  }
  return 0;
}

// Adam without amsgrad or maximize (the usual case), its step constants computed once per batch: a loop the
// compiler vectorises (restrict pointers, no branches).
struct AdamStep {
  float step_size, inv_bc2, b1, b2, wd, decay, eps;
  bool decoupled;
  explicit AdamStep(const std::vector<double>& h) {
    const double lr = h[0], t = h[8];
    step_size = static_cast<float>(lr / (1.0 - std::pow(h[1], t)));
    inv_bc2 = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(h[2], t)));
    b1 = static_cast<float>(h[1]);
    b2 = static_cast<float>(h[2]);
    eps = static_cast<float>(h[3]);
    wd = static_cast<float>(h[4]);
    decay = static_cast<float>(1.0 - lr * h[4]);
    decoupled = h[7] != 0.0;
  }
  void apply(int64_t d, float* __restrict w, const float* __restrict g_in) const {
    float* __restrict m = w + d;
    float* __restrict v = w + 2 * d;
    const float wd_c = decoupled ? 0.f : wd, decay_c = decoupled ? decay : 1.f;
    for (int64_t j = 0; j < d; ++j) {
      const float g = g_in[j] + wd_c * w[j];
      const float wj = w[j] * decay_c;
      const float mj = b1 * m[j] + (1.f - b1) * g;
      const float vj = b2 * v[j] + (1.f - b2) * g * g;
      m[j] = mj;
      v[j] = vj;
      w[j] = wj - step_size * mj / (std::sqrt(vj) * inv_bc2 + eps);
    }
  }
};

// One row's update; `w` is the row (value columns, then state columns of `d` each), `g` the summed gradient.
void apply_row(OptKind kind, const std::vector<double>& h, int64_t d, float* w, const float* g_in) {
  switch (kind) {
    case OptKind::kSgd: {  // h: lr, momentum, dampening, weight_decay, nesterov, maximize
      const float lr = static_cast<float>(h[0]), mom = static_cast<float>(h[1]);
      const float damp = static_cast<float>(h[2]), wd = static_cast<float>(h[3]);
      const bool nesterov = h[4] != 0.0, maximize = h[5] != 0.0;
      float* buf = w + d;
      for (int64_t j = 0; j < d; ++j) {
        float g = maximize ? -g_in[j] : g_in[j];
        g += wd * w[j];
        if (mom != 0.f) {
          buf[j] = mom * buf[j] + (1.f - damp) * g;
          g = nesterov ? g + mom * buf[j] : buf[j];
        }
        w[j] -= lr * g;
      }
      return;
    }
    case OptKind::kAdam: {  // h: lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, decoupled, step
      const double lr = h[0], b1 = h[1], b2 = h[2], eps = h[3], wd = h[4], t = h[8];
      const bool amsgrad = h[5] != 0.0, maximize = h[6] != 0.0, decoupled = h[7] != 0.0;
      const double bc1 = 1.0 - std::pow(b1, t), bc2_sqrt = std::sqrt(1.0 - std::pow(b2, t));
      const float step_size = static_cast<float>(lr / bc1), inv_bc2 = static_cast<float>(1.0 / bc2_sqrt);
      const float fb1 = static_cast<float>(b1), fb2 = static_cast<float>(b2), fwd = static_cast<float>(wd);
      const float decay = static_cast<float>(1.0 - lr * wd), feps = static_cast<float>(eps);
      float *m = w + d, *v = w + 2 * d, *vmax = w + 3 * d;
      for (int64_t j = 0; j < d; ++j) {
        float g = maximize ? -g_in[j] : g_in[j];
        if (decoupled) w[j] *= decay;
        else g += fwd * w[j];
        m[j] = fb1 * m[j] + (1.f - fb1) * g;
        v[j] = fb2 * v[j] + (1.f - fb2) * g * g;
        float vv = v[j];
        if (amsgrad) vv = vmax[j] = std::max(vmax[j], v[j]);
        w[j] -= step_size * m[j] / (std::sqrt(vv) * inv_bc2 + feps);
      }
      return;
    }
    case OptKind::kAdagrad: {  // h: clr, weight_decay, eps, maximize, initial_accumulator_value
      const float clr = static_cast<float>(h[0]), wd = static_cast<float>(h[1]), eps = static_cast<float>(h[2]);
      const bool maximize = h[3] != 0.0;
      const float init = static_cast<float>(h[4]);
      float* sum = w + d;  // kept as (sum - initial_accumulator_value): new rows start at zero state
      for (int64_t j = 0; j < d; ++j) {
        float g = maximize ? -g_in[j] : g_in[j];
        g += wd * w[j];
        sum[j] += g * g;
        w[j] -= clr * g / (std::sqrt(sum[j] + init) + eps);
      }
      return;
    }
    case OptKind::kFtrl: {  // h: lr, weight_decay, lr_power, initial_accumulator_value, lambda1, lambda2, beta
      const double lr = h[0], wd = h[1], p = -h[2], init = h[3], l1 = h[4], l2 = h[5], beta = h[6];
      float *acc = w + d, *z = w + 2 * d;  // acc kept as (accumulator - initial_accumulator_value)
      for (int64_t j = 0; j < d; ++j) {
        const double g = g_in[j] + wd * w[j];
        const double n_old = acc[j] + init, n_new = n_old + g * g;
        const double pn_new = std::pow(n_new, p);
        const double sigma = (pn_new - std::pow(n_old, p)) / lr;
        const double zn = z[j] + g - sigma * w[j];
        z[j] = static_cast<float>(zn);
        acc[j] = static_cast<float>(n_new - init);
        w[j] =
            std::abs(zn) <= l1 ? 0.f : static_cast<float>((std::copysign(l1, zn) - zn) / ((beta + pn_new) / lr + l2));
      }
      return;
    }
  }
}

}  // namespace

void Store::update(const int32_t* tables, const int64_t* ids, int64_t n, const float* grads, OptKind kind,
                   const std::vector<double>& hyper, bool has_padding, int64_t padding_idx) {
  std::lock_guard<std::mutex> lock(mu_);
  if (hyper.size() != hyper_count(kind)) throw std::invalid_argument("update: wrong number of hyperparameters");
  const int64_t need = dim_ * (1 + state_columns(kind, hyper));
  if (need > row_floats_)
    throw std::invalid_argument("the optimizer keeps " + std::to_string(state_columns(kind, hyper)) +
                                " state column(s) per value column, but the rows hold " +
                                std::to_string(row_floats_ / dim_ - 1) +
                                ": set size_factor >= " + std::to_string(need / dim_) + " in the store options");
  check_keys(tables, ids, n, has_padding, padding_idx);
  Backing& b = *backing_;
  std::vector<int64_t> slots;
  resolve_or_init(b, tables, ids, n, has_padding, padding_idx, slots);
  // duplicates accumulate (as a dense embedding's gradient does), in batch order
  uint64_t cap = 16;
  while (cap < static_cast<uint64_t>(n) * 2) cap <<= 1;
  std::vector<int64_t> bucket_slot(cap, -1);
  std::vector<int64_t> bucket_uniq(cap, 0);
  std::vector<int64_t> uniq;
  std::vector<float> acc;
  uniq.reserve(static_cast<size_t>(n));
  acc.reserve(static_cast<size_t>(n * dim_));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t s = slots[i];
    if (s < 0) continue;  // padding
    uint64_t bk = mix(static_cast<uint64_t>(s)) & (cap - 1);
    while (bucket_slot[bk] >= 0 && bucket_slot[bk] != s) bk = (bk + 1) & (cap - 1);
    const float* g = grads + i * dim_;
    if (bucket_slot[bk] < 0) {
      bucket_slot[bk] = s;
      bucket_uniq[bk] = static_cast<int64_t>(uniq.size());
      uniq.push_back(s);
      acc.insert(acc.end(), g, g + dim_);
    } else {
      float* a = acc.data() + bucket_uniq[bk] * dim_;
      for (int64_t j = 0; j < dim_; ++j) a[j] += g[j];
    }
  }
  const bool fast_adam = kind == OptKind::kAdam && hyper[5] == 0.0 && hyper[6] == 0.0;
  const AdamStep adam(kind == OptKind::kAdam ? hyper : std::vector<double>(9, 0.5));
  auto apply_one = [&](size_t u, unsigned char* raw, std::vector<float>& tmp) {
    {
      const float* g = acc.data() + static_cast<int64_t>(u) * dim_;
      if (elem_ == 4 && fast_adam) {
        adam.apply(dim_, reinterpret_cast<float*>(raw), g);
      } else if (elem_ == 4) {
        apply_row(kind, hyper, dim_, reinterpret_cast<float*>(raw), g);  // rows of floats are 4-byte aligned
      } else {  // float16 rows: updated in float32, stored rounded
        b.decode(tmp.data(), raw, row_floats_);
        apply_row(kind, hyper, dim_, tmp.data(), g);
        b.encode(raw, tmp.data(), row_floats_);
      }
    }
  };
  // Large batches (or cache windows) are updated by two threads: the rows are distinct and stay put while the
  // window is applied, and the update is bound by memory latency, which a second thread overlaps.
  const int64_t two_threads = cached_ ? 2048 : 8192;
  std::vector<float> scratch(static_cast<size_t>(row_floats_)), scratch2(scratch.size());
  b.rows_windows(uniq.data(), static_cast<int64_t>(uniq.size()), true,
                 [&](int64_t lo, int64_t hi, unsigned char* const* raws) {
    auto range = [&](int64_t a, int64_t c, std::vector<float>& tmp) {
      for (int64_t u = a; u < c; ++u) apply_one(static_cast<size_t>(u), raws[u - lo], tmp);
    };
    if (hi - lo < two_threads) return range(lo, hi, scratch);
    const int64_t mid = lo + (hi - lo) / 2;
    std::exception_ptr err;
    std::thread helper([&] {
      try {
        range(mid, hi, scratch2);
      } catch (...) {
        err = std::current_exception();
      }
    });
    try {
      range(lo, mid, scratch);
    } catch (...) {
      helper.join();
      throw;
    }
    helper.join();
    if (err) std::rethrow_exception(err);
  });
}

int64_t Store::export_rows(int64_t start, int64_t count, int32_t* tables, int64_t* ids, float* rows) {
  std::lock_guard<std::mutex> lock(mu_);
  const Backing& b = *backing_;
  if (start < 0 || count < 0) throw std::out_of_range("export_rows: negative range");
  const int64_t end = std::min(b.size(), start + count);
  for (int64_t s = start; s < end; ++s) {
    tables[s - start] = b.slot_table[s];
    ids[s - start] = b.slot_id[s];
    b.peek(s, rows + (s - start) * row_floats_);
  }
  return std::max<int64_t>(0, end - start);
}

void Store::import_rows(const int32_t* tables, const int64_t* ids, int64_t n, const float* rows) {
  std::lock_guard<std::mutex> lock(mu_);
  check_keys(tables, ids, n, false, 0);
  Backing& b = *backing_;
  std::vector<int64_t> slots;
  resolve(b, tables, ids, n, false, 0, capacity_, [](int32_t, int64_t, unsigned char*) {}, slots);
  for (int64_t i = 0; i < n; ++i) b.encode(b.row(slots[i], true), rows + i * row_floats_, row_floats_);
}

void Store::save(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  const Backing& b = *backing_;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error(errno_text("cannot create snapshot file", path));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> guard(f, std::fclose);
  SnapshotHeader hdr{};
  std::memcpy(hdr.magic, kMagic, 8);
  hdr.version = kVersion;
  hdr.header_bytes = sizeof(SnapshotHeader);
  hdr.dim = dim_;
  hdr.row_floats = row_floats_;
  hdr.num_keys = b.size();
  write_all(f, &hdr, sizeof hdr, path);
  Checksum sum;
  const size_t n = static_cast<size_t>(b.size());
  write_all(f, b.slot_table.data(), n * 4, path);
  sum.add(b.slot_table.data(), n * 4);
  write_all(f, b.slot_id.data(), n * 8, path);
  sum.add(b.slot_id.data(), n * 8);
  std::vector<float> buf(static_cast<size_t>(4096 * row_floats_));
  for (int64_t s0 = 0; s0 < b.size(); s0 += 4096) {
    const int64_t cnt = std::min<int64_t>(4096, b.size() - s0);
    for (int64_t s = 0; s < cnt; ++s) b.peek(s0 + s, buf.data() + s * row_floats_);
    write_all(f, buf.data(), static_cast<size_t>(cnt * row_floats_) * 4, path);
    sum.add(buf.data(), static_cast<size_t>(cnt * row_floats_) * 4);
  }
  hdr.checksum = sum.h;
  if (std::fseek(f, 0, SEEK_SET) != 0) throw std::runtime_error(errno_text("cannot seek in", path));
  write_all(f, &hdr, sizeof hdr, path);
  if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) throw std::runtime_error(errno_text("cannot sync", path));
  guard.reset();
}

void Store::load(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(errno_text("cannot open snapshot file", path));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> guard(f, std::fclose);
  SnapshotHeader hdr{};
  read_all(f, &hdr, sizeof hdr, path);
  if (std::memcmp(hdr.magic, kMagic, 8) != 0 || hdr.version != kVersion || hdr.header_bytes != sizeof hdr)
    throw std::runtime_error("'" + path + "' is not an embedding snapshot (bad header)");
  // the embedding_dim is checked by the caller (a table writer may not know it); the row width must match
  if (hdr.row_floats != row_floats_)
    throw std::runtime_error("snapshot '" + path + "' holds rows of " + std::to_string(hdr.row_floats) +
                             " floats, this table's rows have " + std::to_string(row_floats_) +
                             " (embedding_dim x size_factor)");
  struct stat st{};
  const int64_t n = hdr.num_keys;
  if (::fstat(::fileno(f), &st) != 0 || n < 0 ||
      st.st_size != static_cast<off_t>(sizeof hdr + static_cast<uint64_t>(n) * (12 + 4 * row_floats_)))
    throw std::runtime_error("snapshot file '" + path + "' is truncated or has a wrong size");
  if (capacity_ >= 0 && n > capacity_)
    throw std::length_error("snapshot '" + path + "' holds " + std::to_string(n) + " rows, beyond capacity " +
                            std::to_string(capacity_));
  std::vector<int32_t> tables(static_cast<size_t>(n));
  std::vector<int64_t> ids(static_cast<size_t>(n));
  Checksum sum;
  read_all(f, tables.data(), tables.size() * 4, path);
  sum.add(tables.data(), tables.size() * 4);
  read_all(f, ids.data(), ids.size() * 8, path);
  sum.add(ids.data(), ids.size() * 8);
  for (int64_t i = 0; i < n; ++i)
    if (tables[i] < 0 || tables[i] >= num_tables())
      throw std::runtime_error("snapshot '" + path + "' is corrupted (table id out of range)");
  auto fresh = make_backing(generation_ + 1);
  fresh->stats = &stats_;
  std::vector<float> buf(static_cast<size_t>(4096 * row_floats_));
  for (int64_t s0 = 0; s0 < n; s0 += 4096) {
    const int64_t cnt = std::min<int64_t>(4096, n - s0);
    read_all(f, buf.data(), static_cast<size_t>(cnt * row_floats_) * 4, path);
    sum.add(buf.data(), static_cast<size_t>(cnt * row_floats_) * 4);
    for (int64_t s = 0; s < cnt; ++s) {
      if (fresh->find(tables[s0 + s], ids[s0 + s]) >= 0)
        throw std::runtime_error("snapshot '" + path + "' is corrupted (duplicate key)");
      fresh->encode(fresh->append(tables[s0 + s], ids[s0 + s]), buf.data() + s * row_floats_, row_floats_);
    }
  }
  if (sum.h != hdr.checksum) throw std::runtime_error("snapshot '" + path + "' is corrupted (checksum mismatch)");
  backing_ = std::move(fresh);
  ++generation_;
}

int64_t Store::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return backing_->size();
}

LogStats Store::log_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return backing_->log ? backing_->log->stats() : LogStats{};
}

void Store::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  backing_->flush();
}

}  // namespace flow_embedding
