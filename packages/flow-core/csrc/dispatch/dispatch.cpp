#include "dispatch.h"

#include <algorithm>

#include "../autograd/grad_mode.h"
#include "../autograd/node.h"
#include "../core/mem_overlap.h"
#include "../ops/functions.h"
#include "autocast.h"

namespace flow::dispatch {

static InterceptHook g_hook = nullptr;
static thread_local int t_mode_depth = 0;
static thread_local bool t_below_autograd = false;
static thread_local int t_internal_depth = 0;
static CompositeHook g_composite_hook = nullptr;

void set_intercept_hook(InterceptHook hook) { g_hook = hook; }
int& mode_depth() { return t_mode_depth; }
bool below_autograd() { return t_below_autograd; }
BelowAutogradGuard::BelowAutogradGuard(bool below) : prev(t_below_autograd) { t_below_autograd = below; }
BelowAutogradGuard::~BelowAutogradGuard() { t_below_autograd = prev; }
InternalGuard::InternalGuard() { ++t_internal_depth; }
InternalGuard::~InternalGuard() { --t_internal_depth; }
int internal_depth() { return t_internal_depth; }
void set_composite_hook(CompositeHook hook) { g_composite_hook = hook; }

void fill_defaults(const OpDef& op, Attrs& attrs) {
  attrs.schema = &op.schema;
  const auto& args = op.schema.attr_args;
  for (size_t k = attrs.values.size(); k < args.size(); ++k) {
    FLOW_TYPE_CHECK(args[k].has_default || args[k].optional, op.name, "() missing required argument '", args[k].name,
                    "'");
    attrs.values.push_back(parse_default(args[k]));
  }
}

// Kernels read attributes by name in the schema attached to them: attributes built without one (ops::call's
// values, `Attrs{...}` literals), with another op's (a backward passing its forward's attrs on) or with
// defaults missing get `op`'s schema and defaults before anything reads them.
static bool needs_filling(const OpDef& op, const Attrs& attrs) {
  return attrs.schema != &op.schema || attrs.values.size() < op.schema.attr_args.size();
}

static bool any_handler(const TensorList& in) {
  for (const Tensor& t : in)
    if (t.defined() && (t.impl()->py_handler || t.impl()->handler_key)) return true;
  return false;
}

namespace {
struct TensorHandler {
  std::string name;
  int priority = 0;
  TensorHandlerFn fn;
};
std::vector<TensorHandler>& handler_table() {  // index = key - 1
  static auto* t = new std::vector<TensorHandler>();
  return *t;
}
}  // namespace

int register_tensor_handler(const std::string& name, int priority, TensorHandlerFn fn) {
  auto& tab = handler_table();
  for (size_t i = 0; i < tab.size(); ++i)
    if (tab[i].name == name) {
      tab[i].priority = priority;
      tab[i].fn = std::move(fn);
      return static_cast<int>(i) + 1;
    }
  FLOW_RUNTIME_CHECK(tab.size() < 255, "register_tensor_handler: at most 255 tensor handlers");
  tab.push_back({name, priority, std::move(fn)});
  return static_cast<int>(tab.size());
}

void set_handler_key(const Tensor& t, int key) {
  FLOW_RUNTIME_CHECK(key >= 0 && key <= static_cast<int>(handler_table().size()),
                     "set_handler_key: no tensor "
                     "handler has key ",
                     key);
  t.impl()->handler_key = static_cast<uint8_t>(key);
}

std::vector<TensorHandlerInfo> tensor_handlers() {
  std::vector<TensorHandlerInfo> out;
  const auto& tab = handler_table();
  for (size_t i = 0; i < tab.size(); ++i) out.push_back({tab[i].name, tab[i].priority, static_cast<int>(i) + 1});
  return out;
}

bool intercepted(const TensorList& inputs) { return t_mode_depth > 0 || any_handler(inputs); }

// The handler chain (see dispatch.h): modes, C++ tensor handlers by priority, Python subclasses.
static TensorList intercept(const OpDef& op, const TensorList& inputs, const Attrs& attrs) {
  if (t_mode_depth > 0 && g_hook) return g_hook(op, inputs, attrs);
  const TensorHandler* best = nullptr;
  bool python = false;
  const auto& tab = handler_table();
  for (const Tensor& t : inputs) {
    if (!t.defined()) continue;
    python = python || t.impl()->py_handler;
    int k = t.impl()->handler_key;
    if (k > 0 && k <= static_cast<int>(tab.size()) && (!best || tab[k - 1].priority > best->priority))
      best = &tab[k - 1];
  }
  if (best) {
    BelowAutogradGuard below;
    return best->fn(op, inputs, attrs);
  }
  if (python && g_hook) return g_hook(op, inputs, attrs);
  return run_kernel(op, inputs, attrs);
}

// The memory layout of an elementwise result, PyTorch's TensorIterator rule: the output's dims are ordered
// (fastest first) by the inputs' strides, the first input with a definite preference deciding each pair
// (broadcast dims and equal strides abstain; equal strides put the smaller dim first). Contiguous inputs
// give a contiguous result; a channels-last or transposed input passes its layout on.
static Tensor empty_like_inputs(const TensorMeta& m, const TensorList& inputs, Device dev) {
  const Shape& shape = m.sizes;
  int64_t nd = static_cast<int64_t>(shape.size());
  bool all_contiguous = true;
  for (const Tensor& t : inputs)
    if (t.defined() && t.dim() > 0 && !t.is_contiguous()) all_contiguous = false;
  if (all_contiguous || nd < 2) return empty(shape, m.dtype, dev);
  // each input's strides aligned to the output's dims, 0 where it broadcasts
  std::vector<std::vector<int64_t>> st;
  for (const Tensor& t : inputs) {
    if (!t.defined() || t.dim() == 0 || t.dim() > nd) continue;
    std::vector<int64_t> s(nd, 0);
    int64_t off = nd - t.dim();
    for (int64_t i = 0; i < t.dim(); ++i) s[off + i] = (t.size(i) == 1 && shape[off + i] != 1) ? 0 : t.stride(i);
    st.push_back(std::move(s));
  }
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const auto& s : st) {
      if (s[d0] == 0 || s[d1] == 0) continue;
      if (s[d0] < s[d1]) return -1;
      if (s[d0] > s[d1]) return 1;
      if (shape[d0] > shape[d1]) return 1;
    }
    return 0;
  };
  std::vector<int64_t> perm(nd);  // fastest dim first
  for (int64_t i = 0; i < nd; ++i) perm[i] = nd - 1 - i;
  for (int64_t i = 1; i < nd; ++i) {
    int64_t d1 = i;
    for (int64_t d0 = i - 1; d0 >= 0; --d0) {
      int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  bool identity = true;
  for (int64_t i = 0; i < nd; ++i) identity = identity && perm[i] == nd - 1 - i;
  if (identity) return empty(shape, m.dtype, dev);
  Shape strides(nd);
  int64_t cur = 1;
  for (int64_t d : perm) {
    strides[d] = cur;
    cur *= std::max<int64_t>(shape[d], 1);
  }
  return empty_strided(shape, strides, m.dtype, dev);
}

Device kernel_device(const OpDef& op, const TensorList& inputs, const Attrs& attrs) {
  const int k = op.device_attr;
  if (k >= 0 && k < static_cast<int>(attrs.values.size()))
    if (const auto* d = std::get_if<Device>(&attrs.values[k])) return *d;
  return common_device(inputs, op.name.c_str());
}

std::vector<TensorMeta> infer_meta(const OpDef& op, const TensorList& inputs, const Attrs& attrs) {
  FLOW_CHECK(static_cast<bool>(op.meta), NotImplemented, op.name,
             ": has no meta function: its output shape depends on the values of its inputs");
  Device dev = kernel_device(op, inputs, attrs);
  std::vector<TensorMeta> metas = op.meta(inputs, attrs);
  for (TensorMeta& m : metas) m.device = dev;
  return metas;
}

// The meta device's kernel: outputs with the metadata the op's meta inference gives, and no memory. Views and
// ops whose compute function only builds metadata run that function (it gives views their strides).
static TensorList run_meta(const OpDef& op, const TensorList& inputs, const Attrs& attrs, const TensorList* out,
                           Device dev) {
  if (out) return *out;
  if (const ComputeFn& own = op.compute[static_cast<int>(DeviceType::Meta)]) return own(inputs, attrs);
  const ComputeFn& cpu = op.compute[static_cast<int>(DeviceType::CPU)];
  if (cpu && (op.meta_by_compute || op.has(kView))) return cpu(inputs, attrs);
  std::vector<TensorMeta> metas = infer_meta(op, inputs, attrs);
  TensorList outs;
  outs.reserve(metas.size());
  bool follow = op.has(kElementwise);
  for (auto& m : metas) outs.push_back(follow ? empty_like_inputs(m, inputs, dev) : empty(m.sizes, m.dtype, dev));
  return outs;
}

TensorList run_kernel(const OpDef& op, const TensorList& inputs, const Attrs& attrs, const TensorList* out) {
  Device dev = kernel_device(op, inputs, attrs);
  check_device_available(dev);
  if (dev.type == DeviceType::Meta) return run_meta(op, inputs, attrs, out, dev);
  for (const Tensor& t : inputs)
    FLOW_RUNTIME_CHECK(!t.defined() || t.has_storage(), op.name,
                       ": an input has no storage (a wrapper tensor whose class handles no dispatch)");
  int d = static_cast<int>(dev.type);
  if (op.out_kernel[d]) {
    if (out) {
      op.out_kernel[d](inputs, *out, attrs);
      return *out;
    }
    FLOW_RUNTIME_CHECK(static_cast<bool>(op.meta), op.name, ": has an out-kernel but no meta function");
    std::vector<TensorMeta> metas = op.meta(inputs, attrs);
    TensorList outs;
    outs.reserve(metas.size());
    bool follow = op.has(kElementwise);
    for (auto& m : metas) outs.push_back(follow ? empty_like_inputs(m, inputs, dev) : empty(m.sizes, m.dtype, dev));
    op.out_kernel[d](inputs, outs, attrs);
    return outs;
  }
  if (op.compute[d]) {
    FLOW_RUNTIME_CHECK(out == nullptr, op.name, ": does not support writing into a given output");
    return op.compute[d](inputs, attrs);
  }
  fail(ErrorKind::NotImplemented, op.name, ": not implemented for device '", dev.str(), "'");
}

bool try_call_into(const OpDef& op, const TensorList& inputs, const Attrs& attrs_in, const TensorList& outs) {
  if (autocast::t_enabled || op.functional || op.has(kComposite) || !op.meta) return false;
  if (intercepted(inputs)) return false;
  if (autograd::GradMode::is_enabled() && op.backward)
    for (const Tensor& t : inputs)
      if (t.defined() && t.requires_grad()) return false;
  if (autograd::InferenceMode::is_enabled()) return false;  // its results are marked; keep one path for that
  Device dev = kernel_device(op, inputs, attrs_in);
  if (dev.type == DeviceType::Meta || !op.out_kernel[static_cast<int>(dev.type)]) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && !t.has_storage()) return false;
  Attrs filled = attrs_in;
  if (needs_filling(op, attrs_in)) fill_defaults(op, filled);
  std::vector<TensorMeta> metas = op.meta(inputs, filled);
  if (metas.size() != outs.size()) return false;
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& o = outs[i];
    if (!o.defined() || !o.has_storage() || !o.is_contiguous() || o.sizes() != metas[i].sizes ||
        o.dtype() != metas[i].dtype || o.device() != metas[i].device)
      return false;
    for (const Tensor& t : inputs)  // even disjoint regions: a kernel may read an input after writing out
      if (t.defined() && t.impl()->storage == o.impl()->storage) return false;
    for (size_t j = 0; j < i; ++j)
      if (outs[j].impl()->storage == o.impl()->storage) return false;
  }
  run_kernel(op, inputs, filled, &outs);
  return true;
}

TensorList call_below_autograd(const OpDef& op, const TensorList& inputs, const Attrs& attrs) {
  if (__builtin_expect(intercepted(inputs), 0)) return intercept(op, inputs, attrs);
  return run_kernel(op, inputs, attrs);
}

void check_castable(const std::string& op, DType result, DType out) {
  FLOW_RUNTIME_CHECK(can_cast(result, out), op, ": result type ", torch_type_name(result),
                     " can't be cast to the desired output type ", torch_type_name(out));
}

TensorList call(const OpDef& op, const TensorList& inputs, const Attrs& attrs_in);

// An in-place op on a view of a tensor that takes part in autograd (PyTorch's CopySlices): compute the
// result out of place (recording its node), write it through the view, then give the base a new history
// "old base with the view's region replaced by the result", and the view the history "that region of
// the new base". Gradients of the old base then flow both around the region and through the op.
static TensorList inplace_on_view(const OpDef& f, const TensorList& inputs, const Attrs& attrs) {
  const Tensor& self = inputs[0];
  Tensor base(self.impl()->base);
  if (base.is_leaf() && base.requires_grad())
    fail(ErrorKind::Runtime, "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  FLOW_RUNTIME_CHECK(base.is_contiguous(), f.name,
                     "_: in-place on a view of a non-contiguous tensor that requires grad is not supported");
  // An op that saves its input gets a snapshot of the view (recorded as a clone, so gradients still reach
  // the view's history): the view itself is overwritten below.
  TensorList args = inputs;
  if (f.keeps_input(0, inputs)) args[0] = ops::clone(self);
  Tensor r = call(f, args, attrs)[0];
  if (r.dtype() != self.dtype()) r = ops::to_dtype(r, self.dtype());
  {
    BelowAutogradGuard below;  // through the dispatcher, so handlers see the write; recorded below instead
    ops::copy_(self, r);       // bumps self's version
  }
  std::vector<int64_t> sz(self.sizes().begin(), self.sizes().end()), st(self.strides().begin(), self.strides().end());
  {
    const OpDef& vs = FLOW_OPDEF("view_scatter");
    Attrs a{sz, st, self.offset() - base.offset()};
    fill_defaults(vs, a);
    TensorList outs{base};
    autograd::record_op(vs, {base, r}, a, outs);
  }
  {
    const OpDef& sv = FLOW_OPDEF("strided_view");
    Attrs a{sz, st, self.offset() - base.offset()};
    fill_defaults(sv, a);
    TensorList outs{self};
    autograd::record_op(sv, {base}, a, outs);
  }
  return {self};
}

// PyTorch refuses in-place changes to an output of a function that returns several views (split, chunk,
// unbind), or to a view taken from one, while autograd records: the pieces share one backward node, which
// cannot be rebased onto one modified piece. The chain of view nodes behind `self` is walked back to the
// first node that is not a single view.
static void check_multi_output_view(const Tensor& self) {
  const auto* first = dynamic_cast<const autograd::OpNode*>(self.grad_fn().get());
  for (const auto* v = first; v && v->op->has(kView);
       v = v->next_edges.empty() ? nullptr : dynamic_cast<const autograd::OpNode*>(v->next_edges[0].fn.get())) {
    if (v->op->schema.num_outputs != -1) continue;
    fail(ErrorKind::Runtime, "Output ", self.autograd_meta().output_nr, " of ", first->op_title(),
         " is a view and is being modified inplace. This view is the output of a function that returns "
         "multiple views. Such functions do not allow the output views to be modified inplace. You should "
         "replace the inplace operation by an out-of-place one.");
  }
}

static TensorList call_inplace(const OpDef& op, const TensorList& inputs, const Attrs& attrs) {
  const OpDef& f = *op.functional;
  FLOW_RUNTIME_CHECK(!inputs.empty() && inputs[0].defined(), op.name, ": expected a tensor to modify");
  const Tensor& self = inputs[0];
  bool need_grad = false;
  if (f.backward && autograd::GradMode::is_enabled() && !t_below_autograd)
    for (const Tensor& t : inputs)
      if (t.defined() && t.requires_grad()) need_grad = true;
  if (need_grad && self.is_leaf() && self.requires_grad())
    fail(ErrorKind::Runtime, "a leaf Variable that requires grad is being used in an in-place operation.");
  if (need_grad && self.impl()->base && self.requires_grad()) check_multi_output_view(self);

  if (intercepted(inputs)) {
    // autograd sits above interception: a view's in-place change is rebased onto its base (CopySlices) here
    // too, its parts going through the handlers
    if (need_grad && self.impl()->base) return inplace_on_view(f, inputs, attrs);
    intercept(op, inputs, attrs);
  } else {
    Device dev = common_device(inputs, op.name.c_str());
    int d = static_cast<int>(dev.type);
    std::vector<TensorMeta> metas;
    if (f.meta) {
      metas = f.meta(inputs, attrs);
      FLOW_RUNTIME_CHECK(metas[0].sizes == self.sizes(), op.name, ": output with shape ", shape_str(self.sizes()),
                         " doesn't match the broadcast shape ", shape_str(metas[0].sizes));
      check_castable(op.name, metas[0].dtype, self.dtype());
    }
    check_inplace_overlap(self, inputs, f.has(kAliasedOutputOk));
    if (f.has(kNoInputOverlap)) check_no_overlap(self, inputs, 1);
    if (need_grad && self.impl()->base) return inplace_on_view(f, inputs, attrs);
    TensorList saved_self;
    if (need_grad && f.keeps_input(0, inputs)) saved_self.push_back(ops::clone(self));
    if (dev.type == DeviceType::Meta) {
      // no values to write: the checks above are all an in-place op does to a meta tensor
    } else if (f.out_kernel[d] && !metas.empty() && metas[0].dtype == self.dtype() && self.has_storage()) {
      TensorList outs{self};
      run_kernel(f, inputs, attrs, &outs);
    } else {
      TensorList r = run_kernel(f, inputs, attrs);
      ops::copy_into(self, r[0]);
    }
    self.bump_version();
    if (need_grad) {
      TensorList outs{self};
      autograd::record_op(f, inputs, attrs, outs, saved_self.empty() ? nullptr : &saved_self);
    }
    return {self};
  }
  self.bump_version();
  if (need_grad) {
    TensorList outs{self};
    autograd::record_op(f, inputs, attrs, outs);
  }
  return {self};
}

// Autocast layer (above autograd, so the casts are recorded): a listed op gets its inputs cast, then runs
// with autocast off so that its own parts are not cast again. In-place variants are never autocast.
static TensorList call_autocast(const OpDef& op, const TensorList& inputs, const Attrs& attrs, bool& handled) {
  TensorList cast;
  handled = !op.functional && !t_below_autograd && autocast::cast_inputs(op, inputs, attrs, cast);
  if (!handled) return {};
  autocast::DisableGuard off;
  return call(op, cast, attrs);
}

TensorList call(const OpDef& op, const TensorList& inputs, const Attrs& attrs_in) {
  const Attrs* attrs = &attrs_in;
  Attrs filled;
  const OpDef& def = op.functional ? *op.functional : op;
  if (needs_filling(def, attrs_in)) {
    filled = attrs_in;
    fill_defaults(def, filled);
    attrs = &filled;
  }
  if (__builtin_expect(autocast::t_enabled, 0)) {
    bool handled;
    TensorList r = call_autocast(op, inputs, *attrs, handled);
    if (handled) return r;
  }
  if (op.functional) return call_inplace(op, inputs, *attrs);
  if (op.has(kComposite)) {
    Device dev = kernel_device(op, inputs, *attrs);
    check_device_available(dev);
    // a composite is written with other ops: on the meta device its CPU definition runs those on meta tensors
    const ComputeFn& fn = op.compute[static_cast<int>(dev.type == DeviceType::Meta ? DeviceType::CPU : dev.type)];
    FLOW_RUNTIME_CHECK(static_cast<bool>(fn), op.name, ": not implemented for device '", dev.str(), "'");
    if (t_internal_depth == 0 && g_composite_hook) {
      for (const Tensor& t : inputs)
        if (t.defined() && t.impl()->py_handler) {
          g_composite_hook(op, inputs, *attrs);
          break;
        }
    }
    InternalGuard internal;
    return fn(inputs, *attrs);
  }
  bool need_grad = false;
  if (op.backward && !t_below_autograd && autograd::GradMode::is_enabled())
    for (const Tensor& t : inputs)
      if (t.defined() && t.requires_grad()) {
        need_grad = true;
        break;
      }
  TensorList out = call_below_autograd(op, inputs, *attrs);
  if (need_grad) autograd::record_op(op, inputs, *attrs, out);
  else if (autograd::InferenceMode::is_enabled())
    for (Tensor& t : out)
      if (t.defined()) t.impl()->is_inference = true;
  return out;
}

Tensor call1(const OpDef& op, const TensorList& inputs, const Attrs& attrs) {
  TensorList r = call(op, inputs, attrs);
  FLOW_RUNTIME_CHECK(!r.empty(), op.name, ": returned no outputs");
  return r[0];
}

}  // namespace flow::dispatch
