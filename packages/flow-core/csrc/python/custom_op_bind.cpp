// Ops whose kernel and meta function are Python callables (oneflow.library.custom_op, PyTorch's
// torch.library.custom_op): registered into the C++ registry like any op, so eager dispatch, interception
// (graph tracing, tensor subclasses) and the plan executor run them as they run the others. Each call takes the
// GIL; a call after the interpreter began shutting down raises instead of touching it.
#include <memory>
#include <string>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "../core/error.h"
#include "bind.h"

namespace flow::py {
namespace {

// A Python callable kept by a registered op (which lives until the process ends): released with the GIL held,
// or leaked when the interpreter is already gone.
struct PyCallable {
  nb::object fn;
  ~PyCallable() {
    if (Py_IsInitialized() && !_Py_IsFinalizing()) {
      nb::gil_scoped_acquire gil;
      fn.reset();
    } else {
      fn.release();
    }
  }
};
using CallablePtr = std::shared_ptr<PyCallable>;

void check_alive(const std::string& name) {
  if (!Py_IsInitialized() || _Py_IsFinalizing())
    fail(ErrorKind::Runtime, name, ": a Python-kernel op cannot run while the interpreter shuts down");
}

nb::object call(const std::string& name, const CallablePtr& fn, const TensorList& in, const Attrs& attrs) {
  const OpDef* def = find_op(name);
  nb::list args;
  for (const Tensor& t : in) args.append(t.defined() ? wrap(t) : nb::none());
  nb::dict ad;
  const Schema& s = def->schema;
  for (size_t k = 0; k < s.attr_args.size() && k < attrs.values.size(); ++k)
    ad[s.attr_args[k].name.c_str()] = attr_to_py(attrs.values[k]);
  return fn->fn(args, ad);
}

TensorList tensors_of(const std::string& name, nb::handle r, const char* what) {
  TensorList out;
  if (is_tensor(r.ptr())) {
    out.push_back(unwrap(r.ptr()));
    return out;
  }
  if (!PySequence_Check(r.ptr()))
    fail(ErrorKind::Type, name, ": its ", what, " returned ", nb::type_name(r.type()).c_str(),
         ", expected a Tensor or a sequence of Tensors");
  for (nb::handle e : nb::borrow<nb::sequence>(r)) {
    if (!is_tensor(e.ptr()))
      fail(ErrorKind::Type, name, ": its ", what, " returned a sequence holding ", nb::type_name(e.type()).c_str(),
           ", expected Tensors");
    out.push_back(unwrap(e.ptr()));
  }
  return out;
}

uint64_t traits_of(const std::vector<std::string>& names) {
  uint64_t t = 0;
  for (const std::string& n : names) {
    bool found = false;
    for (int b = 0; b < 64 && !found; ++b) {
      std::vector<std::string> one = trait_names(uint64_t{1} << b);
      if (!one.empty() && one[0] == n) {
        t |= uint64_t{1} << b;
        found = true;
      }
    }
    if (!found) fail(ErrorKind::Value, "custom_op(): unknown trait '", n, "'");
  }
  return t;
}

}  // namespace

void init_custom_ops(nb::module_& m) {
  // _register_custom_op(schema, traits, kernel, meta): kernel(inputs, attrs) -> Tensor(s) for real inputs;
  // meta(inputs, attrs) -> Tensor(s) of the outputs' shapes and dtypes (meta tensors will do). Call
  // _refresh_ops() after it for the op's handle.
  m.def("_register_custom_op",
        [](const std::string& schema, const std::vector<std::string>& traits, nb::object kernel, nb::object meta) {
    if (!PyCallable_Check(kernel.ptr()) || !PyCallable_Check(meta.ptr()))
      fail(ErrorKind::Type, "custom_op(): kernel and meta must be callables");
    Schema parsed = parse_schema(schema);  // raises on a bad schema, before anything registers
    const std::string name = parsed.name;
    if (find_op(name) != nullptr)
      fail(ErrorKind::Runtime, "custom_op(): an op named '", name, "' is already registered");
    uint64_t t = traits_of(traits) | kNonDifferentiable;
    auto k = std::make_shared<PyCallable>();
    k->fn = kernel;
    auto mf = std::make_shared<PyCallable>();
    mf->fn = meta;
    OpBuilder::make(name.c_str())
        .schema(schema.c_str())
        .traits(t)
        .meta([name, mf](const TensorList& in, const Attrs& a) {
      check_alive(name);
      nb::gil_scoped_acquire gil;
      nb::object r = call(name, mf, in, a);
      Device dev = Device();
      for (const Tensor& x : in)
        if (x.defined()) {
          dev = x.device();
          break;
        }
      std::vector<TensorMeta> out;
      for (const Tensor& o : tensors_of(name, r, "meta function")) out.push_back(TensorMeta{o.sizes(), o.dtype(), dev});
      return out;
    }).cpu([name, k](const TensorList& in, const Attrs& a) {
      check_alive(name);
      nb::gil_scoped_acquire gil;
      nb::object r = call(name, k, in, a);
      return tensors_of(name, r, "kernel");
    });
    return name;
  }, nb::arg("schema"), nb::arg("traits"), nb::arg("kernel"), nb::arg("meta"));
}

}  // namespace flow::py
