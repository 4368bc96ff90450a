#include "engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "../dispatch/autocast.h"
#include "../dispatch/dispatch.h"
#include "../ops/functions.h"
#include "grad_mode.h"

namespace flow::autograd {
namespace {

struct CompareSeq {
  bool operator()(Node* a, Node* b) const { return a->seq < b->seq; }  // max-heap: latest first
};

// Make a gradient fit the forward input it belongs to (PyTorch's validate_outputs).
Tensor validate_grad(const Tensor& g, const InputMeta& meta, const std::string& node_name, size_t i) {
  if (!g.defined() || !meta.defined) return g;
  Tensor r = g;
  if (r.sizes() != meta.sizes) {
    // expandable: reduce broadcast dims
    bool ok = r.dim() >= static_cast<int64_t>(meta.sizes.size());
    if (ok) {
      int64_t lead = r.dim() - static_cast<int64_t>(meta.sizes.size());
      for (size_t k = 0; k < meta.sizes.size(); ++k)
        if (meta.sizes[k] != 1 && meta.sizes[k] != r.sizes()[lead + k]) ok = false;
    }
    if (!ok)
      fail(ErrorKind::Runtime, "Function ", node_name, " returned an invalid gradient at index ", i, " - got ",
           shape_str(r.sizes()), " but expected shape compatible with ", shape_str(meta.sizes));
    r = ops::sum_to(r, meta.sizes);
  }
  if (r.dtype() != meta.dtype && is_floating(meta.dtype)) r = ops::to_dtype(r, meta.dtype);
  return r;
}

Tensor accumulate(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return ops::add(a, b);
}

}  // namespace

TensorList run_backward(const TensorList& roots, const TensorList& grad_roots, bool keep_graph, bool create_graph,
                        const TensorList& inputs, bool allow_unused) {
  FLOW_RUNTIME_CHECK(roots.size() == grad_roots.size(), "backward: got ", roots.size(), " tensors and ",
                     grad_roots.size(), " gradients");
  AutoGradMode mode(create_graph);
  autocast::DisableGuard no_autocast;  // backward ops run in the dtypes the forward chose
  dispatch::InternalGuard internal;    // the formulas' own tensors (zeros, index grids) are the core's

  // Root edges and their initial gradients.
  std::vector<Edge> root_edges;
  TensorList root_grads;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    FLOW_RUNTIME_CHECK(r.requires_grad(), "element ", i,
                       " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_roots[i];
    if (!g.defined()) {
      FLOW_RUNTIME_CHECK(r.numel() == 1, "grad can be implicitly created only for scalar outputs");
      AutoGradMode no_grad(false);  // the seed is a constant: with create_graph it must not hang off r's graph
      g = ops::ones_like(r);
    } else {
      FLOW_RUNTIME_CHECK(g.sizes() == r.sizes(), "Mismatch in shape: grad_output[", i, "] has a shape of ",
                         shape_str(g.sizes()), " and output[", i, "] has a shape of ", shape_str(r.sizes()), ".");
    }
    root_edges.push_back(gradient_edge(r));
    root_grads.push_back(g);
  }

  // Captures for autograd.grad: (node, input_nr) -> slot.
  bool capture_mode = !inputs.empty();
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;
  TensorList captured(inputs.size());
  std::vector<bool> input_reached(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    FLOW_RUNTIME_CHECK(t.requires_grad(), "One of the differentiated Tensors does not require grad");
    Edge e = gradient_edge(t);
    captures[e.fn.get()].push_back({e.input_nr, i});
  }

  // Discover the graph and count dependencies.
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, std::shared_ptr<Node>> keep;  // nodes stay alive during the run
  std::vector<Node*> stack;
  for (auto& e : root_edges)
    if (e.fn && !keep.count(e.fn.get())) {
      keep[e.fn.get()] = e.fn;
      stack.push_back(e.fn.get());
    }
  std::vector<Node*> order;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (auto& e : n->next_edges) {
      if (!e.fn) continue;
      deps[e.fn.get()] += 1;
      if (!keep.count(e.fn.get())) {
        keep[e.fn.get()] = e.fn;
        stack.push_back(e.fn.get());
      }
    }
  }

  // In capture mode, only nodes on a path to a captured node need to run.
  std::unordered_set<Node*> needed;
  if (capture_mode) {
    // reverse reachability: iterate until fixpoint over `order` (topological enough for small graphs)
    std::unordered_map<Node*, bool> memo;
    std::function<bool(Node*)> leads = [&](Node* n) -> bool {
      auto it = memo.find(n);
      if (it != memo.end()) return it->second;
      memo[n] = false;
      bool r = captures.count(n) > 0;
      for (auto& e : n->next_edges)
        if (e.fn && leads(e.fn.get())) r = true;
      memo[n] = r;
      return r;
    };
    for (Node* n : order)
      if (leads(n)) needed.insert(n);
  }

  std::unordered_map<Node*, TensorList> buffers;
  auto add_to_buffer = [&](Node* n, uint32_t slot, const Tensor& g) {
    TensorList& b = buffers[n];
    if (b.size() < n->num_outputs) b.resize(std::max<size_t>(n->num_outputs, slot + 1));
    if (b.size() <= slot) b.resize(slot + 1);
    b[slot] = accumulate(b[slot], g);
  };
  for (size_t i = 0; i < root_edges.size(); ++i)
    if (root_edges[i].fn) add_to_buffer(root_edges[i].fn.get(), root_edges[i].input_nr, root_grads[i]);

  std::priority_queue<Node*, std::vector<Node*>, CompareSeq> ready;
  for (auto& e : root_edges)
    if (e.fn && deps[e.fn.get()] == 0) {
      deps[e.fn.get()] = -1;  // queued
      ready.push(e.fn.get());
    }

  std::vector<Node*> executed;
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    TensorList grads = std::move(buffers[n]);
    buffers.erase(n);
    grads.resize(std::max<size_t>(grads.size(), n->num_outputs));

    // Pre-hooks (tensor hooks of non-leaf outputs), then leaf hooks for accumulators.
    for (size_t k = 0; k < n->pre_hooks.size() && k < grads.size(); ++k)
      for (auto& h : n->pre_hooks[k]) {
        if (!grads[k].defined()) continue;
        Tensor r = h(grads[k]);
        if (r.defined()) grads[k] = r;
      }
    for (size_t k = 0; k < n->retain_hooks.size() && k < grads.size(); ++k)
      if (n->retain_hooks[k] && grads[k].defined()) n->retain_hooks[k](grads[k]);
    for (auto& h : n->node_pre_hooks) h(grads);
    auto* acc = dynamic_cast<AccumulateGrad*>(n);
    if (acc && acc->variable && acc->variable->autograd) {
      for (auto& h : acc->variable->autograd->leaf_hooks) {
        if (!grads[0].defined()) continue;
        Tensor r = h(grads[0]);
        if (r.defined()) grads[0] = r;
      }
    }

    auto cap = captures.find(n);
    if (cap != captures.end())
      for (auto& [slot, idx] : cap->second)
        if (slot < grads.size() && grads[slot].defined()) {
          captured[idx] = accumulate(captured[idx], grads[slot]);
          input_reached[idx] = true;
        }

    bool run = !capture_mode || (needed.count(n) && !acc);
    TensorList outs;
    if (run) {
      executed.push_back(n);
      if (n->post_hooks.empty()) {
        outs = n->apply(std::move(grads));
      } else {
        TensorList received = grads;
        outs = n->apply(std::move(grads));
        outs.resize(n->next_edges.size());
        for (auto& h : n->post_hooks) h(outs, received);
      }
      if (AnomalyMode::is_enabled() && AnomalyMode::check_nan())
        for (size_t i = 0; i < outs.size(); ++i)
          if (outs[i].defined() && is_floating(outs[i].dtype()) &&
              *ops::contiguous(ops::call1("any", {ops::call1("isnan", {outs[i]})})).data<bool>())
            fail(ErrorKind::Runtime, "Function '", n->name(), "' returned nan values in its ", i, "th output.");
    }
    for (size_t i = 0; i < n->next_edges.size(); ++i) {
      const Edge& e = n->next_edges[i];
      if (!e.fn) continue;
      if (run && i < outs.size() && outs[i].defined()) {
        Tensor g = i < n->input_meta.size() ? validate_grad(outs[i], n->input_meta[i], n->name(), i) : outs[i];
        add_to_buffer(e.fn.get(), e.input_nr, g);
      }
      int& d = deps[e.fn.get()];
      if (--d == 0) {
        d = -1;
        ready.push(e.fn.get());
      }
    }
  }

  if (!keep_graph)
    for (Node* n : executed) n->release_saved();

  if (capture_mode) {
    for (size_t i = 0; i < inputs.size(); ++i)
      FLOW_RUNTIME_CHECK(allow_unused || input_reached[i],
                         "One of the differentiated Tensors appears to not have been used in the graph. Set "
                         "allow_unused=True if this is the desired behavior.");
  }
  return captured;
}

}  // namespace flow::autograd
