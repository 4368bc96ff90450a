// The plan executor: a precompiled list of kernel calls over value slots, run in one call with no Python,
// no dispatcher and no autograd bookkeeping per op. flow-graph lowers its IR to a Plan; the executor belongs
// to the core because it calls the registry's kernels.
//
// A plan's values live in numbered slots: run()'s inputs, constants bound at build time (parameters and
// buffers, shared with the eager modules, so an optimizer step in the plan updates them in place) and step
// results. Steps are registry ops with their attributes parsed once. finalize() evaluates the plan on meta
// tensors (static shapes): it checks every step, computes where each slot dies (so memory is returned as soon
// as possible) and, unless the caller gave its own offsets, assigns the intermediates a place in one arena by
// their live intervals, so a run allocates one block instead of one per op.
#pragma once
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "../ops/registry.h"

namespace flow::plan {

struct Step {
  const OpDef* op = nullptr;  // as called: an in-place variant mutates inputs[0] and outputs it
  std::vector<int> inputs;    // slots; -1: an absent optional input
  Attrs attrs;
  std::vector<int> outputs;          // the slots the results go to
  std::vector<int64_t> offsets;      // per output: byte offset in the arena, -1: allocated when it runs
  std::vector<TensorMeta> metas;     // per output, from finalize()'s meta evaluation (empty when unknown)
  std::vector<int> release;          // slots whose last use is this step: dropped right after it
};

struct MemoryStats {
  int64_t arena_bytes = 0;       // the arena's size
  int64_t arena_values = 0;      // intermediates placed in it
  int64_t unplanned_values = 0;  // intermediates allocated as they are made (unknown shapes, aliases, layouts)
  int64_t naive_bytes = 0;       // what the planned values would take with no reuse
  int64_t live_bytes = 0;        // the most bytes of them alive at one step: no arena can be smaller
};

class Plan {
 public:
  // A run() argument of this shape and dtype (checked at every run).
  int add_input(const Shape& sizes, DType dtype, Device device);
  // A tensor bound into the plan (shared, not copied).
  int add_constant(Tensor t);
  // A step; returns its output slots. num_outputs is needed for ops returning Tensor[] (-1 in the schema).
  std::vector<int> add_step(const OpDef& op, std::vector<int> inputs, Attrs attrs, int num_outputs = -1);
  void set_outputs(std::vector<int> slots);
  // Arena offsets chosen by the caller (a memory-planning pass): per step, per output, -1 for none. Given
  // before finalize(), which then checks them instead of planning its own.
  void set_offsets(size_t step, std::vector<int64_t> offsets);
  // `compress_memory`: plan the arena with assign_offsets' search (see there).
  void finalize(bool compress_memory = false);
  bool finalized() const { return finalized_; }

  // `step_ns`, when given, receives each step's wall time in nanoseconds (profiling the plan as it runs).
  TensorList run(const TensorList& inputs, std::vector<int64_t>* step_ns = nullptr) const;

  const std::vector<Step>& steps() const { return steps_; }
  const std::vector<int>& outputs() const { return outputs_; }
  int num_slots() const { return num_slots_; }
  int num_inputs() const { return static_cast<int>(input_slots_.size()); }
  const MemoryStats& memory() const { return memory_; }
  // The meta of a slot after finalize() (nullopt when unknown).
  std::optional<TensorMeta> slot_meta(int slot) const;

 private:
  struct Input {
    int slot;
    TensorMeta meta;
  };
  int new_slot() { return num_slots_++; }
  void check_slot(int s, const char* what) const;
  void plan_memory(const std::vector<Tensor>& meta_values, bool caller_offsets, bool compress);
  std::shared_ptr<Storage> acquire_arena() const;

  int num_slots_ = 0;
  std::vector<Input> input_slots_;
  std::vector<std::pair<int, Tensor>> constants_;
  std::vector<Step> steps_;
  std::vector<int> outputs_;
  std::vector<int> defined_at_;  // per slot: the step that makes it, -1 for inputs and constants
  std::vector<std::optional<TensorMeta>> slot_metas_;
  bool finalized_ = false;
  bool has_caller_offsets_ = false;
  MemoryStats memory_;
  // The arena of the last run, reused when nothing of it escaped (no output or view still holds it).
  mutable std::shared_ptr<Storage> arena_;
  mutable std::mutex arena_mu_;
};

// Byte offsets for buffers with live intervals [first, last] (step indices, inclusive) and sizes: buffers whose
// intervals overlap get disjoint ranges; aligned to `align`. Returns the arena size. The default is one greedy
// pass (largest first, first fit); `search` also tries other orders (by birth, by size x lifetime, by death)
// with first and best fit and keeps the smallest arena (OneFlow's enable_compress_memory: more planning time
// for less memory; never larger than the default). (Exposed for tests and for passes that want it.)
int64_t assign_offsets(const std::vector<std::pair<int, int>>& intervals, const std::vector<int64_t>& bytes,
                       std::vector<int64_t>& offsets, int64_t align = 64, bool search = false);

}  // namespace flow::plan
