// The interception layer's Python side: when a dispatch mode is active or an input's class defines
// __flow_dispatch__, ops reach `oneflow._dispatch._handle(op, inputs, attrs)` below autograd.
#include <nanobind/stl/string.h>
#include "../dispatch/dispatch.h"

#include "bind.h"

namespace flow::py {

nb::object make_op_handle(const OpDef* op);
static nb::handle g_handler;            // owned, never released (outlives the interpreter)
static nb::handle g_composite_handler;  // likewise

static void python_composite(const OpDef& op, const TensorList& inputs, const Attrs&) {
  if (!g_composite_handler.ptr()) return;
  nb::list ins;
  for (const Tensor& t : inputs) ins.append(wrap(t));
  g_composite_handler(make_op_handle(&op), ins);
}

static TensorList python_intercept(const OpDef& op, const TensorList& inputs, const Attrs& attrs) {
  FLOW_RUNTIME_CHECK(g_handler.ptr() != nullptr, "dispatch interception requested but no Python handler is installed");
  nb::list ins;
  for (const Tensor& t : inputs) ins.append(wrap(t));
  nb::dict ad;
  const Schema& s = op.functional ? op.functional->schema : op.schema;
  for (size_t k = 0; k < s.attr_args.size() && k < attrs.values.size(); ++k)
    ad[s.attr_args[k].name.c_str()] = attr_to_py(attrs.values[k]);
  nb::object r;
  {
    dispatch::BelowAutogradGuard guard;
    r = g_handler(make_op_handle(&op), ins, ad);
  }
  TensorList out;
  if (is_tensor(r.ptr())) {
    out.push_back(unwrap(r.ptr()));
  } else {
    for (nb::handle e : nb::borrow<nb::sequence>(r)) {
      if (e.is_none()) out.emplace_back();
      else {
        FLOW_TYPE_CHECK(is_tensor(e.ptr()), op.name, ": dispatch handler returned a non-Tensor output");
        out.push_back(unwrap(e.ptr()));
      }
    }
  }
  return out;
}

Tensor readable(const Tensor& t) {
  // checked field by field: item() is hot enough that building a TensorList for intercepted() shows
  const TensorImpl* i = t.impl();
  if (i->storage && !i->py_handler && !i->handler_key && dispatch::mode_depth() == 0) return t;
  const OpDef& op = get_op("_materialize");
  Attrs a;
  a.schema = &op.schema;
  return dispatch::call1(op, {t}, a);
}

void init_dispatch(nb::module_& m) {
  m.def("_tensor_handlers", []() {
    nb::list out;
    for (const auto& h : dispatch::tensor_handlers()) out.append(nb::make_tuple(h.name, h.priority, h.key));
    return out;
  });
  m.def("_handler_key", [](const Tensor& t) { return static_cast<int>(t.impl()->handler_key); });
  m.def("_set_dispatch_handler", [](nb::object fn) {
    g_handler = fn.release();
    dispatch::set_intercept_hook(&python_intercept);
  });
  // fn(op, inputs): a composite called by user code with an input whose class has a Python handler
  m.def("_set_composite_handler", [](nb::object fn) {
    g_composite_handler = fn.release();
    dispatch::set_composite_hook(&python_composite);
  });
  m.def("_mode_depth", []() { return dispatch::mode_depth(); });
  m.def("_set_mode_depth", [](int d) { dispatch::mode_depth() = d; });
  // > 0 while the core runs a composite's definition or a backward pass (dispatch::InternalGuard)
  m.def("_internal_depth", []() { return dispatch::internal_depth(); });
  m.def("_is_below_autograd", []() { return dispatch::below_autograd(); });
  // Run `fn()` with autograd recording on or off for ops issued inside (handlers are below autograd).
  m.def("_set_below_autograd", [](bool on) {
    static thread_local std::vector<std::unique_ptr<dispatch::BelowAutogradGuard>> stack;
    if (on) stack.push_back(std::make_unique<dispatch::BelowAutogradGuard>());
    else if (!stack.empty()) stack.pop_back();
  });
  // Run `fn()` above autograd (its ops recorded as at top level) from inside a handler; the flag is restored
  // however fn exits.
  m.def("_call_above_autograd", [](nb::callable fn) {
    dispatch::BelowAutogradGuard above(false);
    return fn();
  });
}

}  // namespace flow::py
