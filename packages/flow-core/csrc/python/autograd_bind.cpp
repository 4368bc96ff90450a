// Autograd from Python: backward/grad, grad modes, tensor hooks, graph nodes, and custom Functions whose
// backward is a Python callable.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "../autograd/engine.h"
#include "../autograd/grad_mode.h"
#include "../ops/functions.h"
#include "bind.h"

namespace flow::py {

static TensorList tensor_list(nb::handle seq, bool allow_none) {
  TensorList out;
  for (nb::handle e : nb::borrow<nb::sequence>(seq)) {
    if (e.is_none()) {
      FLOW_TYPE_CHECK(allow_none, "expected a Tensor, got None");
      out.emplace_back();
      continue;
    }
    FLOW_TYPE_CHECK(is_tensor(e.ptr()), "expected a Tensor, got ",
                    nb::str(nb::handle(e.type()).attr("__name__")).c_str());
    out.push_back(unwrap(e.ptr()));
  }
  return out;
}

// Holds a Python callable; destroyed with the GIL (nodes die on Python threads here).
struct PyHook {
  nb::object fn;
  bool removed = false;
};

static autograd::TensorHook make_hook(const std::shared_ptr<PyHook>& h) {
  return [h](const Tensor& g) -> Tensor {
    if (h->removed) return Tensor();
    nb::gil_scoped_acquire gil;
    if (h->removed) return Tensor();  // removed (and its callable dropped) while this thread waited
    nb::object r = h->fn(wrap(g));
    if (r.is_none()) return Tensor();
    FLOW_TYPE_CHECK(is_tensor(r.ptr()), "hook returned a non-Tensor value");
    return unwrap(r.ptr());
  };
}

// The custom Function node whose backward runs on this thread: its saved outputs are unpacked with it as
// their grad_fn.
static thread_local std::shared_ptr<autograd::Node> t_running_function;

// A node whose backward is Python: `backward(grads_tuple) -> tuple of grads per tensor input`.
struct PyFunctionNode : autograd::Node {
  nb::object backward_fn;
  std::string cls_name;
  TensorList apply(TensorList&& grads) override {
    nb::gil_scoped_acquire gil;
    struct Running {
      std::shared_ptr<autograd::Node> prev = t_running_function;
      explicit Running(std::shared_ptr<autograd::Node> n) { t_running_function = std::move(n); }
      ~Running() { t_running_function = std::move(prev); }
    } running(shared_from_this());
    nb::object r = backward_fn(wrap_list(grads, true));
    TensorList out;
    if (r.is_none()) return TensorList(next_edges.size());
    for (nb::handle e : nb::borrow<nb::sequence>(r)) {
      if (e.is_none()) out.emplace_back();
      else {
        FLOW_TYPE_CHECK(is_tensor(e.ptr()), cls_name, ".backward returned a non-Tensor gradient");
        out.push_back(unwrap(e.ptr()));
      }
    }
    FLOW_RUNTIME_CHECK(out.size() == next_edges.size(), "function ", cls_name,
                       " returned an incorrect number of gradients (expected ", next_edges.size(), ", got ", out.size(),
                       ")");
    return out;
  }
  std::string name() const override { return cls_name; }
  void release_saved() override {
    nb::gil_scoped_acquire gil;
    if (backward_fn && nb::hasattr(backward_fn, "release")) backward_fn.attr("release")();
  }
};

// A saved-tensors-hooks pair (torch.autograd.graph.saved_tensors_hooks). Shared, so that copying the C++
// hook never touches Python reference counts; released with the GIL.
struct PySavedHooks {
  nb::object pack, unpack;
  ~PySavedHooks() {
    nb::gil_scoped_acquire gil;
    pack.reset();
    unpack.reset();
  }
};

// What the pack hook returned for one saved tensor, and the pair whose unpack hook turns it back.
struct PyPacked : autograd::PackedTensor {
  std::shared_ptr<PySavedHooks> hooks;
  nb::object obj;
  Tensor unpack() const override {
    nb::gil_scoped_acquire gil;
    nb::object r = hooks->unpack(obj);
    FLOW_TYPE_CHECK(is_tensor(r.ptr()),
                    "Output of saved tensor unpack_hook expected to be a Tensor but got result "
                    "of type ",
                    nb::str(nb::handle(r.type()).attr("__name__")).c_str());
    return unwrap(r.ptr());
  }
  ~PyPacked() override {
    nb::gil_scoped_acquire gil;
    obj.reset();
  }
};

// A Node hook's returned tuple of gradients (None entries kept), checked against the count it replaces.
static TensorList replacement(nb::handle r, size_t expected, const char* what) {
  TensorList out = tensor_list(r, true);
  FLOW_RUNTIME_CHECK(out.size() == expected, what, " returned an invalid number of gradients, got ", out.size(),
                     ", but expected ", expected);
  return out;
}

void init_autograd(nb::module_& m) {
  nb::class_<autograd::Node>(m, "Node")
      .def("name", &autograd::Node::name)
      .def_prop_ro("next_functions",
                   [](autograd::Node& n) {
    nb::list l;
    for (auto& e : n.next_edges) l.append(nb::make_tuple(e.fn ? nb::cast(e.fn) : nb::none(), e.input_nr));
    return nb::tuple(l);
  })
      .def("register_prehook",
           [](autograd::Node& n, nb::object fn) {
    // hook(grad_outputs) -> None or a replacement tuple, as torch's Node.register_prehook
    auto h = std::make_shared<PyHook>();
    h->fn = fn;
    n.node_pre_hooks.push_back([h](TensorList& grads) {
      if (h->removed) return;
      nb::gil_scoped_acquire gil;
      if (h->removed) return;
      nb::object r = h->fn(wrap_list(grads, true));
      if (!r.is_none()) grads = replacement(r, grads.size(), "pre-hook");
    });
    return h;
  })
      .def("register_hook", [](autograd::Node& n, nb::object fn) {
    // hook(grad_inputs, grad_outputs) -> None or a replacement for grad_inputs
    auto h = std::make_shared<PyHook>();
    h->fn = fn;
    n.post_hooks.push_back([h](TensorList& grad_inputs, const TensorList& grad_outputs) {
      if (h->removed) return;
      nb::gil_scoped_acquire gil;
      if (h->removed) return;
      nb::object r = h->fn(wrap_list(grad_inputs, true), wrap_list(grad_outputs, true));
      if (!r.is_none()) grad_inputs = replacement(r, grad_inputs.size(), "hook");
    });
    return h;
  }).def_prop_ro("_sequence_nr", [](autograd::Node& n) {
    return n.seq;
  }).def("__repr__", [](autograd::Node& n) {
    return "<" + n.name() + " object>";
  }).def("__eq__", [](autograd::Node& a, autograd::Node& b) {
    return &a == &b;
  }).def("__hash__", [](autograd::Node& a) { return reinterpret_cast<intptr_t>(&a); });

  m.def("_run_backward",
        [](nb::handle tensors, nb::handle grads, bool keep_graph, bool create_graph, nb::handle inputs,
           bool allow_unused) {
    TensorList roots = tensor_list(tensors, false);
    TensorList groots = tensor_list(grads, true);
    TensorList ins = inputs.is_none() ? TensorList{} : tensor_list(inputs, false);
    TensorList r = autograd::run_backward(roots, groots, keep_graph, create_graph, ins, allow_unused);
    return wrap_list(r, true);
  },
        nb::arg("tensors"), nb::arg("grad_tensors"), nb::arg("keep_graph"), nb::arg("create_graph"),
        nb::arg("inputs").none(), nb::arg("allow_unused"));
  m.def("_push_saved_tensors_hooks", [](nb::object pack, nb::object unpack) {
    auto hooks = std::make_shared<PySavedHooks>();
    hooks->pack = std::move(pack);
    hooks->unpack = std::move(unpack);
    autograd::push_pack_hook([hooks](const Tensor& t) -> std::shared_ptr<autograd::PackedTensor> {
      nb::gil_scoped_acquire gil;
      auto p = std::make_shared<PyPacked>();
      p->hooks = hooks;
      p->obj = hooks->pack(wrap(t));
      return p;
    });
  });
  m.def("_pop_saved_tensors_hooks", []() { autograd::pop_pack_hook(); });
  // A custom Function's saved tensor kept as an op's is: its outputs always (stored without their history,
  // which unpack gives back with the running node as grad_fn), everything under saved-tensor hooks (packed,
  // and unpacked with history re-attached). Other inputs stay in Python.
  nb::class_<autograd::SavedTensor>(m, "_SavedTensor").def("unpack", [](const autograd::SavedTensor& s) {
    return wrap(
        s.unpack(t_running_function, t_running_function ? t_running_function->name().c_str() : "a custom Function"));
  });
  m.def("_saved_tensor_hooks_active", []() { return autograd::pack_hook_active(); });
  m.def("_save_tensor", [](const Tensor& t, bool is_output) { return autograd::SavedTensor::save(t, is_output); },
        nb::arg("t"), nb::arg("is_output") = false);
  m.def("is_grad_enabled", []() { return autograd::GradMode::is_enabled(); });
  m.def("is_anomaly_enabled", []() { return autograd::AnomalyMode::is_enabled(); });
  m.def("is_anomaly_check_nan_enabled", []() { return autograd::AnomalyMode::check_nan(); });
  m.def("_set_anomaly_enabled", [](bool on, bool check_nan) { autograd::AnomalyMode::set_enabled(on, check_nan); });
  m.def("_set_grad_enabled", [](bool on) { autograd::GradMode::set_enabled(on); });
  m.def("is_inference_mode_enabled", []() { return autograd::InferenceMode::is_enabled(); });
  m.def("_set_inference_mode", [](bool on) { autograd::InferenceMode::set_enabled(on); });

  nb::class_<PyHook>(m, "_HookHandle").def("remove", [](PyHook& h) {
    // The node keeps a (now inert) entry; dropping the callable frees whatever it captured right away,
    // even while the graph lives on (a profiler hooks every node of a retained graph on each backward).
    h.removed = true;
    h.fn = nb::none();
  });
  m.def("_register_hook", [](const Tensor& t, nb::object fn) {
    FLOW_RUNTIME_CHECK(t.requires_grad(), "cannot register a hook on a tensor that doesn't require gradient");
    auto h = std::make_shared<PyHook>();
    h->fn = fn;
    auto& meta = t.autograd_meta();
    if (t.grad_fn()) meta.grad_fn->add_pre_hook(meta.output_nr, make_hook(h));
    else meta.leaf_hooks.push_back(make_hook(h));
    return h;
  });

  m.def("_register_post_accumulate_grad_hook", [](const Tensor& t, nb::object fn) {
    FLOW_RUNTIME_CHECK(t.requires_grad(), "cannot register a hook on a tensor that doesn't require gradient");
    FLOW_RUNTIME_CHECK(t.is_leaf(), "post accumulate grad hooks cannot be registered on non-leaf tensors");
    auto h = std::make_shared<PyHook>();
    h->fn = fn;
    t.autograd_meta().post_accumulate_hooks.push_back([h](const Tensor& var) {
      if (h->removed) return;
      nb::gil_scoped_acquire gil;
      if (h->removed) return;
      nb::object r = h->fn(wrap(var));
      FLOW_RUNTIME_CHECK(r.is_none(), "Tensor post accumulate grad hooks should return None.");
    });
    return h;
  });

  // Attach a Python backward to `outputs` with edges to the tensor `inputs` (autograd.Function.apply).
  m.def("_make_function_node", [](nb::object backward_fn, std::string name, nb::handle inputs, nb::handle outputs) {
    TensorList ins = tensor_list(inputs, true);
    TensorList outs = tensor_list(outputs, true);
    auto node = std::make_shared<PyFunctionNode>();
    node->backward_fn = std::move(backward_fn);
    node->cls_name = std::move(name);
    node->next_edges.resize(ins.size());
    node->input_meta.resize(ins.size());
    for (size_t i = 0; i < ins.size(); ++i) {
      if (!ins[i].defined()) continue;
      node->input_meta[i] = {ins[i].sizes(), ins[i].dtype(), ins[i].device(), true};
      if (ins[i].requires_grad()) node->next_edges[i] = autograd::gradient_edge(ins[i]);
    }
    autograd::set_history(outs, node);
    return std::static_pointer_cast<autograd::Node>(node);
  });
}

}  // namespace flow::py
