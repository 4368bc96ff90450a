// A key-value store for one shard of a OneEmbedding: keys are (table id, id), values are rows of `row_floats`
// float32 (the embedding columns first, then the optimizer's state columns), stored as float32 or, with `half`, as
// float16 (updates compute in float32 and round once when storing).
//
// Two tiers:
//   full   - every row in RAM (chunked, so growing never copies rows); inserting past `capacity` is an error.
//   cached - a segmented-LRU cache (TinyLFU admission) of `cache_rows` rows in RAM over a data file holding
//            every row, an append-only log (row_log.h): evicted dirty rows are appended and written a segment at
//            a time.
// The id -> slot index is an open-addressing hash table (linear probing) kept in RAM in both tiers.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "row_log.h"

namespace flow_embedding {

enum class InitKind : int { kUniform = 0, kNormal = 1, kConstant = 2 };

// One column range of a table's value with its initializer: uniform(a, b), normal(mean a, std b), constant(a).
struct InitSegment {
  int64_t start = 0;
  int64_t len = 0;
  InitKind kind = InitKind::kUniform;
  double a = 0.0;
  double b = 0.0;
};

enum class OptKind : int { kSgd = 0, kAdam = 1, kAdagrad = 2, kFtrl = 3 };

struct StoreStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t evictions = 0;
  int64_t writebacks = 0;
};

// The tier's rows and the index over them. A snapshot load builds a new Backing and swaps it in only once it is
// complete, so a failed load leaves the live table untouched.
struct Backing;

class Store {
 public:
  Store(int64_t dim, int64_t row_floats, int64_t capacity, bool cached, int64_t cache_rows, std::string data_dir,
        int64_t block_size, uint64_t seed, std::vector<std::vector<InitSegment>> tables, bool half = false,
        bool write_back_thread = false);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // out[i, :dim] = value of (tables[i], ids[i]); unseen keys are inserted and initialised first. Keys equal to
  // `padding_idx` (when has_padding) give zero rows and are not inserted.
  void lookup(const int32_t* tables, const int64_t* ids, int64_t n, float* out, bool has_padding, int64_t padding_idx);
  // Sums the gradient rows of equal keys, then applies the optimizer `kind` with `hyper` to each key once.
  void update(const int32_t* tables, const int64_t* ids, int64_t n, const float* grads, OptKind kind,
              const std::vector<double>& hyper, bool has_padding, int64_t padding_idx);
  // Rows (all row_floats columns) of slots [start, start + count): their keys and values.
  int64_t export_rows(int64_t start, int64_t count, int32_t* tables, int64_t* ids, float* rows);
  // Inserts or overwrites whole rows.
  void import_rows(const int32_t* tables, const int64_t* ids, int64_t n, const float* rows);

  void save(const std::string& file);
  void load(const std::string& file);

  int64_t size() const;
  int64_t dim() const { return dim_; }
  int64_t row_floats() const { return row_floats_; }
  int64_t num_tables() const { return static_cast<int64_t>(tables_.size()); }
  StoreStats stats() const { return stats_; }
  void reset_stats() { stats_ = StoreStats{}; }
  // The cached tier's working file (all zero in the full tier).
  LogStats log_stats() const;
  void flush();

 private:
  void check_keys(const int32_t* tables, const int64_t* ids, int64_t n, bool has_padding, int64_t padding_idx) const;
  std::unique_ptr<Backing> make_backing(int generation) const;
  void init_row(int32_t table, int64_t id, float* row) const;
  // Slots of n keys in `b` (-2 for padding), inserting unseen keys with their initial values: the one way lookup
  // and update find their rows, so both initialise a new row identically.
  void resolve_or_init(Backing& b, const int32_t* tables, const int64_t* ids, int64_t n, bool has_padding,
                       int64_t padding_idx, std::vector<int64_t>& slots) const;

  int64_t dim_;
  int64_t row_floats_;
  int64_t elem_;  // bytes per stored value: 4 (float32) or 2 (float16 storage)
  bool write_back_thread_;  // cached tier: full log segments are written by a background thread
  int64_t capacity_;
  bool cached_;
  int64_t cache_rows_;
  std::string data_dir_;
  int64_t block_size_;
  uint64_t seed_;
  std::vector<std::vector<InitSegment>> tables_;
  std::unique_ptr<Backing> backing_;
  int generation_ = 0;
  StoreStats stats_;
  mutable std::mutex mu_;
};

// The deterministic initial value of column `col` of (seed, table, id) under `seg` (exposed for tests).
float initial_value(uint64_t seed, int32_t table, int64_t id, int64_t col, const InitSegment& seg);

}  // namespace flow_embedding
