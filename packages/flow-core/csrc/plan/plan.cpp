#include "plan.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "../autograd/grad_mode.h"
#include "../dispatch/autocast.h"
#include "../dispatch/dispatch.h"
#include "../ops/functions.h"

namespace flow::plan {
namespace {

// A meta tensor with t's geometry (constants keep their strides, so layouts follow as in eager).
Tensor meta_like(const Shape& sizes, const Shape& strides, DType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = sizes;
  impl->strides = strides;
  impl->dtype = dtype;
  impl->device = Device{DeviceType::Meta, -1};
  impl->refresh_geometry();
  return Tensor(std::move(impl));
}

// Whether the kernel run of a step allocates fresh outputs (an out-kernel on the CPU): only those may live in
// the arena. Views, compositions and in-place variants return or write tensors that may alias their inputs.
bool makes_fresh_outputs(const OpDef& op) {
  return !op.functional && !op.has(kComposite) && !op.has(kView) && op.out_kernel[static_cast<int>(DeviceType::CPU)];
}

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
  void unite(int a, int b) { parent[find(a)] = find(b); }
};

[[noreturn]] void rethrow_in_step(const Error& e, size_t k, const OpDef& op) {
  throw Error(e.kind(), "plan step " + std::to_string(k) + " (" + op.name + "): " + e.what());
}

// A plan runs below interception: the modes active where it is finalized or run (the tracer that built it, a
// profiler) see the plan's caller, not its steps, and composites' inner ops reach kernels directly.
struct NoModes {
  int saved = dispatch::mode_depth();
  NoModes() { dispatch::mode_depth() = 0; }
  ~NoModes() { dispatch::mode_depth() = saved; }
  NoModes(const NoModes&) = delete;
  NoModes& operator=(const NoModes&) = delete;
};

}  // namespace

namespace {

// One greedy placement of the buffers in `order`: each goes to the lowest offset (first fit) or into the smallest
// gap (best fit) among the ranges of the already placed buffers alive at the same time.
int64_t place_in_order(const std::vector<std::pair<int, int>>& intervals, const std::vector<int64_t>& size,
                       const std::vector<size_t>& order, bool best_fit, std::vector<int64_t>& offsets) {
  offsets.assign(intervals.size(), -1);
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;
  int64_t total = 0;
  for (size_t i : order) {
    busy.clear();
    for (size_t j : placed)
      if (intervals[j].first <= intervals[i].second && intervals[i].first <= intervals[j].second)
        busy.push_back({offsets[j], offsets[j] + size[j]});
    std::sort(busy.begin(), busy.end());
    int64_t at = -1, best_gap = -1, end = 0;
    for (const auto& [lo, hi] : busy) {
      if (lo - end >= size[i] && (!best_fit || best_gap < 0 || lo - end < best_gap)) {
        at = end;
        best_gap = lo - end;
        if (!best_fit) break;
      }
      end = std::max(end, hi);
    }
    if (at < 0) at = end;
    offsets[i] = at;
    total = std::max(total, at + size[i]);
    placed.push_back(i);
  }
  return total;
}

}  // namespace

int64_t assign_offsets(const std::vector<std::pair<int, int>>& intervals, const std::vector<int64_t>& bytes,
                       std::vector<int64_t>& offsets, int64_t align, bool search) {
  const size_t n = intervals.size();
  std::vector<int64_t> size(n);
  for (size_t i = 0; i < n; ++i) size[i] = (bytes[i] + align - 1) / align * align;
  auto sorted = [&](auto less) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), less);
    return order;
  };
  // largest first, then by birth: first-fit then leaves few holes big buffers cannot use
  const std::vector<size_t> largest = sorted([&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  int64_t total = place_in_order(intervals, size, largest, false, offsets);
  if (!search) return total;
  auto life = [&](size_t i) { return static_cast<int64_t>(intervals[i].second - intervals[i].first + 1); };
  const std::vector<std::vector<size_t>> orders = {
      largest,
      sorted([&](size_t a, size_t b) {
    return intervals[a].first != intervals[b].first ? intervals[a].first < intervals[b].first : size[a] > size[b];
  }),
      sorted([&](size_t a, size_t b) { return size[a] * life(a) > size[b] * life(b); }),
      sorted([&](size_t a, size_t b) {
    return intervals[a].second != intervals[b].second ? intervals[a].second > intervals[b].second : size[a] > size[b];
  }),
  };
  std::vector<int64_t> trial;
  for (const auto& order : orders)
    for (bool best_fit : {false, true}) {
      const int64_t t = place_in_order(intervals, size, order, best_fit, trial);
      if (t < total) {
        total = t;
        offsets = trial;
      }
    }
  return total;
}

void Plan::check_slot(int s, const char* what) const {
  FLOW_CHECK(s >= 0 && s < num_slots_, Index, "Plan: ", what, " slot ", s, " is not a value of this plan (it has ",
             num_slots_, ")");
}

int Plan::add_input(const Shape& sizes, DType dtype, Device device) {
  FLOW_RUNTIME_CHECK(!finalized_, "Plan: add_input after finalize()");
  int s = new_slot();
  input_slots_.push_back({s, TensorMeta{sizes, dtype, device}});
  defined_at_.push_back(-1);
  return s;
}

int Plan::add_constant(Tensor t) {
  FLOW_RUNTIME_CHECK(!finalized_, "Plan: add_constant after finalize()");
  FLOW_VALUE_CHECK(t.defined(), "Plan: add_constant needs a tensor");
  int s = new_slot();
  constants_.push_back({s, std::move(t)});
  defined_at_.push_back(-1);
  return s;
}

std::vector<int> Plan::add_step(const OpDef& op, std::vector<int> inputs, Attrs attrs, int num_outputs) {
  FLOW_RUNTIME_CHECK(!finalized_, "Plan: add_step after finalize()");
  const OpDef& def = op.functional ? *op.functional : op;
  for (int s : inputs) {
    if (s == -1) continue;
    check_slot(s, (op.name + " input").c_str());
  }
  if (attrs.schema == nullptr || attrs.values.size() < def.schema.attr_args.size()) dispatch::fill_defaults(def, attrs);
  int n = op.functional ? 1 : def.schema.num_outputs;
  if (n < 0) {
    FLOW_VALUE_CHECK(num_outputs >= 0, "Plan: ", op.name, " returns a list of tensors: give num_outputs");
    n = num_outputs;
  } else {
    FLOW_VALUE_CHECK(num_outputs < 0 || num_outputs == n, "Plan: ", op.name, " returns ", n, " outputs, not ",
                     num_outputs);
  }
  Step st;
  st.op = &op;
  st.inputs = std::move(inputs);
  st.attrs = std::move(attrs);
  for (int k = 0; k < n; ++k) {
    st.outputs.push_back(new_slot());
    defined_at_.push_back(static_cast<int>(steps_.size()));
  }
  st.offsets.assign(n, -1);
  steps_.push_back(std::move(st));
  return steps_.back().outputs;
}

void Plan::set_outputs(std::vector<int> slots) {
  FLOW_RUNTIME_CHECK(!finalized_, "Plan: set_outputs after finalize()");
  for (int s : slots) check_slot(s, "output");
  outputs_ = std::move(slots);
}

void Plan::set_offsets(size_t step, std::vector<int64_t> offsets) {
  FLOW_RUNTIME_CHECK(!finalized_, "Plan: set_offsets after finalize()");
  FLOW_CHECK(step < steps_.size(), Index, "Plan: step ", step, " out of range (", steps_.size(), " steps)");
  FLOW_VALUE_CHECK(offsets.size() == steps_[step].outputs.size(), "Plan: step ", step, " has ",
                   steps_[step].outputs.size(), " outputs, got ", offsets.size(), " offsets");
  for (int64_t o : offsets) FLOW_VALUE_CHECK(o >= -1, "Plan: an arena offset must be >= 0 (or -1 for none)");
  steps_[step].offsets = std::move(offsets);
  has_caller_offsets_ = true;
}

std::optional<TensorMeta> Plan::slot_meta(int slot) const {
  check_slot(slot, "queried");
  return finalized_ ? slot_metas_[slot] : std::nullopt;
}

void Plan::finalize(bool compress_memory) {
  FLOW_RUNTIME_CHECK(!finalized_, "Plan: finalize() called twice");
  autograd::AutoGradMode no_grad(false);
  autocast::DisableGuard no_autocast;
  NoModes no_modes;
  // Evaluate every step on meta tensors: checks the plan and gives each value's metadata. A step whose
  // outputs depend on values (nonzero, unique) leaves them, and what is computed from them, unknown.
  std::vector<Tensor> mv(num_slots_);
  slot_metas_.assign(num_slots_, std::nullopt);
  for (const Input& in : input_slots_) {
    mv[in.slot] = meta_like(in.meta.sizes, contiguous_strides(in.meta.sizes), in.meta.dtype);
    slot_metas_[in.slot] = in.meta;
  }
  for (const auto& [s, t] : constants_) {
    mv[s] = meta_like(t.sizes(), t.strides(), t.dtype());
    mv[s].impl()->is_wrapped_number = t.impl()->is_wrapped_number;  // promotes as the real constant does
    slot_metas_[s] = TensorMeta{t.sizes(), t.dtype(), t.device()};
  }
  for (size_t k = 0; k < steps_.size(); ++k) {
    Step& st = steps_[k];
    const OpDef& def = st.op->functional ? *st.op->functional : *st.op;
    TensorList in;
    bool known = true;
    Device real{};  // the device the step will run on
    bool have_device = false;
    for (int s : st.inputs) {
      if (s == -1) {
        in.emplace_back();
        continue;
      }
      FLOW_RUNTIME_CHECK(defined_at_[s] < static_cast<int>(k), "Plan: step ", k, " (", st.op->name, ") reads slot ", s,
                         " before the step that makes it");
      known = known && mv[s].defined();
      in.push_back(mv[s]);
      if (!have_device && slot_metas_[s]) {
        real = slot_metas_[s]->device;
        have_device = true;
      }
    }
    Attrs a = st.attrs;
    if (def.device_attr >= 0)
      if (const auto* d = std::get_if<Device>(&a.values[def.device_attr])) real = *d;
    if (def.device_attr >= 0) a.values[def.device_attr] = Device{DeviceType::Meta, -1};
    TensorList out;
    if (known) {
      try {
        out = dispatch::call(*st.op, in, a);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::NotImplemented) rethrow_in_step(e, k, *st.op);
        out.clear();  // value-dependent: unknown from here on
      } catch (const std::exception& e) {
        rethrow_in_step(Error(ErrorKind::Runtime, e.what()), k, *st.op);
      }
    }
    if (!out.empty())
      FLOW_RUNTIME_CHECK(out.size() == st.outputs.size(), "plan step ", k, " (", st.op->name, "): returned ",
                         out.size(), " outputs, the plan expects ", st.outputs.size());
    st.metas.clear();
    for (size_t j = 0; j < st.outputs.size(); ++j) {
      if (out.empty()) continue;
      mv[st.outputs[j]] = out[j];
      TensorMeta m{out[j].sizes(), out[j].dtype(), real};
      slot_metas_[st.outputs[j]] = m;
      st.metas.push_back(m);
    }
  }
  // Where each slot is last read: it is dropped right after that step (outputs are kept).
  std::vector<int> last_use(num_slots_, -1);
  for (size_t k = 0; k < steps_.size(); ++k)
    for (int s : steps_[k].inputs)
      if (s >= 0) last_use[s] = static_cast<int>(k);
  std::vector<bool> is_output(num_slots_, false);
  for (int s : outputs_) is_output[s] = true;
  for (auto& st : steps_) st.release.clear();
  for (int s = 0; s < num_slots_; ++s) {
    if (is_output[s]) continue;
    int at = std::max(last_use[s], defined_at_[s]);
    if (at >= 0) steps_[at].release.push_back(s);
  }
  plan_memory(mv, has_caller_offsets_, compress_memory);
  finalized_ = true;
}

// Values that may share memory form one group (a view, an in-place result, what a composite returns); a group
// with an input, a constant or an output in it lives outside the arena, since the arena is reused by the next
// run. The others' fresh buffers get arena offsets by their group's live interval.
void Plan::plan_memory(const std::vector<Tensor>& mv, bool caller_offsets, bool compress) {
  UnionFind groups(num_slots_);
  for (const Step& st : steps_) {
    if (makes_fresh_outputs(*st.op)) continue;
    for (int o : st.outputs)
      for (int s : st.inputs)
        if (s >= 0) groups.unite(o, s);
  }
  std::vector<bool> pinned(num_slots_, false);
  for (const Input& in : input_slots_) pinned[groups.find(in.slot)] = true;
  for (const auto& c : constants_) pinned[groups.find(c.first)] = true;
  for (int s : outputs_) pinned[groups.find(s)] = true;
  std::vector<int> group_end(num_slots_, -1);
  for (size_t k = 0; k < steps_.size(); ++k) {
    for (int s : steps_[k].inputs)
      if (s >= 0) group_end[groups.find(s)] = std::max(group_end[groups.find(s)], static_cast<int>(k));
    for (int s : steps_[k].outputs)
      group_end[groups.find(s)] = std::max(group_end[groups.find(s)], static_cast<int>(k));
  }
  // candidates: fresh, contiguous, known CPU buffers outside pinned groups
  struct Buf {
    size_t step, out;
    int64_t bytes;
  };
  std::vector<Buf> bufs;
  std::vector<std::pair<int, int>> intervals;
  memory_ = MemoryStats{};
  for (size_t k = 0; k < steps_.size(); ++k) {
    const Step& st = steps_[k];
    for (size_t j = 0; j < st.outputs.size(); ++j) {
      const int s = st.outputs[j];
      const bool fresh = makes_fresh_outputs(*st.op) && j < st.metas.size() && st.metas[j].device.is_cpu() &&
                         mv[s].defined() && mv[s].is_contiguous() && !pinned[groups.find(s)];
      if (!fresh) {
        if (!pinned[groups.find(s)]) ++memory_.unplanned_values;
        continue;
      }
      bufs.push_back({k, j, mv[s].numel() * static_cast<int64_t>(mv[s].itemsize())});
      intervals.push_back({static_cast<int>(k), group_end[groups.find(s)]});
    }
  }
  std::vector<int64_t> bytes;
  for (const Buf& b : bufs) bytes.push_back(b.bytes);
  for (const Buf& b : bufs) memory_.naive_bytes += b.bytes;
  // In-place reuse: an elementwise step whose first input dies there writes its output over that input (same
  // offset), as the op's in-place variant would. `share[i]` is the earlier buffer whose bytes buffer i takes (a
  // chain of such steps all take the first one's), or -1; only the others are placed.
  std::vector<int> share(bufs.size(), -1);
  if (!caller_offsets) {
    std::vector<int> buf_of(num_slots_, -1);
    for (size_t i = 0; i < bufs.size(); ++i) buf_of[steps_[bufs[i].step].outputs[bufs[i].out]] = static_cast<int>(i);
    for (size_t i = 0; i < bufs.size(); ++i) {
      const Step& st = steps_[bufs[i].step];
      if (st.outputs.size() != 1 || !st.op->has(kElementwise) || st.inputs.empty() || st.inputs[0] < 0) continue;
      const int in = st.inputs[0], b = buf_of[in];
      if (b < 0 || bytes[b] != bytes[i] || mv[in].itemsize() != mv[st.outputs[0]].itemsize()) continue;
      const int r = share[b] >= 0 ? share[b] : b;  // buffers only take earlier ones: r is placed itself
      if (intervals[r].second != static_cast<int>(bufs[i].step)) continue;  // read after this step
      // every tensor input has the output's shape (no broadcast an op could expand into its output first) and
      // none but the first is the first's memory
      bool ok = true;
      for (size_t k = 1; k < st.inputs.size() && ok; ++k) {
        const int t = st.inputs[k];
        if (t < 0 || !mv[t].defined() || mv[t].dim() == 0) continue;
        ok = mv[t].sizes() == mv[in].sizes() && groups.find(t) != groups.find(in);
      }
      if (!ok) continue;
      share[i] = r;
      intervals[r].second = intervals[i].second;
    }
  }
  std::vector<size_t> placed;  // the buffers given their own bytes
  for (size_t i = 0; i < bufs.size(); ++i)
    if (share[i] < 0) placed.push_back(i);
  {
    std::vector<int64_t> delta(steps_.size() + 1, 0);  // bytes born at a step, minus those dead after it
    for (size_t i : placed) {
      delta[intervals[i].first] += bytes[i];
      delta[intervals[i].second + 1] -= bytes[i];
    }
    int64_t live = 0;
    for (int64_t d : delta) memory_.live_bytes = std::max(memory_.live_bytes, live += d);
  }
  memory_.arena_values = static_cast<int64_t>(bufs.size());
  if (caller_offsets) {
    // the caller's offsets: only where this planner would also have placed a value, and never overlapping a
    // value alive at the same time
    std::vector<int64_t> given(bufs.size(), -1);
    for (size_t i = 0; i < bufs.size(); ++i) given[i] = steps_[bufs[i].step].offsets[bufs[i].out];
    for (size_t k = 0; k < steps_.size(); ++k)
      for (size_t j = 0; j < steps_[k].offsets.size(); ++j) {
        bool candidate = false;
        for (const Buf& b : bufs) candidate |= b.step == k && b.out == j;
        FLOW_VALUE_CHECK(steps_[k].offsets[j] < 0 || candidate, "Plan: step ", k, " (", steps_[k].op->name, ") output ",
                         j,
                         " cannot live in the arena (it escapes, aliases another value or its "
                         "shape is unknown)");
      }
    int64_t total = 0;
    memory_.arena_values = 0;
    for (size_t i = 0; i < bufs.size(); ++i) {
      if (given[i] < 0) continue;
      ++memory_.arena_values;
      FLOW_VALUE_CHECK(given[i] % 64 == 0, "Plan: arena offsets must be multiples of 64, got ", given[i]);
      total = std::max(total, given[i] + bytes[i]);
      for (size_t j = 0; j < i; ++j) {
        if (given[j] < 0) continue;
        bool live_together = intervals[j].first <= intervals[i].second && intervals[i].first <= intervals[j].second;
        bool overlap = given[j] < given[i] + bytes[i] && given[i] < given[j] + bytes[j];
        FLOW_VALUE_CHECK(!(live_together && overlap), "Plan: arena offsets of steps ", bufs[j].step, " and ",
                         bufs[i].step, " overlap while both values are alive");
      }
    }
    memory_.arena_bytes = total;
    return;
  }
  std::vector<std::pair<int, int>> placed_intervals;
  std::vector<int64_t> placed_bytes, placed_offsets, offsets(bufs.size(), -1);
  for (size_t i : placed) {
    placed_intervals.push_back(intervals[i]);
    placed_bytes.push_back(bytes[i]);
  }
  memory_.arena_bytes = assign_offsets(placed_intervals, placed_bytes, placed_offsets, 64, compress);
  for (size_t k = 0; k < placed.size(); ++k) offsets[placed[k]] = placed_offsets[k];
  for (size_t i = 0; i < bufs.size(); ++i) {
    if (share[i] >= 0) offsets[i] = offsets[share[i]];
    steps_[bufs[i].step].offsets[bufs[i].out] = offsets[i];
  }
}

std::shared_ptr<Storage> Plan::acquire_arena() const {
  std::lock_guard<std::mutex> lock(arena_mu_);
  // reused when only the plan holds it: no output, view or concurrent run still reads it
  if (!arena_ || arena_.use_count() > 1) arena_ = empty({memory_.arena_bytes}, DType::UInt8).impl()->storage;
  return arena_;
}

TensorList Plan::run(const TensorList& inputs, std::vector<int64_t>* step_ns) const {
  FLOW_RUNTIME_CHECK(finalized_, "Plan: run() before finalize()");
  FLOW_TYPE_CHECK(inputs.size() == input_slots_.size(), "Plan: expected ", input_slots_.size(), " inputs, got ",
                  inputs.size());
  std::vector<Tensor> v(num_slots_);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    const TensorMeta& m = input_slots_[i].meta;
    FLOW_TYPE_CHECK(t.defined(), "Plan: input ", i, " is None, expected a tensor");
    FLOW_RUNTIME_CHECK(t.sizes() == m.sizes && t.dtype() == m.dtype && t.device() == m.device, "Plan: input ", i,
                       " is ", shape_str(t.sizes()), " ", torch_type_name(t.dtype()), " on ", t.device().str(),
                       ", the plan was built for ", shape_str(m.sizes), " ", torch_type_name(m.dtype), " on ",
                       m.device.str());
    v[input_slots_[i].slot] = t;
  }
  for (const auto& [s, t] : constants_) v[s] = t;
  autograd::AutoGradMode no_grad(false);
  autocast::DisableGuard no_autocast;
  NoModes no_modes;
  std::shared_ptr<Storage> arena = memory_.arena_bytes > 0 ? acquire_arena() : nullptr;
  TensorList in, out;
  if (step_ns) step_ns->assign(steps_.size(), 0);
  for (size_t k = 0; k < steps_.size(); ++k) {
    const Step& st = steps_[k];
    const auto t0 = step_ns ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const OpDef& op = *st.op;
    in.clear();
    for (int s : st.inputs) in.push_back(s >= 0 ? v[s] : Tensor());
    try {
      if (op.functional) {
        // in place: the checks ran at finalize(); write straight into self when the kernel can
        const OpDef& f = *op.functional;
        const Tensor& self = in.at(0);
        const int d = static_cast<int>(dispatch::kernel_device(f, in, st.attrs).type);
        if (f.out_kernel[d] && !st.metas.empty() && st.metas[0].dtype == self.dtype()) {
          TensorList o{self};
          dispatch::run_kernel(f, in, st.attrs, &o);
        } else {
          ops::copy_into(self, dispatch::run_kernel(f, in, st.attrs).at(0));
        }
        self.bump_version();
        out.assign(1, self);
      } else if (op.has(kComposite)) {
        out = dispatch::call(op, in, st.attrs);
      } else {
        // a step with no outputs (an optimizer update) has nothing to place: its own kernel runs
        bool into_arena = arena && !st.outputs.empty() && makes_fresh_outputs(op) &&
                          st.metas.size() == st.outputs.size() &&
                          std::all_of(st.offsets.begin(), st.offsets.end(), [](int64_t o) { return o >= 0; });
        if (into_arena && op.has(kElementwise))  // eager gives elementwise results their inputs' layout
          for (const Tensor& t : in) into_arena = into_arena && (!t.defined() || t.is_contiguous());
        if (into_arena) {
          out.clear();
          for (size_t j = 0; j < st.outputs.size(); ++j) {
            const TensorMeta& m = st.metas[j];
            auto impl = std::make_shared<TensorImpl>();
            impl->storage = arena;
            impl->sizes = m.sizes;
            impl->strides = contiguous_strides(m.sizes);
            impl->offset = st.offsets[j] / static_cast<int64_t>(itemsize(m.dtype));
            impl->dtype = m.dtype;
            impl->device = m.device;
            impl->refresh_geometry();
            out.emplace_back(std::move(impl));
          }
          op.out_kernel[static_cast<int>(DeviceType::CPU)](in, out, st.attrs);
        } else {
          out = dispatch::run_kernel(op, in, st.attrs);
        }
      }
    } catch (const Error& e) {
      rethrow_in_step(e, k, op);
    } catch (const std::exception& e) {
      rethrow_in_step(Error(ErrorKind::Runtime, e.what()), k, op);
    }
    FLOW_RUNTIME_CHECK(out.size() >= st.outputs.size(), "plan step ", k, " (", op.name, "): returned ", out.size(),
                       " outputs, the plan expects ", st.outputs.size());
    for (size_t j = 0; j < st.outputs.size(); ++j) v[st.outputs[j]] = std::move(out[j]);
    for (int s : st.release) v[s] = Tensor();
    if (step_ns)
      (*step_ns)[k] =
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  }
  TensorList result;
  result.reserve(outputs_.size());
  for (int s : outputs_) result.push_back(v[s]);
  return result;
}

}  // namespace flow::plan
