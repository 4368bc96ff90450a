#include "node.h"

#include <atomic>

#include "../dispatch/dispatch.h"
#include "../ops/functions.h"
#include "grad_mode.h"

namespace flow::autograd {

uint64_t next_sequence_nr() {
  static std::atomic<uint64_t> n{0};
  return n.fetch_add(1);
}

void Node::add_pre_hook(uint32_t output_nr, TensorHook h) {
  if (pre_hooks.size() <= output_nr) pre_hooks.resize(output_nr + 1);
  pre_hooks[output_nr].push_back(std::move(h));
}

// ---- saved tensors ------------------------------------------------------------------------------------

namespace {
thread_local std::vector<PackHook> t_pack_hooks;
thread_local bool t_in_pack_hook = false;  // what a pack hook's own ops save is kept as is (no recursion)
}  // namespace

void push_pack_hook(PackHook h) { t_pack_hooks.push_back(std::move(h)); }
bool pack_hook_active() { return !t_pack_hooks.empty() && !t_in_pack_hook; }
void pop_pack_hook() {
  if (!t_pack_hooks.empty()) t_pack_hooks.pop_back();
}

SavedTensor SavedTensor::save(const Tensor& t, bool is_output) {
  SavedTensor s;
  if (!t.defined()) return s;
  FLOW_RUNTIME_CHECK(!t.impl()->is_inference,
                     "Inference tensors cannot be saved for backward. Please do not use "
                     "Tensors created in inference mode in computation tracked by autograd. To work around you can "
                     "make a clone to get a normal tensor and use it in autograd.");
  s.version = t.version();
  s.is_output = is_output;
  s.was_requires_grad = t.requires_grad();
  if (is_output) {
    s.data = shallow_copy(t, /*keep_base=*/true);
    s.output_nr = t.impl()->autograd ? t.impl()->autograd->output_nr : 0;
  } else {
    s.data = t;
  }
  if (!t_pack_hooks.empty() && !t_in_pack_hook) {
    // Copy the hook: it may install or remove hooks itself. Its result replaces the tensor.
    PackHook hook = t_pack_hooks.back();
    struct Guard {
      Guard() { t_in_pack_hook = true; }
      ~Guard() { t_in_pack_hook = false; }
    } guard;
    s.packed = hook(s.data);
    s.data = Tensor();
    if (!is_output && s.was_requires_grad) {
      Edge e = gradient_edge(t);
      s.history = e.fn;
      s.history_nr = e.input_nr;
      s.history_is_leaf = !t.grad_fn();
    }
  }
  return s;
}

Tensor SavedTensor::unpack(const std::shared_ptr<Node>& owner, const char* node_name) const {
  FLOW_RUNTIME_CHECK(!released,
                     "Trying to backward through the graph a second time (or directly access saved tensors after "
                     "they have already been freed). Saved intermediate values of the graph are freed when you "
                     "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
                     "through the graph a second time or if you need to access saved tensors after calling backward.");
  Tensor base = packed ? packed->unpack() : data;
  if (!base.defined()) return base;
  if (!packed && data.version() != version) {
    fail(ErrorKind::Runtime,
         "one of the variables needed for gradient computation has been modified by an inplace operation: [",
         dtype_name(data.dtype()), " ", shape_str(data.sizes()), "], which is ", is_output ? "output" : "input", " of ",
         node_name, ", is at version ", data.version(), "; expected version ", version,
         " instead. Hint: the backtrace further above can point to the operation that failed to compute its "
         "gradient.");
  }
  if (is_output && was_requires_grad) {
    Tensor t = shallow_copy(base, /*keep_base=*/true);
    auto& m = t.autograd_meta();
    m.grad_fn = owner;
    m.output_nr = output_nr;
    return t;
  }
  if (history) {
    Tensor t = shallow_copy(base, /*keep_base=*/true);
    auto& m = t.autograd_meta();
    if (history_is_leaf) {
      m.requires_grad = true;
      m.grad_accumulator = history;
    } else {
      m.grad_fn = history;
      m.output_nr = history_nr;
    }
    return t;
  }
  return base;
}

void SavedTensor::release() {
  data = Tensor();
  packed.reset();
  history.reset();
  released = true;
}

// ---- op nodes -----------------------------------------------------------------------------------------
// PyTorch numbers a node class per overload; the first overload, 0, is what most ops show
std::string OpNode::name() const { return op_title() + "Backward0"; }

std::string OpNode::op_title() const {
  const std::string& n = op->name;
  std::string out;
  bool up = true;
  for (char c : n) {
    if (c == '_') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

void OpNode::release_saved() {
  for (auto& s : saved_inputs) s.release();
  for (auto& s : saved_outputs) s.release();
  released = true;
}

}  // namespace flow::autograd
namespace flow {
Tensor BackwardCtx::input(int i) const {
  const auto& idx = node->op->saved_inputs;
  for (size_t k = 0; k < idx.size(); ++k)
    if (idx[k] == i) return node->saved_inputs[k].unpack(node->shared_from_this(), node->name().c_str());
  fail(ErrorKind::Runtime, node->op->name, ": backward reads input ", i, " which the op does not save");
}

Tensor BackwardCtx::output(int i) const {
  const auto& idx = node->op->saved_outputs;
  for (size_t k = 0; k < idx.size(); ++k)
    if (idx[k] == i) return node->saved_outputs[k].unpack(node->shared_from_this(), node->name().c_str());
  fail(ErrorKind::Runtime, node->op->name, ": backward reads output ", i, " which the op does not save");
}

}  // namespace flow
namespace flow::autograd {
TensorList OpNode::apply(TensorList&& grad_outputs) {
  // Undefined grads for outputs that received none become zeros only if the formula needs them; formulas
  // treat undefined as zero, so fill them here for simplicity.
  for (size_t i = 0; i < grad_outputs.size(); ++i) {
    if (!grad_outputs[i].defined()) {
      // shape of the forward output is unknown here unless saved; formulas for multi-output ops check defined()
    }
  }
  BackwardCtx ctx{this, attrs};
  TensorList g = op->backward(ctx, grad_outputs);
  g.resize(next_edges.size());
  return g;
}

namespace {

// The incoming gradient itself when .grad may take it without a copy: nobody else holds it and it is
// contiguous. A view qualifies when it is the only holder of its base and storage (the transpose of a
// just-computed product, the reshape of a just-computed sum); it is re-homed as a plain tensor on the same
// storage so that .grad is not a view. Undefined when a copy is needed.
Tensor stealable(const Tensor& g) {
  if (g.impl_ptr().use_count() > 2 || !g.is_contiguous()) return {};
  const auto& base = g.impl()->base;
  // a gradient with a history of its own (a saved leaf a custom Function returned) is kept without it
  if (!base) return g.requires_grad() ? shallow_copy(g, /*keep_base=*/true) : g;
  if (base.use_count() != 1 || g.impl()->storage.use_count() != 2) return {};
  Tensor own = shallow_copy(g, /*keep_base=*/true);
  own.impl()->base.reset();
  own.impl()->is_inference = g.impl()->is_inference;
  return own;
}

}  // namespace

TensorList AccumulateGrad::apply(TensorList&& grads) {
  Tensor g = grads.empty() ? Tensor() : grads[0];
  if (!g.defined()) return {};
  Tensor var(variable);
  auto& m = var.autograd_meta();
  if (!m.grad.defined()) {
    // Steal the incoming grad when nobody else can see it; otherwise copy so .grad owns its memory.
    if (GradMode::is_enabled()) m.grad = g;
    else {
      Tensor own = stealable(g);
      m.grad = own.defined() ? own : ops::clone(g);
    }
  } else if (GradMode::is_enabled()) {
    m.grad = ops::add(m.grad, g);  // create_graph: keep the graph of the accumulation
  } else {
    const OpDef& add_ = FLOW_OPDEF("add_");
    Attrs a{Scalar(int64_t(1))};
    dispatch::fill_defaults(*add_.functional, a);
    dispatch::call(add_, {m.grad, g}, a);
  }
  for (auto& h : m.post_accumulate_hooks) h(var);
  return {};
}

// ---- recording ----------------------------------------------------------------------------------------
Edge gradient_edge(const Tensor& t) {
  auto& m = t.autograd_meta();
  if (t.grad_fn()) return {m.grad_fn, m.output_nr};
  if (!m.requires_grad) return {};
  auto acc = m.grad_accumulator.lock();
  if (!acc) {
    auto a = std::make_shared<AccumulateGrad>();
    a->variable = t.impl_ptr();
    a->input_meta.push_back({t.sizes(), t.dtype(), t.device(), true});
    acc = a;
    m.grad_accumulator = acc;
  }
  return {acc, 0};
}

void record_op(const OpDef& op, const TensorList& inputs, const Attrs& attrs, TensorList& outputs,
               const TensorList* inplace_saved_self) {
  auto node = std::make_shared<OpNode>();
  node->op = &op;
  node->attrs = attrs;
  node->attrs.schema = &op.schema;
  node->num_outputs = static_cast<uint32_t>(outputs.size());
  node->next_edges.resize(inputs.size());
  node->input_meta.resize(inputs.size());
  node->needs_input_grad.resize(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined()) continue;
    node->input_meta[i] = {t.sizes(), t.dtype(), t.device(), true};
    if (t.requires_grad()) {
      node->next_edges[i] = gradient_edge(t);
      node->needs_input_grad[i] = true;
    }
  }
  for (size_t k = 0; k < op.saved_inputs.size(); ++k) {
    const int idx = op.saved_inputs[k];
    if (!op.saved_input_needed(k, inputs)) {
      node->saved_inputs.emplace_back();
    } else if (idx == 0 && inplace_saved_self) {
      node->saved_inputs.push_back(SavedTensor::save((*inplace_saved_self)[0], false));
    } else {
      node->saved_inputs.push_back(idx < static_cast<int>(inputs.size()) ? SavedTensor::save(inputs[idx], false)
                                                                         : SavedTensor());
    }
  }
  // Outputs get their history before they are saved, so saved outputs know their output_nr.
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& o = outputs[i];
    if (!o.defined() || !is_floating(o.dtype())) continue;
    bool nondiff = false;
    for (int k : op.nondiff_outputs)
      if (k == static_cast<int>(i)) nondiff = true;
    if (nondiff) continue;
    auto& m = o.autograd_meta();
    m.grad_fn = node;
    m.output_nr = static_cast<uint32_t>(i);
    if (o.impl()->base) m.view_version = o.version();
  }
  for (size_t k = 0; k < op.saved_outputs.size(); ++k) {
    const int idx = op.saved_outputs[k];
    node->saved_outputs.push_back(idx < static_cast<int>(outputs.size()) && op.saved_output_needed(k, inputs)
                                      ? SavedTensor::save(outputs[idx], true)
                                      : SavedTensor());
  }
}

void set_history(TensorList& outputs, const std::shared_ptr<Node>& node) {
  node->num_outputs = static_cast<uint32_t>(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& o = outputs[i];
    if (!o.defined() || !is_floating(o.dtype())) continue;
    auto& m = o.autograd_meta();
    m.grad_fn = node;
    m.output_nr = static_cast<uint32_t>(i);
    if (o.impl()->base) m.view_version = o.version();
  }
}

void regenerate_view_history(const Tensor& view) {
  auto& m = view.autograd_meta();
  m.view_version = view.version();  // first: nothing below may come back here for the same write
  Tensor base(view.impl()->base);
  // strided_view addresses a contiguous base of the view's dtype (not a view(dtype) reinterpretation)
  if (!base.requires_grad() || !base.is_contiguous() || base.dtype() != view.dtype()) return;
  const OpDef& sv = FLOW_OPDEF("strided_view");
  Attrs a{std::vector<int64_t>(view.sizes().begin(), view.sizes().end()),
          std::vector<int64_t>(view.strides().begin(), view.strides().end()), view.offset() - base.offset()};
  dispatch::fill_defaults(sv, a);
  TensorList outs{view};
  record_op(sv, {base}, a, outs);
}

}  // namespace flow::autograd
